#!/usr/bin/env python3
"""A kernel's hot SASS from Nsight Compute's source page (`ncu -i REP --page source --csv
--print-source sass`, as scripts/device-hotspots.sh writes it; plain or gzipped):

  python3 scripts/sass-hotspots.py SASS.csv[.gz] [top]

Prints the `top` instructions by warp stall samples (where the kernel's warps wait, so where
its time goes; by executions where the report has no samples), then its phases: the code
between two block barriers (BAR.SYNC), in address order, each with its share of the samples
and its warp instructions executed. A phase's first instruction also carries the samples of
warps that waited at the barrier before it for a slower warp."""
import csv
import gzip
import sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main(path, top):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        rows = [r for r in csv.reader(f) if r]
    start = next(i for i, r in enumerate(rows) if any(c.strip() == "Source" for c in r))
    head = [h.strip() for h in rows[start]]
    column = lambda *names: next((head.index(n) for n in names if n in head), None)
    src = column("Source")
    executed = column("Warp Instructions Executed", "Instructions Executed")
    if executed is None:
        sys.exit("sass-hotspots.py: no executed-instructions column in: " + ", ".join(head))
    samples = column("Warp Stall Sampling (All Samples)")
    weight = samples if samples is not None else executed
    body = [r for r in rows[start + 1:] if len(r) > max(executed, weight)]
    total_ex = sum(number(r[executed]) for r in body) or 1.0
    total_w = sum(number(r[weight]) for r in body) or 1.0
    what = "stall samples" if samples is not None else "executions"
    print(f"{len(body)} SASS instructions, {total_ex / 1e6:.2f} M warp instructions executed; by {what}:")
    order = sorted(range(len(body)), key=lambda k: -number(body[k][weight]))
    for k in order[:top]:
        r = body[k]
        print(f"{k:6d} {100 * number(r[weight]) / total_w:5.2f}%  {number(r[executed]) / 1e6:8.3f} M  {r[src].strip()}")
    print(f"-- phases (between barriers; those over 0.2 % of the {what}) --")
    first, w, ex = 0, 0.0, 0.0
    for k, r in enumerate(body):
        w += number(r[weight])
        ex += number(r[executed])
        if "BAR.SYNC" in r[src] or k == len(body) - 1:
            if w > 0.002 * total_w:
                print(f"  [{first:6d} .. {k:6d}] {100 * w / total_w:5.1f}%  {ex / 1e6:9.3f} M executed")
            first, w, ex = k + 1, 0.0, 0.0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40)
