#!/usr/bin/env bash
# The evaluation workflow end to end, as a user runs it: fzg sweep over two fields named with
# their dimensions, scripts/peers.py joining the same CSV (the peers whose packages are
# installed), a resumed sweep that adds nothing, and scripts/plot.py's figures (with
# matplotlib). Exits 77 (skipped) without python3 and numpy.
#   bash tests/evaluation_test.sh FZG SOURCE_DIR
set -euo pipefail
fzg=$1 src=$2
py=$(bash "$src/scripts/find-python.sh" numpy) || { echo "SKIP: python3 with numpy is not installed"; exit 77; }
python3() { "$py" "$@"; }  # the interpreter with numpy (Debian's, where pyenv's comes first on PATH)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "evaluation test: $*" >&2; exit 1; }

"$fzg" gen --kind smooth -l 40x30x6 -o "$dir/s_40x30x6.f32" >/dev/null
"$fzg" gen --kind turbulent -l 64x48 -o "$dir/t_64x48.f32" >/dev/null
fields="$dir/s_40x30x6.f32,$dir/t_64x48.f32"
"$fzg" sweep -i "$fields" -c "$src/configs/fz.json,$src/configs/ratio.json" -e 1e-2,1e-3 -o "$dir/r.csv" 2>/dev/null
python3 "$src/scripts/peers.py" --fzg "$fzg" -i "$fields" -e 1e-2,1e-3 -o "$dir/r.csv" 2>"$dir/peers.log"
peers=0
python3 -c "import pysz" 2>/dev/null && peers=$((peers + 1))
python3 -c "import zfpy" 2>/dev/null && peers=$((peers + 1))
rows=$(($(wc -l <"$dir/r.csv") - 1))
[ "$rows" -eq $((8 + 4 * peers)) ] || fail "$rows rows, expected $((8 + 4 * peers)) ($peers peers installed)"
# Every row has every column and holds its bound (the peers' too, measured by fzg compare).
python3 - "$dir/r.csv" <<'PY' || exit 1
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    assert None not in r and all(k for k in r), "a row with too many cells"
    for key in ("ratio", "bits_per_value", "psnr_db", "ssim", "max_abs_error", "absolute_bound"):
        float(r[key])
    assert r["bound_held"] == "yes", "%s %s %s missed its bound" % (r["field"], r["config"], r["eb"])
PY
# Resuming adds nothing and changes nothing.
cp "$dir/r.csv" "$dir/before.csv"
"$fzg" sweep -i "$fields" -c "$src/configs/fz.json,$src/configs/ratio.json" -e 1e-2,1e-3 -o "$dir/r.csv" 2>/dev/null
python3 "$src/scripts/peers.py" --fzg "$fzg" -i "$fields" -e 1e-2,1e-3 -o "$dir/r.csv" 2>/dev/null
cmp -s "$dir/r.csv" "$dir/before.csv" || fail "a resumed sweep changed the results"
# datasets/fetch on a small manifest, from archives at hand (no network): sizes checked, the
# sweep command printed; an archive with a field of the wrong size is refused.
mkdir -p "$dir/fetch/archives" "$dir/fetch/good/tiny" "$dir/fetch/bad/tiny"
python3 - "$dir/fetch" <<'PY'
import json, sys
d = sys.argv[1]
open(d + "/good/tiny/a.f32", "wb").write(bytes(48))
open(d + "/good/tiny/b.f32", "wb").write(bytes(48))
open(d + "/bad/tiny/a.f32", "wb").write(bytes(40))
json.dump({"url_base": "https://invalid.example/", "datasets": [
    {"name": "tiny", "application": "test", "archive": "x/tiny.tar.gz", "folder": "tiny", "pattern": "*.f32",
     "dims": [4, 3], "dtype": "f32", "field_bytes": 48}]}, open(d + "/manifest.json", "w"))
PY
tar -czf "$dir/fetch/archives/tiny.tar.gz" -C "$dir/fetch/good" tiny
printed=$(python3 "$src/datasets/fetch" --manifest "$dir/fetch/manifest.json" --archives "$dir/fetch/archives" \
  --dir "$dir/fetch/out" --fzg "$fzg" tiny 2>/dev/null)
[[ "$printed" == *"-l 4x3 -t f32"* && "$printed" == *"tiny/b.f32"* ]] || fail "fetch printed: $printed"
tar -czf "$dir/fetch/archives/tiny.tar.gz" -C "$dir/fetch/bad" tiny
if python3 "$src/datasets/fetch" --manifest "$dir/fetch/manifest.json" --archives "$dir/fetch/archives" \
  --dir "$dir/fetch/bad-out" tiny >/dev/null 2>&1; then fail "fetch accepted a field of the wrong size"; fi
python3 "$src/datasets/fetch" --list >/dev/null || fail "the SDRBench manifest does not list"

if python3 -c "import matplotlib" 2>/dev/null; then
  python3 "$src/scripts/plot.py" curves "$dir/r.csv" -o "$dir/figures" >/dev/null
  for f in rate_distortion ratio_vs_bound throughput; do
    [ -s "$dir/figures/$f.png" ] && [ -s "$dir/figures/$f.svg" ] || fail "plot.py wrote no $f figure"
  done
  python3 "$src/scripts/plot.py" slice "$dir/s_40x30x6.f32" -l 40x30x6 --fzg "$fzg" -o "$dir/slice.png" >/dev/null
  [ -s "$dir/slice.png" ] || fail "plot.py wrote no slice"
  echo "sweep, $peers peers and the figures: ok"
else
  echo "sweep and $peers peers: ok (no matplotlib: figures not drawn)"
fi
