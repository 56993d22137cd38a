#!/usr/bin/env bash
# Where the time of one GPU compress and decompress goes, kernel by kernel (device machine).
#   bash scripts/device-profile.sh [values]      (default 100M: a 464^3 turbulent f32 cube)
# Builds build-device like device-check.sh, times the call with `fzg bench`, then lists every
# kernel of one call with Nsight Compute: duration, warp instructions, DRAM bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
side=${1:-464}
source scripts/device-field.sh
"$fzg" bench --device cuda -i "$work/field.f32" -l "$dims" -m rel -e 1e-3 --repeat 20 --trace 2>&1 | grep -v -E "^fzg bench|^$|end-to-end|peak"
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum
profile() {
  ncu --clock-control none --metrics "$metrics" --csv "$@" 2>/dev/null | python3 "$work/table.py"
}
cat >"$work/table.py" <<'PY'
import csv, sys
rows = list(csv.reader(l for l in sys.stdin if l.startswith('"')))
head, rows = rows[0], rows[1:]
k, m, v, ids = (head.index(c) for c in ("Kernel Name", "Metric Name", "Metric Value", "ID"))
per = {}
for r in rows:
    per.setdefault(int(r[ids]), {"name": r[k][:60]})[r[m]] = float(r[v].replace(",", ""))
total = 0
for i, d in sorted(per.items()):
    t = d.get("gpu__time_duration.sum", 0) / 1e3
    total += t
    print(f"{d['name']:60} {t:8.1f} us {d.get('smsp__inst_executed.sum', 0) / 1e6:8.2f} Minst"
          f" {d.get('dram__bytes_read.sum', 0) / 1e6:8.1f} MB rd {d.get('dram__bytes_write.sum', 0) / 1e6:8.1f} MB wr")
print(f"{'sum of kernels':60} {total:8.1f} us")
PY
echo "== compress"
profile "$fzg" compress --device cuda -i "$work/field.f32" -l "$dims" -m rel -e 1e-3 -o "$work/f.fzg"
echo "== decompress"
profile "$fzg" decompress --device cuda -i "$work/f.fzg" -o "$work/back.f32"
rm -rf "$work"
