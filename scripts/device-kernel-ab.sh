#!/usr/bin/env bash
# Kernel time of one GPU compress, base against the working tree (device machine): Nsight
# Compute's duration of every kernel, summed by kernel name, so that a change of a few per cent
# shows where the medians of `fzg bench` move by 5-10 % from run to run.
#   rm -rf .baseline && mkdir .baseline && git archive HEAD | tar -x -C .baseline
#   bash scripts/device-kernel-ab.sh FIELD DIMS [fzg compress arguments...]
# e.g. bash scripts/device-kernel-ab.sh land.f32 464x464x464 -m rel -e 1e-3 --fill 1e20
# (the baseline is .baseline, or $FZG_BASELINE; its build goes to build-base). A host field's
# value range runs a slab at a time beside its upload: those passes are left out of the sum.
set -euo pipefail
cd "$(dirname "$0")/.."
field=$1 dims=$2
shift 2
base=${FZG_BASELINE:-.baseline}
source scripts/device-builds.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for b in build-base build-device; do
  ncu --csv --clock-control none --metrics gpu__time_duration.sum "$b/fzg" compress --device cuda -i "$field" \
    -l "$dims" "$@" -o "$work/out.fzg" 2>/dev/null >"$work/kernels.csv"
  python3 - "$work/kernels.csv" "$b" <<'PY'
import collections, csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head = rows[0]
name_at, value_at, unit_at = head.index("Kernel Name"), head.index("Metric Value"), head.index("Metric Unit")
scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
by_name = collections.OrderedDict()
for r in rows[1:]:
    name = r[name_at].replace("<unnamed>", "").replace("void ", "").split("(")[0].split("<")[0].split("::")[-1]
    if name in ("range_kernel", "range_total_kernel", "widen_kernel"):
        continue
    by_name[name] = by_name.get(name, 0.0) + float(r[value_at].replace(",", "")) * scale[r[unit_at]]
print("%s: %.1f us in all:" % (sys.argv[2], sum(by_name.values())),
      ", ".join("%s %.1f" % (k, v) for k, v in by_name.items()))
PY
done
