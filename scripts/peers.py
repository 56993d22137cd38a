#!/usr/bin/env python3
"""Peers in an fzg sweep: SZ3 (pysz, Lorenzo + regression) and ZFP (zfpy, fixed accuracy)
on the same fields at the same absolute bound, one row per (field, peer, bound) joined to
the CSV that `fzg sweep` wrote, with the same columns. The errors and similarity come from
`fzg compare`, the code that measured fzg's own rows; throughput is the peer's Python call
on this machine's CPU (host to host, median of --repeat).

  fzg sweep -i A_10x20x30.f32,B.f32 -l ... -c configs/fz.json -e 1e-2,1e-3 -o results.csv
  python3 scripts/peers.py -i A_10x20x30.f32,B.f32 -e 1e-2,1e-3 -o results.csv

A rel bound is resolved as fzg resolves it: rel x the finite values' range. Rows already in
the output are not run again; a peer whose package is missing is left out, with a note.
Dimensions and type come from -l/-t or from a name like field_500x500x100.f32 (fastest
first).
"""
import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def fail(message):
    sys.exit("peers.py: error: " + message)


def field_spec(path, dims, dtype):
    match = re.search(r"_([0-9]+(x[0-9]+)*)\.(f32|f64)$", path)
    if not dims:
        if not match:
            fail("no dimensions for '%s': give -l, or name it like field_500x500x100.f32" % path)
        dims = match.group(1)
    if not dtype:
        dtype = match.group(3) if match else "f32"
    if dtype not in ("f32", "f64"):
        fail("type '%s' is not f32 or f64" % dtype)
    shape = [int(v) for v in dims.split("x")]
    numpy_type = np.float32 if dtype == "f32" else np.float64
    if not os.path.isfile(path):
        fail("'%s' does not exist" % path)
    size = os.path.getsize(path)
    if size != int(np.prod(shape)) * np.dtype(numpy_type).itemsize:
        fail("'%s' holds %d bytes, not %s %s" % (path, size, dtype, dims))
    return dims, dtype, numpy_type, list(reversed(shape))  # numpy's shape: slowest first


def sz3(values, bound):
    import pysz
    config = pysz.szConfig()
    config.errorBoundMode = pysz.szErrorBoundMode.ABS
    config.absErrorBound = bound
    config.cmprAlgo = pysz.szAlgorithm.LORENZO_REG
    compressed, _ = pysz.sz.compress(values, config)
    return compressed, lambda: pysz.sz.decompress(compressed, values.dtype, values.shape)[0]


def zfp(values, bound):
    import zfpy
    compressed = zfpy.compress_numpy(values, tolerance=bound)
    return compressed, lambda: zfpy.decompress_numpy(compressed)


PEERS = {"sz3": (sz3, "pysz"), "zfp": (zfp, "zfpy")}


def available(name):
    try:
        __import__(PEERS[name][1])
        return True
    except ImportError:
        return False


def read_rows(path):
    if not os.path.isfile(path):
        fail("'%s' does not exist: run fzg sweep first, these rows join its output" % path)
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if not header or "field" not in header or "bound_held" not in header:
            fail("'%s' is not an fzg sweep's CSV output" % path)
        return header, [dict(zip(header, row)) for row in reader]


def write_rows(path, header, rows):
    # Beside, then renamed over: an interrupted run never leaves half a file.
    directory = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile("w", newline="", dir=directory, delete=False, suffix=".part") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        for row in rows:
            writer.writerow([row.get(c, "") for c in header])
        name = f.name
    os.replace(name, path)


def cell(value):
    if isinstance(value, float):
        return repr(value)
    return str(value)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-i", "--input", required=True, help="raw fields, comma-separated")
    parser.add_argument("-l", "--dims", default="", help="dimensions of every input, fastest first")
    parser.add_argument("-t", "--type", default="", help="f32 or f64 for every input")
    parser.add_argument("-m", "--mode", default="rel", choices=["rel", "abs"])
    parser.add_argument("-e", "--error", default="1e-2,1e-3,1e-4", help="error bounds, comma-separated")
    parser.add_argument("--peers", default="sz3,zfp", help="of: " + ", ".join(PEERS))
    parser.add_argument("--repeat", type=int, default=1, help="timed repeats per run (median)")
    parser.add_argument("--fzg", default=os.path.join(here, "..", "build", "fzg"))
    parser.add_argument("-o", "--output", required=True, help="an fzg sweep's CSV")
    args = parser.parse_args()

    peers = [p for p in args.peers.split(",") if p]
    for p in peers:
        if p not in PEERS:
            fail("unknown peer '%s' (expected %s)" % (p, ", ".join(PEERS)))
    try:
        bounds = [float(b) for b in args.error.split(",") if b]
    except ValueError:
        fail("bad error bound in '%s'" % args.error)
    if not bounds or any(not (b > 0) for b in bounds) or (args.mode == "rel" and any(b >= 1 for b in bounds)):
        fail("error bounds are positive (and below 1 in rel mode)")
    fields = [(path,) + field_spec(path, args.dims, args.type) for path in args.input.split(",") if path]
    if not os.access(args.fzg, os.X_OK):
        fail("no fzg at '%s' (--fzg)" % args.fzg)
    header, rows = read_rows(args.output)
    missing = [p for p in peers if not available(p)]
    for p in missing:
        print("peers.py: %s left out: the Python package '%s' is not installed (pip install %s)"
              % (p, PEERS[p][1], PEERS[p][1]), file=sys.stderr)
    peers = [p for p in peers if p not in missing]
    done = {(r["field"], r["config"], r["mode"], float(r["eb"])) for r in rows if r.get("eb")}

    with tempfile.TemporaryDirectory() as tmp:
        for path, dims, dtype, numpy_type, shape in fields:
            values = np.fromfile(path, dtype=numpy_type).reshape(shape)
            finite = values[np.isfinite(values)]
            value_range = float(finite.max() - finite.min()) if finite.size else 0.0
            for peer in peers:
                for eb in bounds:
                    if (path, peer, args.mode, eb) in done:
                        continue
                    absolute = eb * value_range if args.mode == "rel" else eb
                    if not absolute > 0:
                        print("peers.py: %s left out of %s: a constant field has no rel bound" % (peer, path),
                              file=sys.stderr)
                        continue
                    code = PEERS[peer][0]
                    compress_s, decompress_s = [], []
                    for _ in range(max(1, args.repeat)):
                        start = time.perf_counter()
                        compressed, decompress = code(values, absolute)
                        compress_s.append(time.perf_counter() - start)
                        start = time.perf_counter()
                        restored = np.ascontiguousarray(decompress(), dtype=numpy_type)
                        decompress_s.append(time.perf_counter() - start)
                    restored_path = os.path.join(tmp, "restored")
                    restored.tofile(restored_path)
                    out = subprocess.run([args.fzg, "compare", "-i", path, "-l", dims, "-t", dtype, "-r", restored_path,
                                          "--bound", repr(absolute)], capture_output=True, text=True)
                    if out.returncode not in (0, 3):
                        fail("fzg compare failed on %s: %s" % (path, out.stderr.strip()))
                    metrics = json.loads(out.stdout)
                    size = len(compressed)
                    row = {"field": path, "config": peer, "device": "cpu", "mode": args.mode, "eb": cell(eb),
                           "dims": dims, "dtype": dtype, "absolute_bound": cell(absolute),
                           "ratio": cell(values.nbytes / size), "bits_per_value": cell(8.0 * size / values.size),
                           "compress_gbps": cell(values.nbytes / statistics.median(compress_s) / 1e9),
                           "decompress_gbps": cell(values.nbytes / statistics.median(decompress_s) / 1e9),
                           "bound_held": "yes" if metrics["violations"] == 0 else "no",
                           "original_bytes": str(values.nbytes), "compressed_bytes": str(size)}
                    for key in ("psnr_db", "nrmse", "ssim", "pearson", "error_autocorrelation", "max_abs_error",
                                "max_rel_error", "violations"):
                        row[key] = cell(metrics[key])
                    rows.append(row)
                    write_rows(args.output, header, rows)
                    print("peers.py: %s, %s, %s %g: ratio %.3f, PSNR %.2f dB, bound %s"
                          % (path, peer, args.mode, eb, values.nbytes / size, metrics["psnr_db"], row["bound_held"]),
                          file=sys.stderr)


if __name__ == "__main__":
    main()
