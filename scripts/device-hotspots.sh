#!/usr/bin/env bash
# Which instructions of one kernel the GPU spends its issue slots on (device machine).
#   [FZG_HOTSPOTS_CONFIG=CONFIG.json] bash scripts/device-hotspots.sh KERNEL_REGEX [values-side] [top]
# Profiles the kernel's first launch in a 100 M f32 compress (or decompress, when the regex
# names a decode kernel) with Nsight Compute's source counters and prints its hottest SASS
# instructions and its phases (scripts/sass-hotspots.py). The compress takes the
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
# The demangled name, so that a regex may name template arguments (encode_kernel<DeviceCoder<...>>).
ncu --kernel-name-base demangled --clock-control none --section SourceCounters --section SpeedOfLight \
  -k "regex:$regex" -c 1 -f -o "$work/rep" "${run[@]}" >/dev/null
ncu -i "$work/rep.ncu-rep" --page details | grep -E "Duration|Executed Instructions|Throughput|Issue" || true
ncu -i "$work/rep.ncu-rep" --page source --csv --print-source sass >"$work/sass.csv"
# The whole listing comes back packed (a large kernel's is ~20 MB as text).
[[ -n ${OUT:-} ]] && gzip -c "$work/sass.csv" >"$OUT/$(echo "$regex" | tr -c 'a-zA-Z0-9_\n' _).csv.gz"
python3 scripts/sass-hotspots.py "$work/sass.csv" "$top"
rm -rf "$work"
