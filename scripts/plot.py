#!/usr/bin/env python3
"""Figures from an fzg sweep's CSV (fzg sweep, scripts/peers.py), and a slice view.

  python3 scripts/plot.py curves results.csv -o figures/
      rate-distortion (PSNR against bits per value, one panel per field, a line per config
      or peer), ratio against the error bound, and median throughput per config: each as
      PNG and SVG in the output folder.
  python3 scripts/plot.py slice FIELD -l DIMS [-t f32] -c CONFIG -m rel -e 1e-3 [--z K] -o slice.png
      one slice (z = K, the middle by default) of the original, fzg's reconstruction through
      CONFIG and their difference, original and reconstruction on one colour scale.
"""
import argparse
import collections
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np


def fail(message):
    sys.exit("plot.py: error: " + message)


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def read_sweep(path):
    if not os.path.isfile(path):
        fail("'%s' does not exist" % path)
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    needed = {"field", "config", "eb", "ratio", "bits_per_value", "psnr_db", "compress_gbps", "decompress_gbps"}
    if not rows or not needed <= set(rows[0]):
        fail("'%s' is not an fzg sweep's CSV with rows" % path)
    return rows


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return float("nan")


def save(fig, out, name):
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(out, name + "." + ext), dpi=150, bbox_inches="tight")
    print(os.path.join(out, name + ".{png,svg}"))


def curves(args):
    plt = pyplot()
    rows = read_sweep(args.sweep)
    os.makedirs(args.output, exist_ok=True)
    fields = sorted({r["field"] for r in rows})
    configs = sorted({r["config"] for r in rows})
    by = collections.defaultdict(list)
    for r in rows:
        by[(r["field"], r["config"])].append(r)
    style = {c: dict(marker="os^vD<>ph*"[i % 10], color="C%d" % (i % 10)) for i, c in enumerate(configs)}
    columns = min(3, len(fields))
    grid_rows = (len(fields) + columns - 1) // columns

    def panels(title, x_key, y_key, x_label, y_label, logx=False, logy=False, name=""):
        fig, axes = plt.subplots(grid_rows, columns, figsize=(4.2 * columns, 3.4 * grid_rows), squeeze=False)
        for k, field in enumerate(fields):
            ax = axes[k // columns][k % columns]
            for config in configs:
                points = sorted((number(r[x_key]), number(r[y_key])) for r in by[(field, config)])
                points = [p for p in points if np.isfinite(p[0]) and np.isfinite(p[1])]
                if points:
                    ax.plot(*zip(*points), label=config, **style[config])
            ax.set_title(os.path.basename(field), fontsize=9)
            ax.set_xlabel(x_label)
            ax.set_ylabel(y_label)
            if logx:
                ax.set_xscale("log")
            if logy:
                ax.set_yscale("log")
            ax.grid(alpha=0.3)
        for k in range(len(fields), grid_rows * columns):
            axes[k // columns][k % columns].axis("off")
        axes[0][0].legend(fontsize=8)
        fig.suptitle(title)
        fig.tight_layout()
        save(fig, args.output, name)
        plt.close(fig)

    panels("Rate-distortion", "bits_per_value", "psnr_db", "bits per value", "PSNR (dB)", name="rate_distortion")
    panels("Ratio against the error bound", "eb", "ratio", "error bound", "compression ratio", logx=True, logy=True,
           name="ratio_vs_bound")

    fig, ax = plt.subplots(figsize=(1.2 * len(configs) + 3, 3.4))
    width = 0.4
    for k, (key, label) in enumerate([("compress_gbps", "compress"), ("decompress_gbps", "decompress")]):
        medians = [statistics.median([number(r[key]) for r in rows if r["config"] == c] or [float("nan")])
                   for c in configs]
        ax.bar(np.arange(len(configs)) + (k - 0.5) * width, medians, width, label=label)
    ax.set_xticks(np.arange(len(configs)), configs)
    ax.set_ylabel("GB/s (median over runs, host to host)")
    ax.set_title("Throughput")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    save(fig, args.output, "throughput")
    plt.close(fig)


def slice_view(args):
    plt = pyplot()
    shape = [int(v) for v in args.dims.split("x")] if re.fullmatch(r"[0-9]+(x[0-9]+)*", args.dims or "") else None
    if not shape:
        fail("give the dimensions with -l, fastest first (e.g. 500x500x100)")
    numpy_type = {"f32": np.float32, "f64": np.float64}.get(args.type)
    if numpy_type is None:
        fail("type '%s' is not f32 or f64" % args.type)
    if not os.path.isfile(args.field):
        fail("'%s' does not exist" % args.field)
    if os.path.getsize(args.field) != int(np.prod(shape)) * np.dtype(numpy_type).itemsize:
        fail("'%s' does not hold %s %s" % (args.field, args.type, args.dims))
    with tempfile.TemporaryDirectory() as tmp:
        packed, restored = os.path.join(tmp, "f.fzg"), os.path.join(tmp, "f.out")
        command = [args.fzg, "compress", "-i", args.field, "-l", args.dims, "-t", args.type, "-m", args.mode,
                   "-e", args.error, "-o", packed] + (["-c", args.config] if args.config else [])
        for step in (command, [args.fzg, "decompress", "-i", packed, "-o", restored]):
            out = subprocess.run(step, capture_output=True, text=True)
            if out.returncode != 0:
                fail("fzg failed: " + out.stderr.strip())
        ratio = os.path.getsize(args.field) / os.path.getsize(packed)
        original = np.fromfile(args.field, dtype=numpy_type).reshape(list(reversed(shape)))
        reconstruction = np.fromfile(restored, dtype=numpy_type).reshape(original.shape)
    if original.ndim == 3:
        z = original.shape[0] // 2 if args.z is None else args.z
        if not 0 <= z < original.shape[0]:
            fail("--z %d is outside 0..%d" % (z, original.shape[0] - 1))
        a, b, where = original[z], reconstruction[z], "z = %d" % z
    elif original.ndim == 2:
        a, b, where = original, reconstruction, "2D"
    else:
        a, b, where = original[np.newaxis, :], reconstruction[np.newaxis, :], "1D"
    finite = np.isfinite(a)
    low, high = (float(a[finite].min()), float(a[finite].max())) if finite.any() else (0.0, 1.0)
    error = np.where(finite, b.astype(np.float64) - a.astype(np.float64), np.nan)
    reach = float(np.nanmax(np.abs(error))) if np.isfinite(error).any() else 0.0
    reach = reach or 1.0
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, data, title, kw in [(axes[0], a, "original", dict(vmin=low, vmax=high, cmap="viridis")),
                                (axes[1], b, "reconstruction (ratio %.2f)" % ratio,
                                 dict(vmin=low, vmax=high, cmap="viridis")),
                                (axes[2], error, "error", dict(vmin=-reach, vmax=reach, cmap="RdBu_r"))]:
        image = ax.imshow(data, origin="lower", aspect="auto", interpolation="nearest", **kw)
        ax.set_title(title)
        fig.colorbar(image, ax=ax)
    fig.suptitle("%s, %s, %s %s %s" % (os.path.basename(args.field), where, args.config or "fz (default)", args.mode,
                                         args.error))
    fig.tight_layout()
    fig.savefig(args.output, dpi=150, bbox_inches="tight")
    print(args.output)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("curves", help="rate-distortion, ratio and throughput figures from a sweep's CSV")
    c.add_argument("sweep")
    c.add_argument("-o", "--output", default="figures", help="folder for the PNG and SVG files")
    s = sub.add_parser("slice", help="original, reconstruction and error of one slice")
    s.add_argument("field")
    s.add_argument("-l", "--dims", required=True)
    s.add_argument("-t", "--type", default="f32")
    s.add_argument("-c", "--config", default="")
    s.add_argument("-m", "--mode", default="rel")
    s.add_argument("-e", "--error", default="1e-3")
    s.add_argument("--z", type=int, default=None, help="the slice of a 3D field (default: the middle)")
    s.add_argument("--fzg", default=os.path.join(here, "..", "build", "fzg"))
    s.add_argument("-o", "--output", default="slice.png")
    args = parser.parse_args()
    curves(args) if args.command == "curves" else slice_view(args)


if __name__ == "__main__":
    main()
