#!/usr/bin/env bash
# A/B timing on one machine: lent GPUs differ by up to 1.5x, so compare two builds only
# within one run. The baseline is a source tree beside the working tree (an ignored folder):
#   rm -rf .baseline && mkdir .baseline && git archive HEAD | tar -x -C .baseline
#   bash scripts/device-ab.sh [baseline-dir] [rounds] [fzg bench arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-.baseline} rounds=${2:-2}
shift $(( $# < 2 ? $# : 2 ))
args=("$@")
[[ ${#args[@]} -eq 0 ]] && args=(--gen turbulent --sizes 100M -m rel -e 1e-3 --repeat 20)
configure() { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DFZG_CUDA=ON >/dev/null; }
configure "$base" build-base
configure . build-device
cmake --build build-base -j "$(nproc)" --target fzg >/dev/null &
cmake --build build-device -j "$(nproc)" --target fzg >/dev/null
wait
for ((r = 1; r <= rounds; ++r)); do
  for b in build-base build-device; do
    echo "$b: $("./$b/fzg" bench --device cuda "${args[@]}" 2>&1 | grep -E 'kernel-only|end-to-end|stages' | tr -s ' ' | tr '\n' ' ')"
  done
done
