#!/usr/bin/env bash
# The fzg filter through HDF5's own tools, as a user runs them: h5repack takes the filter off
# a file the filter test wrote (decompressing every chunk) and puts it back on with
# `-f UD=305,...` (abs 0.01), h5diff finds the values within 0.01 of the unfiltered ones,
# and h5dump shows the filter; NetCDF-4's nccopy and ncdump do the same where netcdf-bin is
# installed. Exits 77 (skipped) without h5repack, h5diff and h5dump.
#   HDF5_PLUGIN_PATH=<build>/plugins bash tests/hdf5/tools_test.sh FILTERED.h5
set -euo pipefail
filtered=$1
for tool in h5repack h5diff h5dump; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (hdf5-tools)"; exit 77; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "hdf5 tools test: $*" >&2; exit 1; }
# Python with numpy (Debian's, where pyenv's comes first on PATH), for the h5py and NetCDF parts.
py=$(bash "$(dirname "$0")/../../scripts/find-python.sh" numpy) || py=""
python3() { [ -n "$py" ] && "$py" "$@"; }
h5repack -f NONE "$filtered" "$dir/plain.h5" || fail "h5repack could not take the filter off"
# abs 0.01: cd_values mode 1, then the double 0.01's low and high 32 bits.
h5repack -f /abs:UD=305,0,3,1,1202590843,1065646817 "$dir/plain.h5" "$dir/packed.h5" ||
  fail "h5repack could not apply the filter"
h5diff -d 0.01 "$dir/plain.h5" "$dir/packed.h5" /abs /abs >/dev/null || fail "h5diff finds values over 0.01"
h5dump -H -p -d /abs "$dir/packed.h5" | grep -q "FILTER_ID 305" || fail "h5dump does not show the filter"
[ "$(stat -c %s "$dir/packed.h5")" -lt "$(stat -c %s "$dir/plain.h5")" ] || fail "the filtered file is not smaller"
# h5py, where it is built against this HDF5 (Debian's python3-h5py; a wheel carries its own).
system_hdf5=$(h5dump --version | grep -o '[0-9]*\.[0-9]*\.[0-9]*' | head -1)
if python3 -c "import h5py, sys; sys.exit(h5py.version.hdf5_version != '$system_hdf5')" 2>/dev/null; then
  python3 - "$dir/h5py.h5" <<'PY' || fail "h5py could not write and read through the filter"
import sys, numpy as np, h5py
a = (np.sin(np.arange(24000) * 0.01) * 30).astype(np.float32).reshape(20, 30, 40)
with h5py.File(sys.argv[1], "w") as f:  # abs 0.01, as above
    f.create_dataset("t", data=a, chunks=(10, 30, 40), compression=305, compression_opts=(1, 1202590843, 1065646817))
with h5py.File(sys.argv[1]) as f:
    back = f["t"][...]
    assert float(np.abs(back - a).max()) <= 0.01 and f["t"].id.get_storage_size() < a.nbytes
PY
  echo "h5repack, h5diff, h5dump and h5py with the fzg filter: ok"
elif [ -z "$py" ]; then
  echo "h5repack, h5diff and h5dump with the fzg filter: ok (h5py part skipped: no python3 with numpy)"
else
  echo "h5repack, h5diff and h5dump with the fzg filter: ok (no h5py built against HDF5 $system_hdf5)"
fi
# NetCDF-4 through its own tools (netcdf-bin): nccopy -F puts the filter on a variable ncgen
# wrote (abs 0.01 as above; set_local adds the type and chunk shape), ncdump -hs shows it as
# the variable's _Filter, and ncdump reads the values back within 0.01.
if [ -n "$py" ] && command -v ncgen >/dev/null && command -v nccopy >/dev/null && command -v ncdump >/dev/null; then
  python3 - "$dir/f.cdl" <<'PY'
import sys, numpy as np
a = (np.sin(np.arange(4800) * 0.01) * 30).astype(np.float32)
with open(sys.argv[1], "w") as f:
    f.write("netcdf f {\ndimensions:\n  z = 4 ; y = 30 ; x = 40 ;\nvariables:\n  float temp(z, y, x) ;\ndata:\n temp = " +
            ", ".join(repr(float(v)) for v in a) + " ;\n}\n")
PY
  ncgen -k nc4 -o "$dir/f.nc" "$dir/f.cdl" || fail "ncgen could not write a NetCDF-4 file"
  nccopy -F "temp,305,1,1202590843,1065646817" "$dir/f.nc" "$dir/g.nc" || fail "nccopy could not apply the filter"
  ncdump -hs "$dir/g.nc" >"$dir/g.cdl" || fail "ncdump could not read the filtered file's header"
  grep -q '_Filter = "305,' "$dir/g.cdl" || fail "ncdump does not show the filter on the variable"
  [ "$(stat -c %s "$dir/g.nc")" -lt "$(stat -c %s "$dir/f.nc")" ] || fail "the filtered NetCDF file is not smaller"
  ncdump -v temp "$dir/f.nc" >"$dir/f.txt" && ncdump -v temp "$dir/g.nc" >"$dir/g.txt" || fail "ncdump could not read"
  python3 - "$dir/f.txt" "$dir/g.txt" <<'PY' || fail "NetCDF values read through the filter are not within 0.01"
import re, sys
def values(path):
    text = open(path).read().split("temp =")[-1]
    return [float(v) for v in re.findall(r"-?[0-9.]+(?:e[-+]?[0-9]+)?", text.split(";")[0])]
a, b = values(sys.argv[1]), values(sys.argv[2])
assert len(a) == len(b) == 4800 and max(abs(x - y) for x, y in zip(a, b)) <= 0.01 + 1e-6  # ncdump prints 7 digits
PY
  echo "nccopy and ncdump (NetCDF-4) with the fzg filter: ok"
else
  echo "nccopy and ncdump (NetCDF-4): skipped (needs netcdf-bin and a python3 with numpy)"
fi
