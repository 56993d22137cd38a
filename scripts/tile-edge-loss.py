#!/usr/bin/env python3
"""What fzg's tile-local Lorenzo prediction costs against whole-field prediction, and what
fill points cost in the code stream, measured as the zero-order entropy of the codes (the
size a Huffman code of them approaches; headers, codebooks and the outliers aside).

fzg predicts inside tiles (1D 2048, 2D 32x32, 3D 32x8x8; neighbours outside a tile count as
0), so every tile encodes and decodes on its own. SZ3 predicts across the whole field. This
script rebuilds the dual-quantization codes both ways (q = rint(x / (2 eb)), eb = rel x the
valid points' range) and prints the entropy of each, for the tile shapes fzg could use:

  python3 scripts/tile-edge-loss.py FIELD.f32:DIMS [...] [--rel 1e-2,1e-3,1e-4] [--fill 1e20]
                                                               (DIMS fastest first: 49x37x240)

With no fields, the real fields of ../shared/datasets (with their fill values). Columns:
entropy of the whole-field codes (bytes), then each tile shape's excess over it (%), then,
where the field has fill values, the share of the tiled codes' entropy spent on fill points
(their codes are the centre code, which costs at least a bit in a Huffman code)."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shared_datasets import shared_fields  # noqa: E402

TILES = {1: [(2048,)], 2: [(32, 32), (64, 64)], 3: [(32, 8, 8), (32, 16, 16), (64, 16, 16)]}


def entropy_bytes(values):
    _, counts = np.unique(values, return_counts=True)
    p = counts / counts.sum()
    return float(-(counts * np.log2(p)).sum() / 8)


def lorenzo(q):
    """First-order Lorenzo residuals of q (C order, any rank), zeros outside."""
    padded = np.pad(q, [(1, 0)] * q.ndim)
    pred = np.zeros_like(q)
    rank = q.ndim
    for corner in range(1, 1 << rank):  # every neighbour with a sign (-1)^(bits + 1)
        sl = tuple(slice(0, -1) if corner >> (rank - 1 - a) & 1 else slice(1, None) for a in range(rank))
        pred += padded[sl] * (1 if bin(corner).count("1") % 2 else -1)
    return q - pred


def tiled_lorenzo(q, tile):
    """Lorenzo inside tiles of `tile` (fastest first), as fzg codes them."""
    out = np.empty_like(q)
    shape = tile[::-1]  # C order
    for index in np.ndindex(*[(n + t - 1) // t for n, t in zip(q.shape, shape)]):
        sl = tuple(slice(i * t, (i + 1) * t) for i, t in zip(index, shape))
        out[sl] = lorenzo(q[sl])
    return out


def fill_quanta(q, missing):
    """fzg's q for missing points, approximately: the nearest valid point before it in its row
    (fzg takes the nearest in its 32-point segment, before or after)."""
    q = q.copy()
    idx = np.where(missing, 0, np.arange(q.shape[-1]))
    np.maximum.accumulate(idx, axis=-1, out=idx)
    filled = np.take_along_axis(q, idx, axis=-1)
    first_valid = np.take_along_axis(~missing, idx, axis=-1)
    filled[~first_valid] = np.median(q[~missing]) if (~missing).any() else 0
    return np.where(missing, filled, q)


def measure(path, dims, rels, fills, dtype):
    values = np.fromfile(path, dtype=dtype).reshape(dims[::-1]).astype(np.float64)
    missing = np.zeros(values.shape, bool)
    for f in fills:
        missing |= np.isnan(values) if np.isnan(f) else values == np.asarray(f, dtype)
    valid = values[~missing & np.isfinite(values)]
    span = float(valid.max() - valid.min()) if valid.size else 0.0
    rows = []
    for rel in rels:
        step = 2 * rel * span if span > 0 else 1.0
        q = np.rint(np.where(np.isfinite(values), values, 0) / step)
        if missing.any():
            q = fill_quanta(q, missing)
        whole = entropy_bytes(lorenzo(q))
        cells = []
        for tile in TILES[len(dims)]:
            codes = tiled_lorenzo(q, tile)
            size = entropy_bytes(codes)
            # With fill values: how much of it leaving the fill points' codes out would save.
            fill_share = (size - entropy_bytes(codes[~missing])) / size if missing.any() else None
            cells.append((tile, size, fill_share))
        rows.append((rel, whole, cells, values.size * np.dtype(dtype).itemsize))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fields", nargs="*", help="FIELD:DIMS, dims fastest first")
    parser.add_argument("--rel", default="1e-2,1e-3,1e-4")
    parser.add_argument("--fill", action="append", default=None, help="a fill value (repeatable)")
    parser.add_argument("-t", "--type", default="f32", choices=["f32", "f64"])
    args = parser.parse_args()
    rels = [float(r) for r in args.rel.split(",")]
    dtype = np.float32 if args.type == "f32" else np.float64
    fields = []
    for spec in args.fields:
        path, _, dims = spec.rpartition(":")
        fields.append((path, [int(d) for d in dims.split("x")], [float(f) for f in args.fill or []]))
    if not fields:
        fields = list(shared_fields())
    if not fields:
        sys.exit("tile-edge-loss.py: no fields (name FIELD:DIMS, or keep ../shared/datasets beside the repository)")
    print(f"{'field':30} {'rel':>6} {'whole B':>9}  tiles: excess over whole-field (fill points' share)")
    for path, dims, fills in fields:
        for rel, whole, cells, nbytes in measure(path, dims, rels, fills, dtype):
            text = "  ".join(f"{'x'.join(map(str, t))} {100 * (size / whole - 1):+5.1f}%"
                             + (f" ({100 * share:.0f}%)" if share is not None else "") for t, size, share in cells)
            print(f"{os.path.basename(path)[:30]:30} {rel:>6.0e} {whole:>9.0f}  {text}")


if __name__ == "__main__":
    main()
