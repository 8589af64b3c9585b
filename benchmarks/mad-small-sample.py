#!/usr/bin/env python3
"""The small-sample factors of the gate's spread (src/analysis/compare/gate.cpp, mad_small_sample_factor), and how
often the gate trips on noise alone. Monte Carlo over normal samples, seeded, NumPy only.

1.4826 x MAD estimates a normal sigma only for large samples: for n = 3 its mean is well below
sigma. The factor c_n makes c_n x 1.4826 x MAD mean-unbiased for normal data of n values
(Croux and Rousseeuw's b_n, computed here rather than copied; for n > 20 the gate uses their
n / (n - 0.8)).

Then, for a figure that varies by `sigma` from run to run and no regression at all, the share of
new runs beyond the limit max(amount, 3 x spread) above the baseline's median.

Usage: /usr/bin/python3 benchmarks/mad-small-sample.py
"""
import numpy as np

rng = np.random.default_rng(20261205)
TRIALS = 400_000

print("n  c_n (mean-unbiased)")
factors = {}
for n in range(3, 21):
    x = rng.standard_normal((TRIALS, n))
    med = np.median(x, axis=1, keepdims=True)
    mad = np.median(np.abs(x - med), axis=1)
    factors[n] = 1.0 / np.mean(1.4826 * mad)
    print(f"{n:2d} {factors[n]:.3f}")

print("\nfalse alarms: a figure with run-to-run sigma 8 %, rule +5 %, 3 x spread, no regression")
for n in (3, 5, 9):
    for corrected in (False, True):
        x = 1.0 + 0.08 * rng.standard_normal((TRIALS, n))
        med = np.median(x, axis=1)
        spread = 1.4826 * np.median(np.abs(x - med[:, None]), axis=1)
        if corrected:
            spread *= factors[n]
        limit = med + np.maximum(0.05 * med, 3.0 * spread)
        new = 1.0 + 0.08 * rng.standard_normal(TRIALS)
        print(f"  {n} reports, {'with' if corrected else 'without'} c_n: "
              f"{100.0 * np.mean(new > limit):.1f} % of runs fail")
    x = 1.0 + 0.08 * rng.standard_normal((TRIALS, n))
    new = 1.0 + 0.08 * rng.standard_normal(TRIALS)
    held = np.mean(new > np.median(x, axis=1) * 1.05)
    print(f"  {n} reports, the rule's 5 % alone (no spread): {100.0 * held:.1f} % of runs fail")
