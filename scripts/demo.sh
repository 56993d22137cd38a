#!/usr/bin/env bash
# Quick start: build, then compress a built-in turbulent sample field (256x256x128 f32) at
# rel 1e-3 and print ratio, PSNR, max error and throughput. Uses the GPU when one is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
./build/fzg eval --gen turbulent -l 256x256x128 -m rel -e 1e-3 -c configs/fz.json "$@"
