#!/usr/bin/env bash
# Device calls with no device build: this machine's build for sm_90, packed here and carried.
#   bash scripts/device-quick.sh pack                  here: build/fzg and build/tests/fzg_tests
#                                                      into .carry/bins.tgz (~44 MB, ignored)
#   bash scripts/device-quick.sh run FILTER [SETTING ...]  on the device (carry [".carry",
#                                                      ".device-tools"]): fzg_tests with the GPU
#                                                      and the gtest filter, then
#                                                      scripts/bench-gpulz.sh with each setting:
#                                                      a config, or C:W:S[:OFFSET_BITS] for
#                                                      configs/gpulz.json with those parameters
# A fresh device machine builds fzg for ~270 s of a session's ~1800 s of device time; the
# binaries built here run there as they are (older glibc and HDF5 1.10 here, libcudart from
# the device's toolkit). device-check.sh stays the whole check, built on the device.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  pack)
    grep -q '^CMAKE_CUDA_ARCHITECTURES.*=.*90' build/CMakeCache.txt ||
      { echo "device-quick.sh: build/ is not configured for sm_90 (-DCMAKE_CUDA_ARCHITECTURES=90)" >&2; exit 1; }
    mkdir -p .carry
    tar czf .carry/bins.tgz.tmp build/fzg build/tests/fzg_tests
    mv .carry/bins.tgz.tmp .carry/bins.tgz
    ls -l .carry/bins.tgz ;;
  run)
    [ $# -ge 2 ] || { echo "usage: device-quick.sh run FILTER [SETTING ...]" >&2; exit 2; }
    filter=$2; shift 2
    tar xzf .carry/bins.tgz
    export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
    build/tests/fzg_tests --gtest_filter="$filter" --gtest_brief=1 | tail -5
    for setting in "$@"; do
      config=$setting
      if [ ! -f "$setting" ]; then  # chunk:window:symbol[:offset_bits]
        IFS=: read -r C W S B <<<"$setting"
        config=$(mktemp --suffix .json)
        sed "s/\"chunk\": 2048, \"window\": 64, \"symbol\": 2/\"chunk\": $C, \"window\": $W, \"symbol\": $S${B:+, \"offset_bits\": $B}/" \
          configs/gpulz.json >"$config"
        grep -q "\"chunk\": $C," "$config" || { echo "device-quick.sh: configs/gpulz.json's stage line changed" >&2; exit 1; }
      fi
      echo "== $setting"
      bash scripts/bench-gpulz.sh build/fzg "${FZG_TOOLS:-.device-tools}/gen_field.py" "$config"
    done ;;
  *) echo "usage: device-quick.sh pack | run FILTER [SETTING ...]" >&2; exit 2 ;;
esac
