#!/usr/bin/env bash
# The Python package on a GPU machine without scikit-build-core or a network: builds the
# extension with CMake (FZG_PYTHON=ON, sm_90), runs the C API test and every Python test with
# the GPU present (the copy counter preloaded where test_cuda.py asks), then the benchmarks:
# fzg bench (kernel-only) and Python's overhead over the C API on a 100 M-value cupy array.
# Logs go to $OUT (or ./device-out).   bash python/bench/device_check.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-device-out}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
python=$(command -v python3)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
start=$SECONDS
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFZG_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DFZG_PYTHON=ON -DPython_EXECUTABLE="$python" >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build build -j "$(nproc)" --target fzg fzg_python fzg_capi_test fzg_capi_device_timing \
  fzg_cuda_copy_counter >"$out/build.log" 2>&1 || { grep -B2 -A10 -m3 "error" "$out/build.log"; exit 1; }
echo "built in $((SECONDS - start)) s"
./build/tests/fzg_capi_test 2>&1 | tee "$out/capi.log"
PYTHONPATH=build/python FZG_COPY_COUNTER=$PWD/build/tests/libfzg_cuda_copy_counter.so \
  "$python" -m pytest -q -rs -p no:cacheprovider tests/python 2>&1 | tee "$out/pytest.log" | tail -25
./build/fzg bench --gen turbulent --sizes 100M --device cuda 2>&1 | tee "$out/bench.log" | tail -15
PYTHONPATH=build/python "$python" python/bench/device_overhead.py --fzg build/fzg \
  --capi build/fzg_capi_device_timing --repeat 20 --profile 2>&1 | tee "$out/overhead.log"
PYTHONPATH=build/python "$python" python/bench/device_overhead.py --fzg build/fzg \
  --capi build/fzg_capi_device_timing --repeat 20 --json >"$out/overhead.json" 2>&1
echo "done in $((SECONDS - start)) s"
