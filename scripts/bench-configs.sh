#!/usr/bin/env bash
# Configs side by side on the GPU: {3D power-law 464^3 (100 M values), `fzg gen turbulent`
# 464^3} x rel {1e-2, 1e-3, 1e-4} x $CONFIGS (names in configs/; default fz, cusz, ratio,
# gpulz, fz-gpulz): ratio, kernel-only compress / decompress GB/s of f32 input (median of 20
# after 3 warm-ups), and the coder that reads the Lorenzo codes (its stage, when it is not
# bitshuffle) alone, in GB/s of code bytes, from the per-stage timing run.
#   CONFIGS="fz cusz" bash scripts/bench-configs.sh [fzg] [gen_field.py]   (python3 with numpy, a GPU)
set -euo pipefail
fzg=${1:-build-device/fzg}
gen=${2:-${FZG_TOOLS:-.device-tools}/gen_field.py}
configs=${CONFIGS:-fz cusz ratio gpulz fz-gpulz}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 "$gen" "$dir/p100.f32" 464 464 464 3.6667 11 0 1 >/dev/null
"$fzg" gen --kind turbulent -l 464x464x464 -o "$dir/t100.f32" >/dev/null
printf '%-5s %-5s %-9s %7s %8s %8s %-8s %9s %9s\n' field rel config ratio "c GB/s" "d GB/s" coder "enc GB/s" "dec GB/s"
for name in p100 t100; do
  for e in 1e-2 1e-3 1e-4; do
    for config in $configs; do
      "$fzg" bench --device cuda -i "$dir/$name.f32" -l 464x464x464 -m rel -e "$e" -c "configs/$config.json" \
        --repeat 20 --warmup 3 --json 2>/dev/null |
        python3 -c '
import json, sys
r = json.load(sys.stdin)[0]
name, e, config = sys.argv[1:4]
graph = json.load(open("configs/%s.json" % config))
coder = [s for s in graph["stages"] if s["inputs"].get("in") == "predict.codes" and s["type"] != "bitshuffle"]
c, d = r["compress_stages_ms"], r["decompress_stages_ms"]
codes = 2 * r["values"]
if coder:
    sid = coder[0]["id"]
    rates = "%-8s %9.1f %9.1f" % (sid, codes / c[sid + " encode"] / 1e6, codes / d[sid + " decode"] / 1e6)
else:
    rates = "%-8s %9s %9s" % ("-", "-", "-")
print("%-5s %-5s %-9s %7.2f %8.1f %8.1f %s" % (name, e, config, r["ratio"], r["kernel_compress_gbps"],
      r["kernel_decompress_gbps"], rates))' "$name" "$e" "$config"
    done
  done
done
