#!/usr/bin/env python3
"""Writes a synthetic SkyPilot catalog CSV (catalogs/v8/<cloud>/vms.csv format) of a given size.

The shape follows the real files: most rows are CPU instances (no accelerator), every instance
type is listed once per region and availability zone, GPU rows carry a quoted GpuInfo dictionary,
and GCP-style rows price a GPU without its host (empty InstanceType) beside the host VMs
(a3-highgpu-8g, n1-standard-8). Prices are made up but deterministic (seeded), so two runs of the
same size give the same file. Nothing is downloaded.

Usage: skypilot_csv_gen.py OUT.csv [ROWS] [MIX]   (ROWS default 531000; MIX "cpu" (default): GPU
rows are 48,000 and CPU rows the rest, 41 MB; "gpu": every row a GPU row, 3,300 instance types,
96 MB)
"""
import random
import sys

HEADER = ("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,"
          "Region,AvailabilityZone\n")

# (accelerator, GpuInfo name, memory MiB, instance type pattern, counts, USD per GPU-hour)
GPUS = [
    ("H100", "H100", 81920, "p5.{n}xlarge", (1, 8), 6.88),
    ("H100", "H100 PCIe", 81920, "gpu_{n}x_h100_pcie", (1, 2, 4, 8), 2.49),
    ("H100-NVL", "H100 NVL", 95830, "nvl.{n}x", (1, 2), 3.10),
    ("H200", "H200", 143771, "p5e.{n}xlarge", (8,), 5.10),
    ("A100-80GB", "A100-80GB", 81920, "p4de.{n}xlarge", (8,), 5.12),
    ("A100-80GB", "A100 PCIe", 81920, "{n}x_A100-80GB_SECURE", (1, 2, 4, 8), 1.39),
    ("A100", "A100", 40960, "p4d.{n}xlarge", (8,), 4.10),
    ("L40S", "L40S", 46068, "g6e.{n}xlarge", (1, 4, 8), 1.86),
    ("L4", "L4", 23034, "g6.{n}xlarge", (1, 4, 8), 0.80),
    ("A10G", "A10G", 23028, "g5.{n}xlarge", (1, 4, 8), 1.01),
    ("T4", "T4", 15360, "g4dn.{n}xlarge", (1, 4, 8), 0.53),
    ("MI300X", "MI300X", 196608, "mi300x.{n}x", (1, 8), 2.39),
    ("B200", "B200", 184320, "b200.{n}x", (8,), 6.25),
]


def gpu_info(name, count, mib):
    return ('"{\'Gpus\': [{\'Name\': \'%s\', \'Manufacturer\': \'NVIDIA\', \'Count\': %d.0, '
            '\'MemoryInfo\': {\'SizeInMiB\': %d}}], \'TotalGpuMemoryInMiB\': %d}"'
            % (name, count, mib, mib * count))


def main():
    out = sys.argv[1]
    rows_wanted = int(sys.argv[2]) if len(sys.argv) > 2 else 531000
    mix = sys.argv[3] if len(sys.argv) > 3 else "cpu"
    variants = 10 if mix == "cpu" else (rows_wanted // (40 * 4 * 30)) + 1
    rng = random.Random(39)
    regions = ["region-%02d" % r for r in range(40)]
    zones = "abcd"
    rows = 0
    with open(out, "w", encoding="utf-8", newline="") as f:
        f.write(HEADER)
        # GPU instances: each type in every region and zone (48,000 rows).
        gpu_types = []
        for accel, info, mib, pattern, counts, usd in GPUS:
            for n in counts:
                for variant in range(variants):  # sizes of one family: more host, same GPUs
                    gpu_types.append((variant, pattern.format(n=n) +
                                      ("" if variant == 0 else "-v%d" % variant),
                                      accel, info, mib, n, usd * (1 + 0.1 * (variant % 10))))
        gpu_types.sort(key=lambda t: t[0])  # every family before the next size of any
        gpu_types = [t[1:] for t in gpu_types]
        for itype, accel, info, mib, n, usd in gpu_types:
            if rows >= rows_wanted:
                break
            for region in regions:
                price = round(usd * n * rng.uniform(0.9, 1.3), 5)
                for zone in zones:
                    spot = round(price * rng.uniform(0.2, 0.6), 5)
                    f.write("%s,%s,%d.0,%d.0,%d.0,%s,%s,%s,%s,%s-%s\n" %
                            (itype, accel, n, 12 * n, 96 * n, gpu_info(info, n, mib), price, spot,
                             region, region, zone))
                    rows += 1
        # GCP-style rows: the GPU's attach price alone, and its host VM, per zone.
        for region in regions:
            for zone in zones:
                z = "%s-%s" % (region, zone)
                f.write(",H100,8,,,\"{'Gpus': [{'MemoryInfo': {'SizeInMiB': 81920}}]}\",33.60609,"
                        "23.9408,%s,%s\n" % (region, z))
                f.write(",T4,1,,,\"{'Gpus': [{'MemoryInfo': {'SizeInMiB': 15360}}]}\",0.35,0.14,%s,%s\n"
                        % (region, z))
                f.write("a3-highgpu-8g,,,208.0,1872.0,,9.46006,2.88933,%s,%s\n" % (region, z))
                f.write("n1-standard-8,,,8.0,30.0,,0.37995,0.07600,%s,%s\n" % (region, z))
                rows += 4
        # CPU instances fill the rest, as in the real files.
        family = 0
        while rows < rows_wanted:
            vcpus = 2 ** (family % 8)
            itype = "c%d.%dxlarge" % (family // 8, vcpus)
            for region in regions:
                price = round(0.048 * vcpus * rng.uniform(0.9, 1.4), 5)
                for zone in zones:
                    if rows >= rows_wanted:
                        break
                    f.write("%s,,,%d.0,%d.0,,%s,%s,%s,%s-%s\n" %
                            (itype, vcpus, 4 * vcpus, price, round(price * 0.3, 5), region, region,
                             zone))
                    rows += 1
            family += 1
    print("%s: %d rows" % (out, rows))


if __name__ == "__main__":
    main()
