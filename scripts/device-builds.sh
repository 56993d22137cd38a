# Sourced by the device A/B scripts: builds the baseline tree $base into build-base and the
# working tree into build-device (fzg alone, for sm_90), side by side.
configure() { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DFZG_CUDA=ON >/dev/null; }
configure "$base" build-base
configure . build-device
cmake --build build-base -j "$(nproc)" --target fzg >/dev/null &
cmake --build build-device -j "$(nproc)" --target fzg >/dev/null
wait
