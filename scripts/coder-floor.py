#!/usr/bin/env python3
"""How far a Huffman code of fzg's Lorenzo codes stays above their zero-order entropy: what an
entropy coder that spends less than a bit on a frequent symbol (rANS, arithmetic coding) would
save, and what zero runs coded as symbols before the Huffman code give instead. The codes are
rebuilt as fzg makes them (tile-local dual-quantization Lorenzo, tile-edge-loss.py's), fill
points left out; headers, codebooks and outliers aside.

  python3 scripts/coder-floor.py FIELD.f32:DIMS [...] [--rel 1e-2,1e-3] [--fill 1e20]
                                                               (DIMS fastest first: 49x37x240)

With no fields, the real fields of ../shared/datasets (with their fill values). Columns, in
bits a value: the entropy, an (unlimited-length) Huffman code, the Huffman code of the codes
with every run of two or more zero codes replaced by power-of-two run symbols, an estimate of
an interleaved rANS code with its table and lane states (rans_bits), and the share of zero
codes."""
import argparse
import heapq
import importlib.util
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from shared_datasets import shared_fields  # noqa: E402
spec = importlib.util.spec_from_file_location("tile_edge_loss", os.path.join(here, "tile-edge-loss.py"))
tel = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tel)


def entropy_bits(symbols):
    _, counts = np.unique(symbols, return_counts=True)
    p = counts / counts.sum()
    return float(-(counts * np.log2(p)).sum())


def huffman_bits(symbols):
    """Bits of an optimal prefix code of `symbols` (code lengths from the counts)."""
    _, counts = np.unique(symbols, return_counts=True)
    if len(counts) == 1:
        return float(len(symbols))
    heap = [(int(c), i) for i, c in enumerate(counts)]
    heapq.heapify(heap)
    total, next_id = 0, len(counts)
    while len(heap) > 1:  # each merge adds its weight once per level: the sum of weight x length
        a, b = heapq.heappop(heap), heapq.heappop(heap)
        total += a[0] + b[0]
        heapq.heappush(heap, (a[0] + b[0], next_id))
        next_id += 1
    return float(total)


def rans_bits(codes, precision=14, chunk_symbols=32768, lanes=32, entry_bits=32):
    """An estimate of an interleaved rANS code (DietGPU's layout): each symbol costs
    -log2(f / 2^precision) with its count scaled to f (at least 1, summing to 2^precision), a
    table of `entry_bits` an entry, and each chunk of `chunk_symbols` its lanes' 32-bit final
    states."""
    _, index, counts = np.unique(codes, return_inverse=True, return_counts=True)
    scaled = np.maximum(1, np.floor(counts * 2.0 ** precision / counts.sum())).astype(np.int64)
    scaled[np.argmax(scaled)] += 2 ** precision - scaled.sum()
    if scaled.min() < 1:  # more symbols than the precision holds: no such code
        return float("inf")
    chunks = (len(codes) + chunk_symbols - 1) // chunk_symbols
    return float(-np.log2(scaled[index] / 2.0 ** precision).sum()) + len(counts) * entry_bits + chunks * lanes * 32


def zero_runs(codes):
    """Runs of two or more zero codes as power-of-two run symbols (values past every code's
    magnitude), other codes as they are."""
    first_run_symbol = int(np.abs(codes).max()) + 1 if len(codes) else 1
    out, i, n = [], 0, len(codes)
    zero = codes == 0
    while i < n:
        if not zero[i]:
            out.append(int(codes[i]))
            i += 1
            continue
        j = i
        while j < n and zero[j]:
            j += 1
        length, bit = j - i, 0
        if length == 1:
            out.append(0)
        else:
            while length:  # its binary digits, a run symbol each
                if length & 1:
                    out.append(first_run_symbol + bit)
                length >>= 1
                bit += 1
        i = j
    return np.array(out)


def codes_of(path, dims, rel, fills):
    values = np.fromfile(path, dtype=np.float32).reshape(dims[::-1]).astype(np.float64)
    missing = np.zeros(values.shape, bool)
    for f in fills:
        missing |= np.isnan(values) if np.isnan(f) else values == np.float32(f)
    valid = values[~missing & np.isfinite(values)]
    span = float(valid.max() - valid.min()) if valid.size else 0.0
    q = np.rint(np.where(np.isfinite(values), values, 0) / (2 * rel * span if span > 0 else 1.0))
    if missing.any():
        q = tel.fill_quanta(q, missing)
    tile = tel.TILES[len(dims)][0]
    return tel.tiled_lorenzo(q, tile)[~missing].ravel().astype(np.int64)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fields", nargs="*", help="FIELD:DIMS, dims fastest first")
    parser.add_argument("--rel", default="1e-2,1e-3")
    parser.add_argument("--fill", action="append", default=None, help="a fill value (repeatable)")
    args = parser.parse_args()
    fields = [(p, [int(d) for d in dims.split("x")], [float(f) for f in args.fill or []])
              for p, _, dims in (s.rpartition(":") for s in args.fields)]
    if not fields:
        fields = list(shared_fields())
    if not fields:
        sys.exit("coder-floor.py: no fields (name FIELD:DIMS, or keep ../shared/datasets beside the repository)")
    print(f"{'field':30} {'rel':>6} {'entropy':>8} {'huffman':>8} {'zero-run':>9} {'rANS':>6} {'zeros':>6}"
          "   (bits a value)")
    for path, dims, fills in fields:
        for rel in (float(r) for r in args.rel.split(",")):
            codes = codes_of(path, dims, rel, fills)
            n = len(codes)
            print(f"{os.path.basename(path)[:30]:30} {rel:>6.0e} {entropy_bits(codes) / n:8.3f} "
                  f"{huffman_bits(codes) / n:8.3f} {huffman_bits(zero_runs(codes)) / n:9.3f} {rans_bits(codes) / n:6.3f}"
                  f" {np.mean(codes == 0):6.2f}")



if __name__ == "__main__":
    main()
