#!/usr/bin/env python3
"""One-byte mutants of a SentencePiece .model file through `ftbench tokenize` (docs/fuzzing.md,
"SentencePiece mutation sweep"; issue 39).

Each mutant is the model with one byte replaced, written to a scratch folder, then tokenized:
`ftbench tokenize --tokenizer MUTANT --file TEXT`. Prints the count of each exit status (a
negative one is the signal that killed it: -11 is SIGSEGV, exit 139 in a shell) and the mutants
killed by a signal, which are kept in the folder; the others are removed.

  scripts/spm-mutation-sweep.py --ftbench build/src/ftbench --model m.model --text t.txt \\
      (--random N [--seed S] | --every-byte) [--work DIR] [--jobs J]

--random N: N mutants at random positions (seeded: the same N and seed give the same mutants),
in turn a random byte, one bit flipped, 0xFF and 0x00 (a value equal to the old byte is
flipped in its top bit instead). --every-byte: every position with 0x00, 0xFF and the old byte
with its top or its lowest bit flipped (those that differ from it). Standard library only.
"""
import argparse
import collections
import concurrent.futures
import os
import random
import subprocess
import sys
import tempfile


def random_mutants(data, count, seed):
    rng = random.Random(seed)
    mutants = []
    for i in range(count):
        pos = rng.randrange(len(data))
        old = data[pos]
        kind = i % 4
        if kind == 0:
            new = rng.randrange(256)
        elif kind == 1:
            new = old ^ (1 << rng.randrange(8))
        else:
            new = 0xFF if kind == 2 else 0x00
        if new == old:
            new = old ^ 0x80
        mutants.append((pos, new))
    return mutants


def every_byte_mutants(data):
    return [(pos, new) for pos in range(len(data))
            for new in sorted({0x00, 0xFF, data[pos] ^ 0x80, data[pos] ^ 0x01} - {data[pos]})]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ftbench", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--text", required=True, help="file of text to tokenize")
    parser.add_argument("--random", type=int, metavar="N")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--every-byte", action="store_true")
    parser.add_argument("--work", help="scratch folder (default: a new one under /tmp)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    if (args.random is None) == (not args.every_byte):
        parser.error("give --random N or --every-byte")
    with open(args.model, "rb") as f:
        data = f.read()
    mutants = (every_byte_mutants(data) if args.every_byte
               else random_mutants(data, args.random, args.seed))
    work = args.work or tempfile.mkdtemp(prefix="ftbench-spm-sweep.")
    os.makedirs(work, exist_ok=True)

    def run(mutant):
        pos, new = mutant
        path = os.path.join(work, f"byte{pos}-{new:02x}.model")
        changed = bytearray(data)
        changed[pos] = new
        with open(path, "wb") as f:
            f.write(changed)
        status = subprocess.run(
            [args.ftbench, "tokenize", "--tokenizer", path, "--file", args.text],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120).returncode
        if status >= 0:
            os.remove(path)
        return pos, new, status

    counts = collections.Counter()
    killed = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for pos, new, status in pool.map(run, mutants):
            counts[status] += 1
            if status < 0:
                killed.append((pos, new, status))
    print(f"{len(mutants)} mutants of {args.model} ({len(data)} bytes); exit statuses: "
          + ", ".join(f"{status}: {n}" for status, n in sorted(counts.items())))
    for pos, new, status in killed:
        print(f"signal {-status}: byte {pos} set to 0x{new:02x} "
              f"({os.path.join(work, f'byte{pos}-{new:02x}.model')})")
    return 1 if killed else 0


if __name__ == "__main__":
    sys.exit(main())
