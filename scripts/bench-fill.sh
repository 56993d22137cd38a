#!/usr/bin/env bash
# Fill values on the GPU: a 100 M-value power-law field (464^3, slope 11/3) with a synthetic
# land mask (a coastline that wanders with y plus an island, constant along z, like an ocean
# model's surface over time) against the same field without the mask, through `fzg bench`
# (kernel-only, median of 20 after 3 warm-ups). Prints ratio and GB/s of each, and their ratio:
# the issue's target is masked >= 0.9 x unmasked at ~40 % fill. Two masks by default: the
# issue's ~40 % (coast at 0.72 of x) and a harder ~52 % (coast at 0.6, more coastline tiles);
# FZG_FILL_COASTS="0.72 0.6" picks others.
#   bash scripts/bench-fill.sh [fzg] [gen_field.py] [configs...]   (python3 with numpy, a GPU)
set -euo pipefail
fzg=${1:-build-device/fzg}
gen=${2:-${FZG_TOOLS:-.device-tools}/gen_field.py}
shift $(($# < 2 ? $# : 2))
configs=("${@:-configs/fz.json}")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 "$gen" "$dir/sea.f32" 464 464 464 3.6667 11 0 1 >/dev/null
coasts=(${FZG_FILL_COASTS:-0.72 0.6})
declare -A label  # each field's name: its land fraction, as land_mask.py prints it
for coast in "${coasts[@]}"; do
  label[$coast]=land$(python3 "$(dirname "$0")/land_mask.py" "$dir/sea.f32" "$dir/land$coast.f32" "$coast")
done
printf '%-14s %-6s %-9s %8s %9s %9s %11s\n' config rel field ratio "c GB/s" "d GB/s" "c land/sea"
row() {  # config, rel, field name, file, fzg's extra arguments; a failed run prints its error
  local config=$1 e=$2 name=$3 file=$4 json
  shift 4
  if ! json=$("$fzg" bench --device cuda -i "$file" -l 464x464x464 -m rel -e "$e" -c "$config" "$@" \
    --repeat 20 --warmup 3 --json 2>"$dir/err"); then
    printf '%-14s %-6s %-9s failed: %s\n' "$(basename "$config" .json)" "$e" "$name" "$(tail -1 "$dir/err")"
    return 0
  fi
  python3 -c '
import json, sys
r = json.load(sys.stdin)[0]
print("%-14s %-6s %-9s %8.2f %9.1f %9.1f" % (sys.argv[1], sys.argv[2], sys.argv[3], r["ratio"],
      r["kernel_compress_gbps"], r["kernel_decompress_gbps"]))' "$(basename "$config" .json)" "$e" "$name" <<<"$json"
}
for config in "${configs[@]}"; do
  for e in 1e-2 1e-3 1e-4; do
    sea=$(row "$config" "$e" sea "$dir/sea.f32")
    echo "$sea"
    sea_c=$(awk '{print $5}' <<<"$sea")
    for coast in "${coasts[@]}"; do
      land=$(row "$config" "$e" "${label[$coast]}" "$dir/land$coast.f32" --fill 1e20)
      land_c=$(awk '{print $5}' <<<"$land")
      echo "$land $(awk -v l="$land_c" -v s="$sea_c" 'BEGIN { if (l + 0 > 0 && s + 0 > 0) printf "%11.2f", l / s }')"
    done
  done
done
