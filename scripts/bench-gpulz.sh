#!/usr/bin/env bash
# GPULZ's targets in one table: configs/gpulz.json (dual-quant Lorenzo -> GPULZ on the u16
# codes) on two 100 M-value 3D f32 fields, the turbulent field (fzg gen) and the power-law cube
# (464^3, slope 11/3), at rel {1e-2, 1e-3, 1e-4}: the stage's own encode / decode GB/s of its
# code bytes (the lossy pass's steps, median of 20 after 3 warm-ups) against >= 80 / >= 200,
# the ratio of the f32 field and of the codes (half the field's bytes: the outliers are
# counted against the codes, so the codes' figure is a lower bound), and the whole config's
# kernel-only compress / decompress GB/s.
#   bash scripts/bench-gpulz.sh [fzg] [gen_field.py] [config]    (needs python3 with numpy, a GPU)
# A compress under ratio 2 also codes the field exactly and keeps the smaller file: its steps
# are timed apart ("exact pass: ...") and count in the whole config's time, not the stage's;
# "exact" marks the cells where it ran, "kept" where its file was the one kept (the decode is
# then of the field's bytes, not of the codes: no stage decode figure).
set -euo pipefail
fzg=${1:-build-device/fzg}
gen=${2:-${FZG_TOOLS:-.device-tools}/gen_field.py}
config=${3:-configs/gpulz.json}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 "$gen" "$dir/p100.f32" 464 464 464 3.6667 11 0 1 >/dev/null
"$fzg" gen --kind turbulent -l 464x464x464 -o "$dir/t100.f32" >/dev/null
printf '%-5s %-5s %7s %9s %10s %10s %9s %9s  %s\n' field rel ratio "codes >=" "lz enc" "lz dec" "c GB/s" "d GB/s" "exact pass"
for name in t100 p100; do
  for e in 1e-2 1e-3 1e-4; do
    "$fzg" bench --device cuda -i "$dir/$name.f32" -l 464x464x464 -m rel -e "$e" -c "$config" --repeat 20 --warmup 3 \
      --json 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)[0]
name, e = sys.argv[1:3]
c, d = r["compress_stages_ms"], r["decompress_stages_ms"]
codes = 2 * r["values"]
exact = any(k.startswith("exact pass: ") for k in c)
kept = "predict decode" not in d  # the exact file has no predictor
mark = lambda v, t: ("%9.1f" % v) + ("*" if v >= t else " ")
enc = mark(codes / c["lz encode"] / 1e6, 80)
dec = "%10s" % "-" if kept else mark(codes / d["lz decode"] / 1e6, 200)
note = "kept" if kept else "ran" if exact else ""
print("%-5s %-5s %7.2f %9.2f %s %s %9.1f %9.1f  %s" % (name, e, r["ratio"], r["ratio"] / 2, enc, dec,
      r["kernel_compress_gbps"], r["kernel_decompress_gbps"], note))' "$name" "$e"
  done
done
echo "(lz enc / dec: GB/s of the u16 codes; * meets >= 80 / >= 200)"
