#!/usr/bin/env bash
# Configures and builds fzg into build/ (Release). The CUDA backend is compiled when nvcc is
# found (sm_90 by default; set CUDA_ARCHS to change it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}" >/dev/null
cmake --build build -j "$(nproc)"
