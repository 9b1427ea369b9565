#!/usr/bin/python3
"""numpy baseline of signature_vs_numpy: the metrics DESIGN.md §9 names
(max |c-g|, max relative error, allclose failure count, NaN counts in both,
relative-error histogram by binary exponent) on two f32 arrays of the size
the C++ benchmark uses, generated the same way. Prints one JSON object with
the best time in seconds over the repetitions.

  numpy_metrics.py ELEMENTS [REPEATS]
"""
import json
import sys
import time

import numpy as np


def block_metrics(g, c, rtol, atol):
    e = np.abs(c.astype(np.float64) - g.astype(np.float64))
    ag = np.abs(g.astype(np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = e / ag
    finite = np.isfinite(e)
    max_abs = np.max(e[finite]) if finite.any() else 0.0
    relf = rel[np.isfinite(rel)]
    max_rel = np.max(relf) if relf.size else 0.0
    fails = np.count_nonzero(~np.isclose(c, g, rtol=rtol, atol=atol, equal_nan=True))
    nan_g = np.count_nonzero(np.isnan(g))
    nan_c = np.count_nonzero(np.isnan(c))
    positive = relf[relf > 0]
    _, exponents = np.frexp(positive)
    hist = np.bincount(np.clip(exponents - 1 + 64, 0, 65).astype(np.int64), minlength=66)
    return max_abs, max_rel, fails, nan_g, nan_c, hist


def metrics(g, c, rtol, atol, block=1 << 22):
    """The metrics over blocks of `block` elements (bounded temporaries: the
    whole-array version needs ~9 bytes of float64 temporaries per element)."""
    max_abs = max_rel = 0.0
    fails = nan_g = nan_c = 0
    hist = np.zeros(66, dtype=np.int64)
    for start in range(0, g.size, block):
        r = block_metrics(g[start:start + block], c[start:start + block], rtol, atol)
        max_abs = max(max_abs, r[0])
        max_rel = max(max_rel, r[1])
        fails += r[2]
        nan_g += r[3]
        nan_c += r[4]
        hist += r[5]
    return max_abs, max_rel, fails, nan_g, nan_c, hist


def main():
    n = int(sys.argv[1])
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    rng = np.random.default_rng(1)
    g = rng.standard_normal(n, dtype=np.float32)
    ulps = rng.uniform(-4, 4, n).astype(np.float32)
    c = (g + ulps * np.ldexp(np.abs(g), -23).astype(np.float32)).astype(np.float32)
    del ulps
    c[7::1 << 20] = np.nan
    c[9::1 << 20] = 0
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = metrics(g, c, 1.3e-6, 1e-5)
        best = min(best, time.perf_counter() - t0)
    print(json.dumps({"seconds": best, "elements": n, "fails": int(result[2]), "max_abs": float(result[0])}))


if __name__ == "__main__":
    main()
