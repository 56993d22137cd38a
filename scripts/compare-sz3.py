#!/usr/bin/env python3
"""fzg's ratio beside SZ3's (pysz from PyPI, Lorenzo + regression, as SZ3's default Lorenzo
path) at the same absolute bound: rel x the finite value range, which is what fzg's rel mode
resolves to. Prints one row per field and bound, one column per config.

  python3 scripts/compare-sz3.py [--fzg build/fzg] [--rel 1e-2,1e-3,1e-4]
                                 [--configs configs/fz.json,configs/ratio.json]
                                 FIELD.f32:DIMS [...]        (DIMS fastest first, e.g. 49x37x240)

With no fields, the real fields of ../shared/datasets that have no fill values.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import sz3  # noqa: E402


def sz3_ratio(values, abs_bound):
    compressed, _ = sz3(values, abs_bound)  # peers.py's SZ3: the same settings as a sweep's rows
    return values.nbytes / len(compressed)


def fzg_ratio(fzg, path, dims, rel, config):
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([fzg, "compress", "-i", path, "-t", "f32", "-l", dims, "-m", "rel", "-e", rel, "-c", config,
                              "-o", os.path.join(tmp, "f.fzg")], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("compare-sz3.py: fzg failed on %s: %s" % (path, out.stderr.strip()))
    return float(re.search(r"ratio ([0-9.]+)", out.stdout + out.stderr).group(1))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fzg", default=os.path.join(here, "..", "build", "fzg"))
    parser.add_argument("--rel", default="1e-2,1e-3,1e-4")
    parser.add_argument("--configs", default="configs/fz.json,configs/cusz.json,configs/ratio.json")
    parser.add_argument("fields", nargs="*")
    args = parser.parse_args()
    fields = args.fields
    if not fields:
        shared = os.path.join(here, "..", "..", "shared", "datasets")
        fields = [os.path.join(shared, f + ".f32:" + d) for f, d in
                  [("airtemp-a1b_49x37x240", "49x37x240"), ("theta-hybrid_100x100x15", "100x100x15"),
                   ("uwnd-ncep_144x73x12", "144x73x12")]]
    configs = args.configs.split(",")
    names = [os.path.basename(c)[:-5] for c in configs]
    print("%-28s %-6s %7s " % ("field", "rel", "SZ3") + " ".join("%16s" % n for n in names) + "   (ratio, x SZ3)")
    for spec in fields:
        path, dims = spec.rsplit(":", 1)
        shape = [int(v) for v in dims.split("x")]
        values = np.fromfile(path, dtype=np.float32).reshape(list(reversed(shape)))
        finite = values[np.isfinite(values)]
        for rel in args.rel.split(","):
            sz3 = sz3_ratio(values, float(rel) * float(finite.max() - finite.min()))
            cells = [fzg_ratio(args.fzg, path, dims, rel, c) for c in configs]
            print("%-28s %-6s %7.2f " % (os.path.basename(path)[:28], rel, sz3) +
                  " ".join("%9.2f (%.2f)" % (r, r / sz3) for r in cells))


if __name__ == "__main__":
    main()
