#!/usr/bin/env bash
# Regenerates the seed corpus of fuzz_decompress in fuzz/corpus/decompress/ (see README.md).
#
#   bash fuzz/make_corpus.sh [OUTPUT_DIR]
#
# FZG=path/to/fzg selects the CLI (default build-fuzz-cli/fzg, configured and built here,
# CPU only, when missing). The inputs are deterministic (fzg gen with fixed seeds, and raw
# values written by python3), so the same library writes the same corpus. Every file is
# checked to decompress before it is kept; identical files are kept once.
#
# Seeds: every config in configs/ and the built-in default x f32, f64 x 1D, 2D, 3D x abs, rel,
# psnr, lossless; lossless u8, u16, u32, i32; hazard fields (NaN, +-Inf, values near the type's
# maximum, subnormals, -0, spikes that escape the codes) for a non-empty outlier stream; a
# constant field (outlier stream of counts only); the graphs in fuzz/configs/ (other zero-block
# widths, other stage chains, the input stored as is); and crafted files that a writer does not
# make, with valid checksums (an empty outlier stream).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="${1:-$here/corpus/decompress}"

if [[ -z "${FZG:-}" ]]; then
  FZG="$root/build-fuzz-cli/fzg"
  if [[ ! -x "$FZG" ]]; then
    cmake -S "$root" -B "$root/build-fuzz-cli" -G Ninja -DFZG_CUDA=OFF -DFZG_BUILD_TESTS=OFF >/dev/null
    cmake --build "$root/build-fuzz-cli" --target fzg -j2
  fi
fi
[[ -x "$FZG" ]] || { echo "make_corpus.sh: no fzg CLI at $FZG" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
rm -f "$out"/*.fzg

# Raw inputs that `fzg gen` does not make.
python3 - "$work" <<'EOF'
import math, struct, sys
work = sys.argv[1]

def smooth(n):
    return [10.0 * math.sin(0.05 * i) + 0.001 * i for i in range(n)]

def hazards(n, big):
    v = smooth(n)
    special = [float("nan"), float("inf"), float("-inf"), big, -big, 5e-324 if big > 1e40 else 1e-45,
               -0.0, 1e4, -1e4, 3e3, float("nan")]
    for k, x in enumerate(special):
        v[(37 * k + 11) % n] = x
    return v

for n in (1500, 1200, 1280, 300, 240):  # the value counts of the shapes below
    with open(f"{work}/hazard-{n}.f32", "wb") as f:
        f.write(struct.pack(f"<{n}f", *hazards(n, 3.0e38)))
    with open(f"{work}/hazard-{n}.f64", "wb") as f:
        f.write(struct.pack(f"<{n}d", *hazards(n, 1.0e300)))
n = 240
with open(f"{work}/ints-{n}.u8", "wb") as f:
    f.write(bytes((i * 7 + (i // 16) * 3) % 256 if i % 50 else 0 for i in range(n)))
with open(f"{work}/ints-{n}.u16", "wb") as f:
    f.write(struct.pack(f"<{n}H", *[(i * 257) % 65536 if i % 40 else 65535 for i in range(n)]))
with open(f"{work}/ints-{n}.u32", "wb") as f:
    f.write(struct.pack(f"<{n}I", *[0 if i % 3 else (i * 2654435761) % 2**32 for i in range(n)]))
with open(f"{work}/ints-{n}.i32", "wb") as f:
    f.write(struct.pack(f"<{n}i", *[(-1) ** i * i * 1000 if i % 64 else -2**31 for i in range(n)]))
with open(f"{work}/noise-{n}.u8", "wb") as f:  # incompressible: zero-block stores it raw
    x = 12345
    data = bytearray()
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2**31
        data.append(x >> 23)
    f.write(bytes(data))
EOF

count=0
# compress NAME RAW TYPE DIMS MODE BOUND [CONFIG]
compress() {
  local name="$1" raw="$2" type="$3" dims="$4" mode="$5" bound="$6" config="${7:-}"
  local args=(compress -i "$raw" -t "$type" -l "$dims" -m "$mode" -e "$bound" --device cpu -o "$work/$name.fzg")
  [[ -n "$config" ]] && args+=(-c "$config")
  "$FZG" "${args[@]}" 2>/dev/null
  "$FZG" decompress -i "$work/$name.fzg" -o "$work/check.out" --device cpu
  count=$((count + 1))
}

gen() {  # gen KIND TYPE DIMS FILE
  "$FZG" gen --kind "$1" -t "$2" -l "$3" --seed 7 -o "$4"
}

shapes=(1500 40x30 16x10x8)        # 1D, 2D, 3D lossy fields
small_shapes=(300 20x15 8x6x5)     # lossless fields stay small
declare -A values=([1500]=1500 [40x30]=1200 [16x10x8]=1280 [300]=300 [20x15]=300 [8x6x5]=240)
bound_of() { case "$1" in abs) echo 1e-3 ;; rel) echo 1e-3 ;; psnr) echo 60 ;; lossless) echo 0 ;; esac; }

# Every config x dtype x rank x mode on a turbulent field.
configs=(default)
for c in "$root"/configs/*.json; do configs+=("$c"); done
for config in "${configs[@]}"; do
  cname="$(basename "$config" .json)"
  cpath="$([[ "$config" == default ]] && echo "" || echo "$config")"
  for type in f32 f64; do
    for rank in 0 1 2; do
      for mode in abs rel psnr lossless; do
        if [[ "$mode" == lossless ]]; then dims="${small_shapes[$rank]}"; else dims="${shapes[$rank]}"; fi
        gen turbulent "$type" "$dims" "$work/in.raw"
        compress "$cname-$type-$((rank + 1))d-$mode" "$work/in.raw" "$type" "$dims" "$mode" "$(bound_of "$mode")" "$cpath"
      done
    done
  done
done

# Hazard values: a non-empty outlier stream (exact values and escapes), every rank and mode.
for type in f32 f64; do
  for rank in 0 1 2; do
    for mode in abs rel psnr lossless; do
      if [[ "$mode" == lossless ]]; then dims="${small_shapes[$rank]}"; else dims="${shapes[$rank]}"; fi
      compress "hazard-$type-$((rank + 1))d-$mode" "$work/hazard-${values[$dims]}.$type" "$type" "$dims" "$mode" \
        "$(bound_of "$mode")"
    done
  done
done

# A tight bound on noise: many escapes and exact points.
gen noisy f32 8x6x5 "$work/in.raw"
compress "noisy-f32-3d-abs-tight" "$work/in.raw" f32 8x6x5 abs 1e-6
gen noisy f64 300 "$work/in.raw"
compress "noisy-f64-1d-rel-tight" "$work/in.raw" f64 300 rel 1e-9

# A constant field: the outlier stream holds its two counts only.
for type in f32 f64; do
  gen constant "$type" 40x30 "$work/in.raw"
  compress "constant-$type-2d-rel" "$work/in.raw" "$type" 40x30 rel 1e-3
  compress "constant-$type-2d-abs" "$work/in.raw" "$type" 40x30 abs 1e-3
done

# Integer types, lossless only, every rank.
for type in u8 u16 u32 i32; do
  for rank in 0 1 2; do
    compress "int-$type-$((rank + 1))d-lossless" "$work/ints-240.$type" "$type" "$(echo 240 12x20 4x6x10 | cut -d' ' -f$((rank + 1)))" lossless 0
  done
done
compress "noise-u8-1d-lossless-raw" "$work/noise-240.u8" u8 240 lossless 0

# The fuzz-only graphs: other widths and chains.
for config in "$here"/configs/*.json; do
  cname="fuzzcfg-$(basename "$config" .json)"
  compress "$cname-f32-3d-rel-hazard" "$work/hazard-240.f32" f32 8x6x5 rel 1e-3 "$config"
  gen turbulent f64 300 "$work/in.raw"
  compress "$cname-f64-1d-abs" "$work/in.raw" f64 300 abs 1e-3 "$config"
  compress "$cname-u16-2d-lossless" "$work/ints-240.u16" u16 12x20 lossless 0 "$config"
done

# Crafted files with valid checksums: what a writer never makes.
python3 - "$work" <<'EOF'
import struct, sys
work = sys.argv[1]
M = (1 << 64) - 1
SALT = 0x9E3779B97F4A7C15

def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)

def fzg64(b):
    s = 0
    for i in range(0, len(b), 8):
        s += mix(int.from_bytes(b[i:i + 8].ljust(8, b"\0"), "little") ^ ((i // 8) * SALT & M))
    return (s + mix(len(b))) & M

def pad8(n):
    return (n + 7) & ~7

def parse(f):
    g, = struct.unpack_from("<I", f, 12)
    stages, streams = struct.unpack_from("<II", f, 80)
    pos = 112 + pad8(g)
    for _ in range(stages):
        k, = struct.unpack_from("<I", f, pos + 4)
        pos += 8 + 8 * k
    table = pos
    sizes = [struct.unpack_from("<Q", f, table + 16 * s)[0] for s in range(streams)]
    offsets, off = [], table + 16 * streams
    for n in sizes:
        offsets.append(off)
        off += pad8(n)
    return table, sizes, offsets

def build(f, table, streams):
    """The metadata of f (up to the stream table) with these stream payloads, checksums redone."""
    meta = bytearray(f[:table + 16 * len(streams)])
    for s, data in enumerate(streams):
        struct.pack_into("<QQ", meta, table + 16 * s, len(data), fzg64(data))
    struct.pack_into("<Q", meta, 88, sum(pad8(len(d)) for d in streams))
    struct.pack_into("<Q", meta, 96, 0)
    struct.pack_into("<Q", meta, 96, fzg64(bytes(meta)))
    return bytes(meta) + b"".join(d + b"\0" * (pad8(len(d)) - len(d)) for d in streams)

for src, dst in (("hazard-f32-3d-rel", "crafted-empty-outliers-f32-3d"),
                 ("default-f64-1d-abs", "crafted-empty-outliers-f64-1d")):
    f = open(f"{work}/{src}.fzg", "rb").read()
    table, sizes, offsets = parse(f)
    streams = [f[o:o + n] for o, n in zip(offsets, sizes)]
    streams[1] = b""  # predict.outliers: no bytes at all, not even its counts
    open(f"{work}/{dst}.fzg", "wb").write(build(f, table, streams))
EOF

# Keep one file of each content, named after the first seed that made it.
kept=0
declare -A seen=()
for f in $(ls "$work"/*.fzg | sort); do
  sum="$(sha1sum "$f" | cut -d' ' -f1)"
  [[ -n "${seen[$sum]:-}" ]] && continue
  seen[$sum]=1
  cp "$f" "$out/"
  kept=$((kept + 1))
done
echo "make_corpus.sh: $count files compressed, $kept distinct seeds (with crafted ones) in $out"
du -sh "$out" | cut -f1
