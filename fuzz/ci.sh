#!/usr/bin/env bash
# CI's fuzz step: builds fuzz_decompress with clang (installing clang and its libFuzzer runtime
# from Debian when missing), replays every seed and every past finding once (each a
# regression case: a crash or sanitizer report fails the step), then fuzzes for a bounded
# time, $FZG_FUZZ_SECONDS (default 60), writing new inputs to a scratch folder only.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FZG_FUZZ_SECONDS:-60}
install() {
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
command -v clang++ >/dev/null || install clang
major=$(clang++ --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)
dpkg -s "libclang-rt-$major-dev" >/dev/null 2>&1 || install "libclang-rt-$major-dev"

cmake -S . -B build-fuzz-ci -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DFZG_CUDA=OFF -DFZG_BUILD_TESTS=OFF \
  -DFZG_BUILD_FUZZERS=ON >/dev/null
cmake --build build-fuzz-ci -j "$(nproc)" --target fuzz_decompress
fuzzer=build-fuzz-ci/fuzz_decompress
"$fuzzer" -runs=0 fuzz/corpus/decompress fuzz/corpus/regressions 2>&1 | tail -2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=10 -dict=fuzz/decompress.dict \
  -artifact_prefix="$scratch/" "$scratch" fuzz/corpus/decompress fuzz/corpus/regressions 2>&1 | tail -3
