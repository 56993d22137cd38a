# Sourced by the device profiling scripts: builds build-device's fzg for sm_90 and writes a
# turbulent f32 cube of side $side into a fresh $work folder. Sets fzg, work and dims.
cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DFZG_CUDA=ON >/dev/null
cmake --build build-device -j "$(nproc)" --target fzg >/dev/null
fzg=build-device/fzg
work=$(mktemp -d)
dims=${side}x${side}x${side}
"$fzg" gen --kind turbulent -l "$dims" -o "$work/field.f32"
