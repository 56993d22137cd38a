#!/usr/bin/env bash
# Device calls with no device build: this machine's builds for sm_90, packed here and carried.
#   bash scripts/device-quick.sh pack [NAME] [--fzg-only]   here: build/fzg and
#        build/tests/fzg_tests (or fzg alone) into .carry/NAME.tgz (default NAME: main; ~40 MB
#        with the tests, ~21 MB without; ignored). Pack a second build under another name (a
#        branch's, --fzg-only) to compare the two in one call.
#   bash scripts/device-quick.sh run FILTER [SETTING ...]    on the device (carry [".carry",
#        ".device-tools"]): each pack's fzg_tests with the GPU and the gtest filter, then
#        scripts/bench-gpulz.sh with each setting, every pack in turn: a setting is a config,
#        or C:W:S[:OFFSET_BITS] for configs/gpulz.json's graph with those (gpulz-config.sh); with
#        SANITIZE=memcheck (or racecheck) the tests run under compute-sanitizer too; with $OUT
#        set (the device tool sets it) all of it also goes to $OUT/device-quick.log as it comes
# A fresh device machine builds fzg for ~270 s of a session's ~1800 s of device time; the
# binaries built here run there as they are (older glibc and HDF5 1.10 here, libcudart from
# the device's toolkit). device-check.sh stays the whole check, built on the device.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() {
  echo "usage: device-quick.sh pack [NAME] [--fzg-only] | run FILTER [SETTING ...]" >&2
  exit 2
}
case "${1:-}" in
  pack)
    name=main files=(build/fzg build/tests/fzg_tests)
    for arg in "${@:2}"; do
      case "$arg" in
        --fzg-only) files=(build/fzg) ;;
        -*) usage ;;
        *) name=$arg ;;
      esac
    done
    grep -q '^CMAKE_CUDA_ARCHITECTURES.*=.*90' build/CMakeCache.txt ||
      { echo "device-quick.sh: build/ is not configured for sm_90 (-DCMAKE_CUDA_ARCHITECTURES=90)" >&2; exit 1; }
    mkdir -p .carry
    tar czf ".carry/$name.tgz.tmp" --transform "s#^build/\(tests/\)\?#$name/#" "${files[@]}"
    mv ".carry/$name.tgz.tmp" ".carry/$name.tgz"
    ls -l .carry/*.tgz ;;
  run)
    [ $# -ge 2 ] || usage
    # Everything also goes to $OUT as it comes: a call that runs past its limit returns what it
    # had printed (its output_tail is then empty).
    if [ -n "${OUT:-}" ]; then exec > >(tee -a "$OUT/device-quick.log") 2>&1; fi
    filter=$2
    shift 2
    export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    packs=()
    for pack in .carry/*.tgz; do
      tar xzf "$pack" -C "$work"
      packs+=("$(basename "$pack" .tgz)")
    done
    [ ${#packs[@]} -gt 0 ] || { echo "device-quick.sh: no packs in .carry/" >&2; exit 1; }
    for name in "${packs[@]}"; do
      [ -x "$work/$name/fzg_tests" ] || continue
      echo "== $name: fzg_tests --gtest_filter='$filter'"
      "$work/$name/fzg_tests" --gtest_filter="$filter" --gtest_brief=1 | tail -5
      if [ -n "${SANITIZE:-}" ]; then
        echo "== $name: the same under compute-sanitizer --tool $SANITIZE"
        compute-sanitizer --tool "$SANITIZE" --error-exitcode 9 "$work/$name/fzg_tests" --gtest_filter="$filter" \
          --gtest_brief=1 | grep -E "SUMMARY|PASSED|FAILED"
      fi
    done
    for setting in "$@"; do
      config=$setting
      if [ ! -f "$setting" ]; then  # chunk:window:symbol[:offset_bits]
        config=$work/${setting//:/-}.json
        bash scripts/gpulz-config.sh ${setting//:/ } >"$config"
      fi
      for name in "${packs[@]}"; do
        echo "== $name: $setting"
        bash scripts/bench-gpulz.sh "$work/$name/fzg" "${FZG_TOOLS:-.device-tools}/gen_field.py" "$config"
      done
    done ;;
  *) usage ;;
esac
