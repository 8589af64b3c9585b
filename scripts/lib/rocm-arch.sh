# Sourced by scripts/device-build.sh: ftbench_rocm_arch prints the PYTORCH_ROCM_ARCH to build
# with. A ROCm LibTorch's CMake files need it when they cannot ask a visible GPU, and configuring
# fails without it. Order: PYTORCH_ROCM_ARCH when set; the GPUs rocm_agent_enumerator lists
# (ROCM_PATH/bin, /opt/rocm/bin or PATH; gfx000 is the CPU agent and is left out), joined by ';';
# else gfx942 (MI300X/MI325X), said on stderr. Tested by tests/scripts/test_device_build.py.
ftbench_rocm_arch() {
  if [[ -n "${PYTORCH_ROCM_ARCH:-}" ]]; then
    echo "$PYTORCH_ROCM_ARCH"
    return 0
  fi
  local enumerator="" candidate archs=""
  for candidate in "${ROCM_PATH:-/opt/rocm}/bin/rocm_agent_enumerator" \
    "$(command -v rocm_agent_enumerator 2>/dev/null || true)"; do
    if [[ -n "$candidate" && -x "$candidate" ]]; then
      enumerator=$candidate
      break
    fi
  done
  if [[ -n "$enumerator" ]]; then
    archs=$("$enumerator" 2>/dev/null | grep -E '^gfx[0-9a-f]+$' | grep -vx gfx000 | sort -u |
      paste -sd ';' || true)
  fi
  if [[ -n "$archs" ]]; then
    echo "$archs"
  else
    echo "PYTORCH_ROCM_ARCH: no GPU listed by ${enumerator:-rocm_agent_enumerator (not found)};" \
      "building for gfx942 (set PYTORCH_ROCM_ARCH for another)" >&2
    echo gfx942
  fi
}
