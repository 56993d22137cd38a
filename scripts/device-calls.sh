#!/usr/bin/env bash
# The CUDA calls of one GPU compress and one decompress, each with its host time (device
# machine): what a small field's call spends on the host between its kernels.
#   bash scripts/device-calls.sh [FIELD DIMS] [rel]     (default: a 128^3 turbulent f32 cube, 1e-3)
# $FZG_BENCH_ARGS goes to the bench as it is (e.g. "--fill 1e20").
# Builds build-device's fzg and fzg_cuda_calls (bench/cuda_calls.cc: an LD_PRELOAD library
# that times every CUDA runtime call), runs `fzg bench --repeat 5` under it and prints the last timed
# kernel-only compress and decompress call: each CUDA call in order (its start from the call's
# start and its host time, in us), then the calls by name.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ge 2 ]; then
  fzg=build-device/fzg field=$1 dims=$2 rel=${3:-1e-3} work=$(mktemp -d)
  cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DFZG_CUDA=ON >/dev/null
  cmake --build build-device -j "$(nproc)" --target fzg >/dev/null
else
  side=128 rel=${1:-1e-3}
  source scripts/device-field.sh
  field=$work/field.f32
fi
cmake --build build-device --target fzg_cuda_calls >/dev/null
repeat=5
FZG_CUDA_CALLS=$work/calls.log LD_PRELOAD=$(pwd)/build-device/libfzg_cuda_calls.so \
  "$fzg" bench --device cuda -i "$field" -l "$dims" -m rel -e "$rel" --repeat $repeat --warmup 2 ${FZG_BENCH_ARGS:-} | grep kernel-only
# The bench times `repeat` copies, then compresses, then decompresses, each between an event
# record and an eventElapsedTime: the last of each loop is a call with no warm-up in it.
python3 - "$work/calls.log" "$repeat" <<'PY'
import sys
calls = [l.split() for l in open(sys.argv[1])]
repeat = int(sys.argv[2])
segments, current = [], []
for c in calls:
    current.append(c)
    if c[2] == "eventElapsedTime":
        segments.append(current)
        current = []
for what, index in (("compress", 2 * repeat - 1), ("decompress", 3 * repeat - 1)):
    seg = segments[index]
    # The call: from the timer's start record (the first call) to its stop record (the last
    # eventRecord before the eventSynchronize that ends the segment).
    t0 = float(seg[0][0])
    end = max(i for i, c in enumerate(seg) if c[2] == "eventSynchronize")
    print(f"== {what}: {end - 1} CUDA calls, {float(seg[end - 1][0]) - t0:.1f} us from the start record to the stop record")
    by = {}
    for c in seg[1:end - 1]:
        print(f"  {float(c[0]) - t0:8.1f} {float(c[1]):6.2f}  {c[2]:22} {c[3]} {c[4]}")
        n, t = by.get(c[2], (0, 0.0))
        by[c[2]] = (n + 1, t + float(c[1]))
    for name, (n, t) in sorted(by.items(), key=lambda x: -x[1][1]):
        print(f"  {name:22} {n:3} calls {t:7.1f} us")
PY
rm -rf "$work"
