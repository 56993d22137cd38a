#!/usr/bin/env bash
# Quick start: build, then compress a built-in turbulent sample field (256x256x128 f32) at
# rel 1e-3 and print ratio, PSNR, max error and throughput. Uses the GPU when one is present.
# The build's progress goes to standard error; standard output is the report alone.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${FZG_BUILD_DIR:-build}"
bash scripts/build.sh fzg >&2  # the tool alone: no need to wait for the tests
"$build/fzg" eval --gen turbulent -l 256x256x128 -m rel -e 1e-3 -c configs/fz.json "$@"
