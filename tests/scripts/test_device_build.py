"""scripts/lib/rocm-arch.sh, the PYTORCH_ROCM_ARCH default of scripts/device-build.sh, with
made-up rocm_agent_enumerator programs (standard library only; ctest device_build_script)."""
import os
import shutil
import subprocess
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.path.join(REPO, "scripts", "lib", "rocm-arch.sh")


class RocmArch(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.rocm = os.path.join(self.tmp.name, "rocm")
        os.makedirs(os.path.join(self.rocm, "bin"))

    def tearDown(self):
        self.tmp.cleanup()

    def enumerator(self, body):
        path = os.path.join(self.rocm, "bin", "rocm_agent_enumerator")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        os.chmod(path, 0o755)

    def arch(self, **env):
        # A PATH of only the tools the function uses: the machine's own rocm_agent_enumerator
        # (Debian's rocminfo has one) stays out of it.
        tools = os.path.join(self.tmp.name, "tools")
        if not os.path.isdir(tools):
            os.makedirs(tools)
            for tool in ("grep", "sort", "paste"):
                os.symlink(shutil.which(tool), os.path.join(tools, tool))
        run_env = {"PATH": tools, "ROCM_PATH": self.rocm}
        run_env.update(env)
        p = subprocess.run([shutil.which("bash"), "-c", f'source "{LIB}"; ftbench_rocm_arch'],
                           env=run_env, capture_output=True, text=True, check=True)
        return p.stdout.strip(), p.stderr

    def test_the_listed_gpus_without_the_cpu_agent(self):
        self.enumerator("printf 'gfx000\\ngfx90a\\ngfx90a\\ngfx942\\n'")
        self.assertEqual(self.arch(), ("gfx90a;gfx942", ""))

    def test_only_the_cpu_agent_gives_the_default_with_a_message(self):
        self.enumerator("echo gfx000")
        arch, err = self.arch()
        self.assertEqual(arch, "gfx942")
        self.assertIn("building for gfx942", err)

    def test_a_failing_enumerator_gives_the_default(self):
        self.enumerator("echo 'cannot open /dev/kfd' >&2; exit 1")
        arch, err = self.arch()
        self.assertEqual(arch, "gfx942")
        self.assertIn("no GPU listed", err)

    def test_no_enumerator_gives_the_default(self):
        arch, err = self.arch()
        self.assertEqual(arch, "gfx942")
        self.assertIn("not found", err)

    def test_a_set_value_wins(self):
        self.enumerator("echo gfx90a")
        self.assertEqual(self.arch(PYTORCH_ROCM_ARCH="gfx1100"), ("gfx1100", ""))

    def test_device_build_uses_it_for_rocm(self):
        with open(os.path.join(REPO, "scripts", "device-build.sh")) as f:
            script = f.read()
        self.assertIn("source scripts/lib/rocm-arch.sh", script)
        self.assertIn("PYTORCH_ROCM_ARCH=$(ftbench_rocm_arch)", script)


if __name__ == "__main__":
    unittest.main()
