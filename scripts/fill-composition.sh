#!/usr/bin/env bash
# Where a masked GPU compress spends its time, by the kind of its tiles: the 100 M-value
# power-law field of bench-fill.sh with land masks chosen so that the tiles (32x8x8) are all
# data ("seafill": no point missing, --fill given anyway), mostly land and never mixed
# ("block64": x >= 64), half and half ("stripes": 32-wide bands), or the coastline and island
# of bench-fill.sh ("land", 15 % of tiles of both kinds). Per field: ratio and kernel-only
# GB/s (`fzg bench`, median of 20), then the GPU microseconds of one traced call (`--trace`)
# summed over its chunks: value range, Lorenzo encode kernel, everything from the predictor's
# step to the outlier totals' read-back (the mask's kernels, and the shuffle-pack's launch, which
# is queued first), the shuffle-pack's kernels from there to its totals' read-back, and the
# host's gaps after each step.
#   bash scripts/fill-composition.sh [fzg] [gen_field.py] [rel]   (python3 with numpy, a GPU)
set -euo pipefail
fzg=${1:-build-device/fzg}
gen=${2:-${FZG_TOOLS:-.device-tools}/gen_field.py}
rel=${3:-1e-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 "$gen" "$dir/sea.f32" 464 464 464 3.6667 11 0 1 >/dev/null
python3 - "$dir" "$(dirname "$0")" <<'PY'
import sys
import numpy as np
d = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from land_mask import FILL, cube, land
v0 = cube(d + "/sea.f32")  # z, y, x
n = v0.shape[0]
y, x = np.mgrid[0:n, 0:n]
masks = {"block64": x >= 64, "stripes": (x % 64) >= 32, "land": land(n, 0.6)}
for name, m in masks.items():
    v = v0.copy()
    v[:, m] = FILL
    v.tofile(f"{d}/{name}.f32")
    # The tiles' kinds in the xy plane (the mask is constant along z), inside the field only.
    t = np.full((n // 8 * 8 + (8 if n % 8 else 0), 15 * 32), -1.0)
    t[:n, :n] = m
    t = t.reshape(-1, 8, 15, 32).transpose(0, 2, 1, 3).reshape(-1, 256)
    inside = t >= 0
    frac = np.array([r[i].mean() for r, i in zip(t, inside)])
    print(f"{name}: {m.mean():.3f} of the points missing; tiles all missing {(frac == 1).mean():.3f}, "
          f"mixed {((frac > 0) & (frac < 1)).mean():.3f}, all data {(frac == 0).mean():.3f}", file=sys.stderr)
PY
cat >"$dir/parse.py" <<'PY'
import sys
text = sys.stdin.read().split("compress timeline")[1].split("decompress timeline")[0]
marks = []
for line in text.splitlines():
    parts = line.rsplit(None, 2)
    try:
        marks.append((parts[0].strip(), float(parts[2])))
    except (IndexError, ValueError):
        pass
sums = dict.fromkeys(["value range", "encode", "to totals", "host gaps", "shuffle-pack"], 0.0)
names = {"value range": "value range", "lorenzo: encode queued": "encode", "lorenzo: outlier totals read": "to totals",
         "step encoded": "host gaps", "shuffle-pack: totals read": "shuffle-pack"}
for (_, before), (mark, at) in zip(marks, marks[1:]):
    if mark in names:
        sums[names[mark]] += at - before
print("  ".join(f"{k} {v:6.1f}" for k, v in sums.items()) + f"  call {marks[-1][1]:7.1f} us")
PY
for field in sea seafill block64 stripes land; do
  input=$dir/$field.f32 fill=(--fill 1e20)
  [ "$field" = sea ] && fill=()
  [ "$field" = seafill ] && input=$dir/sea.f32
  run=("$fzg" bench --device cuda -i "$input" -l 464x464x464 -m rel -e "$rel" "${fill[@]}")
  speed=$("${run[@]}" --repeat 20 --warmup 3 --json 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)[0]
print("ratio %6.2f  c %6.1f  d %6.1f GB/s" % (r["ratio"], r["kernel_compress_gbps"], r["kernel_decompress_gbps"]))')
  trace=$("${run[@]}" --repeat 2 --warmup 1 --trace 2>&1 | python3 "$dir/parse.py")
  printf '%-8s %s | %s\n' "$field" "$speed" "$trace"
done
