#!/usr/bin/env bash
# The fzg filter through HDF5's own tools, as a user runs them: h5repack takes the filter off
# a file the filter test wrote (decompressing every chunk) and puts it back on with
# `-f UD=305,...` (abs 0.01), h5diff finds the values within 0.01 of the unfiltered ones,
# and h5dump shows the filter. Exits 77 (skipped) without h5repack, h5diff and h5dump.
#   HDF5_PLUGIN_PATH=<build>/plugins bash tests/hdf5/tools_test.sh FILTERED.h5
set -euo pipefail
filtered=$1
for tool in h5repack h5diff h5dump; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (hdf5-tools)"; exit 77; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "hdf5 tools test: $*" >&2; exit 1; }
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
else
  echo "h5repack, h5diff and h5dump with the fzg filter: ok (no h5py built against HDF5 $system_hdf5)"
fi
