#!/usr/bin/env bash
# A/B timing on one machine: lent GPUs differ by up to 1.5x, so compare two builds only
# within one run. The baseline is a source tree beside the working tree (an ignored folder):
#   rm -rf .baseline && mkdir .baseline && git archive HEAD | tar -x -C .baseline
#   bash scripts/device-ab.sh [baseline-dir] [rounds] [fzg bench arguments...]
# Changes under ~5 % need several rounds (3 or more) and --repeat 100.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-.baseline} rounds=${2:-2}
shift $(( $# < 2 ? $# : 2 ))
args=("$@")
[[ ${#args[@]} -eq 0 ]] && args=(--gen turbulent --sizes 100M -m rel -e 1e-3 --repeat 20)
source scripts/device-builds.sh
# The order alternates from round to round: the same binary's medians move by 5-10 % between
# runs on one machine (p2d, p25), and a fixed order would lend the second build a warmer GPU.
for ((r = 1; r <= rounds; ++r)); do
  order=(build-base build-device)
  ((r % 2 == 0)) && order=(build-device build-base)
  for b in "${order[@]}"; do
    echo "round $r $b: $("./$b/fzg" bench --device cuda "${args[@]}" 2>&1 | grep -E 'kernel-only|end-to-end|stages' | tr -s ' ' | tr '\n' ' ')"
  done
done
