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
echo "h5repack, h5diff and h5dump with the fzg filter: ok"
