#!/usr/bin/env bash
# GPULZ beside FZ-GPU's back end on the GPU: {3D power-law 464^3 (100 M values), `fzg gen
# turbulent` 464^3} x rel {1e-2, 1e-3, 1e-4} x configs {fz, gpulz, fz-gpulz}: ratio, kernel-only
# compress / decompress GB/s of f32 input (median of 20 after 3 warm-ups), and the GPULZ
# stage alone in GB/s of its own input (the u16 codes for gpulz.json, the packed words for
# fz-gpulz.json) from the per-stage timing run.
#   bash scripts/bench-gpulz.sh [fzg] [gen_field.py]    (needs python3 with numpy, a GPU)
set -euo pipefail
fzg=${1:-build-device/fzg}
gen=${2:-${FZG_TOOLS:-.device-tools}/gen_field.py}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 "$gen" "$dir/p100.f32" 464 464 464 3.6667 11 0 1 >/dev/null
"$fzg" gen --kind turbulent -l 464x464x464 -o "$dir/t100.f32" >/dev/null
printf '%-5s %-5s %-9s %7s %8s %8s %12s %12s\n' field rel config ratio "c GB/s" "d GB/s" "lz enc GB/s" "lz dec GB/s"
for name in p100 t100; do
  for e in 1e-2 1e-3 1e-4; do
    for config in fz gpulz fz-gpulz; do
      "$fzg" bench --device cuda -i "$dir/$name.f32" -l 464x464x464 -m rel -e "$e" -c "configs/$config.json" \
        --repeat 20 --warmup 3 --json 2>/dev/null |
        python3 -c '
import json, sys
r = json.load(sys.stdin)[0]
name, e, config = sys.argv[1:4]
c, d = r["compress_stages_ms"], r["decompress_stages_ms"]
# The bytes GPULZ sees: the u16 codes, or the packed stream (the zero-block output is not
# reported, so estimate it from the file: GPULZ output ~ file size minus the outliers).
lz_in = 2 * r["values"] if config == "gpulz" else None
rate = lambda ms: "%12.1f" % (lz_in / ms / 1e6) if lz_in and ms else "%12s" % "-"
print("%-5s %-5s %-9s %7.2f %8.1f %8.1f %s %s" % (name, e, config, r["ratio"], r["kernel_compress_gbps"],
      r["kernel_decompress_gbps"], rate(c.get("lz encode")), rate(d.get("lz decode"))))' "$name" "$e" "$config"
    done
  done
done
