#!/usr/bin/env bash
# GPULZ over its parameters, like the paper's Tables 1-2: chunk C x window W x symbol S on the
# u16 Lorenzo codes of one field (dual-quant -> GPULZ, configs/gpulz.json with the parameters
# changed). Prints the ratio of the f32 input (the codes' ratio is about half: 2 bytes per
# value) and the GPULZ stage's own encode / decode GB/s of code bytes (per-stage timing run,
# median of the repeats).
#   bash scripts/bench-gpulz-sweep.sh [fzg] [field.f32] [dims] [rel]   (a GPU; FZG_SWEEP_CHUNKS="2048 4096" for fewer)
set -euo pipefail
fzg=${1:-build-device/fzg}
field=${2:-}
dims=${3:-464x464x464}
rel=${4:-1e-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [ -z "$field" ]; then
  field=$dir/t100.f32
  "$fzg" gen --kind turbulent -l "$dims" -o "$field" >/dev/null
fi
printf '%-6s %-4s %-4s %7s %12s %12s\n' C W S ratio "lz enc GB/s" "lz dec GB/s"
for C in ${FZG_SWEEP_CHUNKS:-2048 4096 8192 16384}; do
  for W in 32 64 128 255; do
    for S in 1 2 4; do
      bash "$(dirname "$0")/gpulz-config.sh" "$C" "$W" "$S" >"$dir/c.json"
      "$fzg" bench --device cuda -i "$field" -l "$dims" -m rel -e "$rel" -c "$dir/c.json" --repeat 3 --warmup 1 --json \
        2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)[0]
codes = 2 * r["values"]
e, d = r["compress_stages_ms"]["lz encode"], r["decompress_stages_ms"]["lz decode"]
print("%-6s %-4s %-4s %7.2f %12.1f %12.1f" % (*sys.argv[1:4], r["ratio"], codes / e / 1e6, codes / d / 1e6))' "$C" "$W" "$S"
    done
  done
done
