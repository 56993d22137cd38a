#!/usr/bin/env bash
# Builds and runs the whole test suite (GPU tests skip cleanly where no device exists).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
ctest --test-dir build -j "$(nproc)" --output-on-failure --timeout 900
