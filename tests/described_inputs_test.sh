#!/usr/bin/env bash
# Inputs that carry their own type and shape, through the CLI: .npy (C and Fortran order, f32
# and f64), where fzg has HDF5 a NetCDF-4 variable written by ncgen, and where python3 also
# has h5py an HDF5 dataset stored big-endian with a _FillValue. Each compresses to exactly the file its raw bytes give with -l and -t;
# disagreeing -l / -t, a missing dataset and a truncated .npy are one-line errors. Exits 77
# (skipped) without python3 and numpy.
#   bash tests/described_inputs_test.sh FZG
set -euo pipefail
fzg=$1
py=$(bash "$(dirname "$0")/../scripts/find-python.sh" numpy) || { echo "SKIP: python3 with numpy is not installed"; exit 77; }
python3() { "$py" "$@"; }  # the interpreter with numpy (Debian's, where pyenv's comes first on PATH)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "described inputs test: $*" >&2; exit 1; }
same() { cmp -s "$1" "$2" || fail "$3 does not compress to the raw field's file"; }
one_line_error() {
  local err
  if err=$("$fzg" "$@" 2>&1 >/dev/null); then fail "'$*' succeeded"; fi
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && [[ "$err" == "fzg: error: "* ]] || fail "'$*' printed: $err"
}

"$fzg" gen --kind turbulent -l 30x20x10 -o "$dir/f32.raw" >/dev/null
"$fzg" gen --kind smooth -t f64 -l 50x40 -o "$dir/f64.raw" >/dev/null
python3 - "$dir" <<'PY'
import sys, numpy as np
d = sys.argv[1]
a = np.fromfile(d + "/f32.raw", dtype=np.float32).reshape(10, 20, 30)  # slowest first
a.reshape(-1)[::37] = -999  # missing points, as the files' _FillValue below says
a.tofile(d + "/f32.raw")
b = np.fromfile(d + "/f64.raw", dtype=np.float64).reshape(40, 50)
np.save(d + "/c.npy", a)
np.save(d + "/fortran.npy", np.asfortranarray(a.transpose()))  # the same bytes, column-major
np.save(d + "/b.npy", b)
PY
"$fzg" compress -i "$dir/f32.raw" -l 30x20x10 -e 1e-3 -o "$dir/raw.fzg" 2>/dev/null
"$fzg" compress -i "$dir/f64.raw" -t f64 -l 50x40 -e 1e-3 -o "$dir/raw64.fzg" 2>/dev/null
"$fzg" compress -i "$dir/c.npy" -e 1e-3 -o "$dir/c.fzg" 2>/dev/null
"$fzg" compress -i "$dir/fortran.npy" -e 1e-3 -o "$dir/fortran.fzg" 2>/dev/null
"$fzg" compress -i "$dir/b.npy" -e 1e-3 -o "$dir/b.fzg" 2>/dev/null
"$fzg" compress -i "$dir/c.npy" -l 30x20x10 -t f32 -e 1e-3 -o "$dir/c2.fzg" 2>/dev/null
same "$dir/c.fzg" "$dir/raw.fzg" "a C-order .npy"
same "$dir/fortran.fzg" "$dir/raw.fzg" "a Fortran-order .npy"
same "$dir/b.fzg" "$dir/raw64.fzg" "an f64 .npy"
same "$dir/c2.fzg" "$dir/raw.fzg" "a .npy with agreeing -l and -t"
one_line_error compress -i "$dir/c.npy" -l 20x30x10 -o "$dir/x.fzg"
one_line_error compress -i "$dir/c.npy" -t f64 -o "$dir/x.fzg"
head -c 60 "$dir/c.npy" >"$dir/cut.npy"
one_line_error compress -i "$dir/cut.npy" -o "$dir/x.fzg"
[ ! -e "$dir/x.fzg" ] || fail "a refused input left an output"

# NetCDF-4 is HDF5 underneath: a file written by NetCDF's own ncgen, from CDL text holding the
# same float32 values (each as its exact decimal expansion, so that no rounding can differ),
# compresses to the raw field's file and reports its _FillValue. ncgen (netcdf-bin) is one of
# scripts/setup.sh's packages (CI has it; the device machine, which installs nothing, does not).
# Its _FillValue marks missing points unless --fill says otherwise: the file is the raw field's
# with --fill -999, and with --fill none the raw field's without.
"$fzg" compress -i "$dir/f32.raw" -l 30x20x10 -e 1e-3 --fill -999 -o "$dir/raw-fill.fzg" 2>/dev/null ||
  fail "the raw field did not compress with --fill"
if command -v ncgen >/dev/null; then
python3 - "$dir" <<'PY'
import sys, decimal, numpy as np
d = sys.argv[1]
a = np.fromfile(d + "/f32.raw", dtype=np.float32)
values = ", ".join(str(decimal.Decimal(float(v))) for v in a)
with open(d + "/f.cdl", "w") as f:
    f.write("netcdf f {\ndimensions:\n  z = 10 ;\n  y = 20 ;\n  x = 30 ;\nvariables:\n  float temp(z, y, x) ;\n"
            "    temp:_FillValue = -999.f ;\n    temp:units = \"K\" ;\ndata:\n  temp = " + values + " ;\n}\n")
PY
ncgen -k nc4 -o "$dir/f.nc" "$dir/f.cdl" || fail "ncgen could not write a NetCDF-4 file"
if err=$("$fzg" compress -i "$dir/f.nc:/temp" -e 1e-3 -o "$dir/nc.fzg" 2>&1); then
  same "$dir/nc.fzg" "$dir/raw-fill.fzg" "a NetCDF-4 variable with its _FillValue"
  [[ "$err" == *"_FillValue -999"* ]] || fail "the NetCDF-4 _FillValue was not reported: $err"
  "$fzg" compress -i "$dir/f.nc:/temp" -e 1e-3 --fill none -o "$dir/nc-none.fzg" 2>/dev/null
  same "$dir/nc-none.fzg" "$dir/raw.fzg" "a NetCDF-4 variable with --fill none"
  "$fzg" decompress -i "$dir/nc.fzg" -o "$dir/nc.out" 2>/dev/null
  python3 - "$dir" <<'PY' || fail "the NetCDF-4 variable's missing points did not come back exactly"
import sys, numpy as np
d = sys.argv[1]
a, b = np.fromfile(d + "/f32.raw", dtype=np.float32), np.fromfile(d + "/nc.out", dtype=np.float32)
missing = a == np.float32(-999)
assert missing.sum() > 100 and (b[missing] == a[missing]).all()
assert np.abs(b[~missing] - a[~missing]).max() <= 1e-3 * (a[~missing].max() - a[~missing].min())
PY
  echo "NetCDF-4 input: ok"
elif [[ "$err" == *"built without HDF5"* ]]; then
  echo "NetCDF-4 input: not tested (this fzg has no HDF5)"
else
  fail "a NetCDF-4 variable failed: $err"
fi
else
  echo "NetCDF-4 input: not tested (no ncgen: netcdf-bin, which scripts/setup.sh installs)"
fi

if ! python3 -c "import h5py" 2>/dev/null; then
  echo ".npy inputs: ok (no h5py: HDF5 not tested)"
  exit 0
fi
python3 - "$dir" <<'PY'
import sys, numpy as np, h5py
d = sys.argv[1]
a = np.fromfile(d + "/f32.raw", dtype=np.float32).reshape(10, 20, 30)
with h5py.File(d + "/f.h5", "w") as f:
    v = f.create_dataset("ocean/temp", data=a.astype(">f4"))  # big-endian on disk
    v.attrs["_FillValue"] = np.float32(-999)
PY
if err=$("$fzg" compress -i "$dir/f.h5:/ocean/temp" -e 1e-3 -o "$dir/h5.fzg" 2>&1); then
  same "$dir/h5.fzg" "$dir/raw-fill.fzg" "an HDF5 dataset with its _FillValue"
  [[ "$err" == *"_FillValue -999"* ]] || fail "the _FillValue was not reported: $err"
  one_line_error compress -i "$dir/f.h5:/ocean/none" -o "$dir/x.fzg"
  echo ".npy and HDF5 inputs: ok"
elif [[ "$err" == *"built without HDF5"* ]]; then
  echo ".npy inputs: ok (this fzg has no HDF5)"
else
  fail "an HDF5 dataset failed: $err"
fi
