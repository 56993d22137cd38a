#!/usr/bin/env python3
"""fzg's ratio beside SZ3's (pysz from PyPI, Lorenzo + regression, as SZ3's default Lorenzo
path) at the same absolute bound: rel x the finite value range, which is what fzg's rel mode
resolves to. Prints one row per field and bound, one column per config.

  python3 scripts/compare-sz3.py [--fzg build/fzg] [--rel 1e-2,1e-3,1e-4]
                                 [--configs configs/fz.json,configs/ratio.json]
                                 [--speed [--repeat 5]] [--all]
                                 FIELD.f32:DIMS[:FILL] [...]  (DIMS fastest first, e.g. 49x37x240)

A field with a fill value (FILL: a number or nan) is compared as issue #19 asks: the bound is
rel x the range of the points that are not the fill value, fzg is told the fill value
(--fill), and SZ3 gets the field as it is (it has no notion of missing points). With no
fields, the real fields of ../shared/datasets that have no fill values; with --all, the ones
with fill values too (from datasets.json). With --speed,
each cell also gives compress / decompress MB/s of f32 input on one CPU core (OMP_NUM_THREADS=1
for fzg's and SZ3's processes alike; fzg's from `fzg bench --device cpu`, the library call
alone; SZ3's around pysz's compress and decompress calls; median of --repeat).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import sz3  # noqa: E402
from shared_datasets import shared_fields  # noqa: E402


def sz3_ratio(values, abs_bound):
    compressed, _ = sz3(values, abs_bound)  # peers.py's SZ3: the same settings as a sweep's rows
    return values.nbytes / len(compressed)


def sz3_speed(values, abs_bound, repeat):
    """SZ3's compress and decompress MB/s (median of `repeat`); this process runs on one core."""
    compress, decompress = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        _, decode = sz3(values, abs_bound)
        compress.append(time.perf_counter() - start)
        start = time.perf_counter()
        decode()
        decompress.append(time.perf_counter() - start)
    return values.nbytes / statistics.median(compress) / 1e6, values.nbytes / statistics.median(decompress) / 1e6


def fzg_speed(fzg, path, dims, rel, config, repeat):
    """fzg's library calls on the CPU, one thread: compress and decompress MB/s (median)."""
    out = subprocess.run([fzg, "bench", "--device", "cpu", "-i", path, "-t", "f32", "-l", dims, "-m", "rel", "-e", rel,
                          "-c", config, "--repeat", str(repeat), "--warmup", "1", "--json"], capture_output=True,
                         text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    if out.returncode != 0:
        sys.exit("compare-sz3.py: fzg bench failed on %s: %s" % (path, out.stderr.strip()))
    row = json.loads(out.stdout)[0]
    return row["kernel_compress_gbps"] * 1e3, row["kernel_decompress_gbps"] * 1e3


def fzg_ratio(fzg, path, dims, rel, config, fill=None):
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([fzg, "compress", "-i", path, "-t", "f32", "-l", dims, "-m", "rel", "-e", rel, "-c", config,
                              "-o", os.path.join(tmp, "f.fzg")] + ([] if fill is None else ["--fill", fill]),
                             capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("compare-sz3.py: fzg failed on %s: %s" % (path, out.stderr.strip()))
    return float(re.search(r"ratio ([0-9.]+)", out.stdout + out.stderr).group(1))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fzg", default=os.path.join(here, "..", "build", "fzg"))
    parser.add_argument("--rel", default="1e-2,1e-3,1e-4")
    parser.add_argument("--configs", default="configs/fz.json,configs/cusz.json,configs/ratio.json")
    parser.add_argument("--speed", action="store_true", help="also MB/s on one CPU core, compress / decompress")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per cell with --speed (median)")
    parser.add_argument("--all", action="store_true", help="with no fields: the fields with fill values too")
    parser.add_argument("fields", nargs="*")
    args = parser.parse_args()
    if args.speed and os.environ.get("OMP_NUM_THREADS") != "1":
        # SZ3 runs in this process: its OpenMP (if built with it) must see one thread from the start.
        os.execve(sys.executable, [sys.executable] + sys.argv, dict(os.environ, OMP_NUM_THREADS="1"))
    fields = args.fields
    if not fields:
        fields = [path + ":" + "x".join(map(str, dims)) + "".join(":" + repr(f) for f in fills)
                  for path, dims, fills in shared_fields() if not fills or args.all]
    configs = args.configs.split(",")
    names = [os.path.basename(c)[:-5] for c in configs]
    print("%-28s %-6s %7s " % ("field", "rel", "SZ3") + " ".join("%16s" % n for n in names) + "   (ratio, x SZ3)")
    if args.speed:
        print("%-35s %16s " % ("", "SZ3 MB/s c / d") + " ".join("%16s" % (n + " c / d") for n in names) +
              "   (one core)")
    for spec in fields:
        parts = spec.split(":")
        if len(parts) < 2 or len(parts) > 3:
            sys.exit("compare-sz3.py: a field is FIELD.f32:DIMS[:FILL], not " + spec)
        path, dims, fill = parts[0], parts[1], parts[2] if len(parts) == 3 else None
        shape = [int(v) for v in dims.split("x")]
        values = np.fromfile(path, dtype=np.float32).reshape(list(reversed(shape)))
        valid = np.isfinite(values)
        if fill is not None:  # a fill value is missing, bit for bit in f32 (nan: every NaN here)
            valid &= ~np.isnan(values) if fill.lower() == "nan" else values != np.float32(float(fill))
        finite = values[valid]
        for rel in args.rel.split(","):
            sz3 = sz3_ratio(values, float(rel) * float(finite.max() - finite.min()))
            cells = [fzg_ratio(args.fzg, path, dims, rel, c, fill) for c in configs]
            print("%-28s %-6s %7.2f " % (os.path.basename(path)[:28], rel, sz3) +
                  " ".join("%9.2f (%.2f)" % (r, r / sz3) for r in cells))
            if args.speed:
                bound = float(rel) * float(finite.max() - finite.min())
                speeds = [sz3_speed(values, bound, args.repeat)] + \
                         [fzg_speed(args.fzg, path, dims, rel, c, args.repeat) for c in configs]
                print("%-35s " % "" + " ".join("%16s" % ("%.0f / %.0f" % s) for s in speeds))


if __name__ == "__main__":
    main()
