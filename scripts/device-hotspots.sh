#!/usr/bin/env bash
# Which instructions of one kernel the GPU spends its issue slots on (device machine).
#   [FZG_HOTSPOTS_CONFIG=CONFIG.json] bash scripts/device-hotspots.sh KERNEL_REGEX [values-side] [top]
# Profiles the kernel's first launch in a 100 M f32 compress (or decompress, when the regex
# names a decode kernel) with Nsight Compute's source counters and prints its SASS, hottest
# instructions first, with warp-level executions per instruction. The compress takes the
# default config, or FZG_HOTSPOTS_CONFIG (for instance a GPULZ config, with the regex
# 'encode_kernel.*DeviceCoder').
set -euo pipefail
cd "$(dirname "$0")/.."
regex=$1 side=${2:-464} top=${3:-60}
source scripts/device-field.sh
run=("$fzg" compress --device cuda -i "$work/field.f32" -l "$dims" -m rel -e 1e-3 -o "$work/f.fzg"
  ${FZG_HOTSPOTS_CONFIG:+-c "$FZG_HOTSPOTS_CONFIG"})
if [[ $regex == *decode* || $regex == *expand* ]]; then  # a decode kernel: profile the file's decompression
  "${run[@]}"
  run=("$fzg" decompress --device cuda -i "$work/f.fzg" -o "$work/back.f32")
fi
ncu --clock-control none --section SourceCounters --section SpeedOfLight -k "regex:$regex" -c 1 -f -o "$work/rep" "${run[@]}" >/dev/null
ncu -i "$work/rep.ncu-rep" --page details | grep -E "Duration|Executed Instructions|Throughput|Issue" || true
ncu -i "$work/rep.ncu-rep" --page source --csv --print-source sass >"$work/sass.csv"
[[ -n ${OUT:-} ]] && cp "$work/sass.csv" "$OUT/$(echo "$regex" | tr -c 'a-zA-Z0-9_\n' _).csv"
python3 - "$work/sass.csv" "$top" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
start = next(i for i, r in enumerate(rows) if any(c.strip() == "Source" for c in r))
head, rows = rows[start], rows[start:]
src = next(i for i, h in enumerate(head) if h.strip() == "Source")
ex = next((i for i, h in enumerate(head) if h.strip().startswith("Warp Instructions Executed") or h.strip() == "Instructions Executed"), None)
if ex is None:
    sys.exit("no executed-instructions column in: " + ", ".join(head))
def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0
body = [(number(r[ex]), r[src].strip(), i) for i, r in enumerate(rows[1:]) if len(r) > ex]
total = sum(b[0] for b in body)
print(f"{len(body)} SASS instructions, {total / 1e6:.2f} M warp instructions executed")
for n, text, i in sorted(body, reverse=True)[: int(sys.argv[2])]:
    print(f"{i:5d} {n / 1e6:8.3f} M {100 * n / total:5.1f}%  {text}")
print("-- in order --")
for n, text, i in body:
    print(f"{i:5d} {n / 1e6:8.3f} M  {text}")
PY
rm -rf "$work"
