#!/usr/bin/env bash
# Regenerates the seed corpus of fuzz_decompress in fuzz/corpus/decompress/ (see README.md).
#
#   bash fuzz/make_corpus.sh [OUTPUT_DIR]
#
# FZG=path/to/fzg selects the CLI (default build-fuzz-cli/fzg, configured when missing and
# brought up to date here, CPU only: a stale CLI would not know the newest stages). The inputs are deterministic (fzg gen with fixed seeds, and raw
# values written by python3), so the same library writes the same corpus. Every file is
# checked to decompress before it is kept; identical files are kept once.
#
# Seeds (format version 4, as the CLI writes it): every config in configs/ and the built-in
# default x f32, f64 x 1D, 2D, 3D x abs, rel, psnr, lossless; lossless u8, u16, u32, i32; hazard
# fields (NaN, +-Inf, values near the type's maximum, subnormals, -0, spikes that escape the
# codes) for a non-empty outlier stream; a constant field (outlier stream of counts only); the
# graphs in fuzz/configs/ (other zero-block widths, other stage chains, the input stored as is);
# chunked files (2 to 60 chunks, from configs with "chunk_values": a short last chunk, raw and
# coded chunks in one file, outliers in some chunks only); and crafted files that a writer does
# not make, with valid checksums (an empty outlier stream, alone and in one chunk of several;
# a zero-block stored raw in a chunk where a writer codes it).
#
# The version 1, 2 and 3 seeds (v1-*.fzg, v2-*.fzg, v3-*.fzg: files of the earlier formats,
# which readers still take) are kept as they are: no writer makes them any more. For another
# OUTPUT_DIR they are copied there.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="${1:-$here/corpus/decompress}"

if [[ -z "${FZG:-}" ]]; then
  FZG="$root/build-fuzz-cli/fzg"
  [[ -f "$root/build-fuzz-cli/CMakeCache.txt" ]] ||
    cmake -S "$root" -B "$root/build-fuzz-cli" -G Ninja -DFZG_CUDA=OFF -DFZG_BUILD_TESTS=OFF >/dev/null
  cmake --build "$root/build-fuzz-cli" --target fzg -j2 >/dev/null
fi
[[ -x "$FZG" ]] || { echo "make_corpus.sh: no fzg CLI at $FZG" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
if [[ "$(cd "$out" && pwd)" != "$here/corpus/decompress" ]]; then
  cp "$here"/corpus/decompress/v[123]-*.fzg "$out"/
fi

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

for n in (1500, 1200, 1280, 300, 240, 1600, 1776):  # the value counts of the shapes below
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
for name, shape, fmt in (("land-3d", (32, 8, 24), "f"), ("land-2d", (40, 96, 1), "d")):
    # Land (1e4, a fill value of fuzz/configs/fill-values.json) constant along the slowest
    # axis: Lorenzo's mask repeats whole tiles from layer to layer (repeat runs).
    nx, ny, nz = shape
    v = []
    for z in range(nz):
        for y in range(ny):
            for x in range(nx):
                land = (x + 2 * (y if nz > 1 else 0)) % 23 < 9
                v.append(1e4 if land else 10.0 + 0.01 * x + 0.02 * y + 0.005 * z)
    with open(f"{work}/{name}.{'f32' if fmt == 'f' else 'f64'}", "wb") as f:
        f.write(struct.pack(f"<{len(v)}{fmt}", *v))
with open(f"{work}/mixed-480.u8", "wb") as f:  # noise (chunks stored raw), then short runs
    x = 777
    data = bytearray()
    for i in range(480):
        x = (x * 1103515245 + 12345) % 2**31
        data.append(x >> 23 if i < 192 else (i // 24) % 3)
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
# Masks whose tiles repeat the tile layer before (the mask stream's repeat runs).
compress "fuzzcfg-fill-values-land-f32-3d-rel" "$work/land-3d.f32" f32 32x8x24 rel 1e-3 "$here/configs/fill-values.json"
compress "fuzzcfg-fill-values-land-f64-2d-abs" "$work/land-2d.f64" f64 40x96 abs 1e-3 "$here/configs/fill-values.json"

# Chunked files: a config's "chunk_values" cuts the field into chunks of whole slices of the
# slowest axis (whole tile rows for Lorenzo: 2048 values in 1D, 32 rows in 2D, 8 planes in 3D;
# any number of slices where no stage asks for more, as in lossless mode), each chunk with its
# own stage records and streams. chunked CONFIG VALUES writes that config with chunk_values
# VALUES and prints its path.
chunked() {
  local config="$1" values="$2"
  local path="$work/chunked-$(basename "$config" .json)-$values.json"
  python3 -c 'import json, sys
config = json.load(open(sys.argv[1]))
config["chunk_values"] = int(sys.argv[2])
json.dump(config, open(sys.argv[3], "w"), indent=1)' "$config" "$values" "$path"
  echo "$path"
}
fz="$root/configs/fz.json"
c16="$(chunked "$fz" 16)"  # the least there is: one tile row (lossy) or one slice (lossless) a chunk
for type in f32 f64; do
  gen turbulent "$type" 16x100 "$work/in.raw"  # 4 chunks: 32, 32, 32, 4 rows
  compress "chunk16-$type-2d-rel" "$work/in.raw" "$type" 16x100 rel 1e-3 "$c16"
  gen turbulent "$type" 8x6x37 "$work/in.raw"  # 5 chunks: 8, 8, 8, 8, 5 planes
  compress "chunk16-$type-3d-psnr" "$work/in.raw" "$type" 8x6x37 psnr 60 "$c16"
  gen turbulent "$type" 20x15 "$work/in.raw"   # lossless: 15 chunks of one row
  compress "chunk16-$type-2d-lossless" "$work/in.raw" "$type" 20x15 lossless 0 "$c16"
  compress "chunk16-hazard-$type-2d-abs" "$work/hazard-1600.$type" "$type" 16x100 abs 1e-3 "$c16"
  compress "chunk384-hazard-$type-3d-rel" "$work/hazard-1776.$type" "$type" 8x6x37 rel 1e-3 "$(chunked "$fz" 384)"
done
gen smooth f32 5000 "$work/in.raw"             # 3 chunks: 2048, 2048, 904 values
compress "chunk16-f32-1d-abs" "$work/in.raw" f32 5000 abs 1e-3 "$c16"
gen smooth f64 5000 "$work/in.raw"
compress "chunk16-f64-1d-rel" "$work/in.raw" f64 5000 rel 1e-3 "$c16"
gen turbulent f32 16x128 "$work/in.raw"        # 4 chunks of 32 rows
compress "chunk512-f32-2d-abs" "$work/in.raw" f32 16x128 abs 1e-3 "$(chunked "$fz" 512)"
gen constant f64 16x128 "$work/in.raw"
compress "chunk512-constant-f64-2d-rel" "$work/in.raw" f64 16x128 rel 1e-3 "$(chunked "$fz" 512)"
gen turbulent f32 64x100 "$work/in.raw"        # 4 chunks: 32, 32, 32, 4 rows
compress "chunk2048-f32-2d-rel" "$work/in.raw" f32 64x100 rel 1e-3 "$(chunked "$fz" 2048)"
gen constant f32 256x160 "$work/in.raw"        # 2 chunks: 96, 64 rows
compress "chunk30000-constant-f32-2d-rel" "$work/in.raw" f32 256x160 rel 1e-3 "$(chunked "$fz" 30000)"
gen smooth f64 30000 "$work/in.raw"            # 2 chunks: 28672, 1328 values
compress "chunk30000-pack-twice-f64-1d-abs" "$work/in.raw" f64 30000 abs 1e-1 \
  "$(chunked "$here/configs/pack-twice.json" 30000)"
for type in u8 i32; do                         # lossless: 20 chunks of one row
  compress "chunk16-int-$type-2d-lossless" "$work/ints-240.$type" "$type" 12x20 lossless 0 "$c16"
done
compress "chunk4-int-u8-1d-lossless" "$work/ints-240.u8" u8 240 lossless 0 "$(chunked "$fz" 4)"  # 60 chunks
compress "chunk64-mixed-u8-1d-lossless" "$work/mixed-480.u8" u8 480 lossless 0 "$(chunked "$fz" 64)"
compress "chunk32-input-stored-f64-1d-abs" "$work/hazard-300.f64" f64 300 abs 1e-3 \
  "$(chunked "$here/configs/input-stored.json" 32)"
compress "chunk384-no-shuffle-f32-3d-abs" "$work/hazard-1776.f32" f32 8x6x37 abs 1e-3 \
  "$(chunked "$here/configs/no-shuffle.json" 384)"
compress "chunk48-codes-stored-u16-2d-lossless" "$work/ints-240.u16" u16 12x20 lossless 0 \
  "$(chunked "$here/configs/codes-stored.json" 48)"

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
    """A version 4 file as (its bytes up to the stage records, records[chunk][stage] as
    (flags, [input sizes]), streams[chunk][stream] as bytes)."""
    assert struct.unpack_from("<HH", f, 4) == (4, 96)
    g, = struct.unpack_from("<I", f, 12)
    stages, per_chunk, chunks = struct.unpack_from("<IIQ", f, 56)
    pos = 96 + pad8(g)
    for _ in range(stages):  # stage headers
        n, = struct.unpack_from("<Q", f, pos)
        pos += 8 + pad8(n)
    head = f[:pos]
    records = []
    for _ in range(chunks):
        records.append([])
        for _ in range(stages):
            flags, k = struct.unpack_from("<II", f, pos)
            records[-1].append((flags, list(struct.unpack_from(f"<{k}Q", f, pos + 8))))
            pos += 8 + 8 * k
    sizes = [[struct.unpack_from("<Q", f, pos + 16 * (c * per_chunk + s))[0] for s in range(per_chunk)]
             for c in range(chunks)]
    off = pos + 16 * chunks * per_chunk
    assert off == struct.unpack_from("<Q", f, 72)[0]
    streams = []
    for c in range(chunks):
        streams.append([])
        for n in sizes[c]:
            streams[-1].append(f[off:off + n])
            off += pad8(n)
    assert off == len(f)
    return head, records, streams

def build(head, records, streams):
    """A version 4 file from its parts; sizes and checksums as a writer computes them."""
    meta = bytearray(head)
    for chunk in records:
        for flags, sizes in chunk:
            meta += struct.pack(f"<II{len(sizes)}Q", flags, len(sizes), *sizes)
    for chunk in streams:
        for data in chunk:
            meta += struct.pack("<QQ", len(data), fzg64(data))
    payload = sum(pad8(len(d)) for chunk in streams for d in chunk)
    struct.pack_into("<QQQ", meta, 72, len(meta), payload, 0)
    struct.pack_into("<Q", meta, 88, fzg64(bytes(meta)))
    return bytes(meta) + b"".join(d + b"\0" * (pad8(len(d)) - len(d)) for chunk in streams for d in chunk)

# An empty outlier stream (not even its counts), alone and in one chunk of several.
for src, dst, chunk in (("hazard-f32-3d-rel", "crafted-empty-outliers-f32-3d", 0),
                        ("chunk384-hazard-f32-3d-rel", "crafted-empty-outliers-chunk-f32-3d", 2)):
    head, records, streams = parse(open(f"{work}/{src}.fzg", "rb").read())
    streams[chunk][1] = b""  # predict.outliers
    open(f"{work}/{dst}.fzg", "wb").write(build(head, records, streams))

def zb_layout(n, bw):
    words = (n + 3) // 4
    blocks = (words + bw - 1) // bw
    groups = (blocks + 31) // 32
    return words, blocks, groups, (groups + 31) // 32

def zb_encode(data, bw):
    """zero-block (lossless/zeroblock/zeroblock.hh) of `data`, u32 words in blocks of bw."""
    words, blocks, groups, gfw = zb_layout(len(data), bw)
    w = list(struct.unpack(f"<{words}I", data.ljust(4 * words, b"\0"))) + [0] * (blocks * bw - words)
    nonzero = [any(w[b * bw:(b + 1) * bw]) for b in range(blocks)]
    group_flags, block_flags, kept = [0] * gfw, [], []
    for g in range(groups):
        flags = sum(1 << i for i in range(32) if 32 * g + i < blocks and nonzero[32 * g + i])
        if flags:
            group_flags[g // 32] |= 1 << (g % 32)
            block_flags.append(flags)
            kept += [x for i in range(32) if flags >> i & 1 for x in w[(32 * g + i) * bw:(32 * g + i + 1) * bw]]
    out = group_flags + block_flags + kept
    return struct.pack(f"<{len(out)}I", *out)

def zb_decode(data, n, bw):
    words, blocks, groups, gfw = zb_layout(n, bw)
    u = struct.unpack(f"<{len(data) // 4}I", data)
    group_flags, pos, w = u[:gfw], gfw, [0] * (blocks * bw)
    flags = []
    for g in range(groups):
        flags.append(u[pos] if group_flags[g // 32] >> (g % 32) & 1 else 0)
        pos += flags[-1] != 0
    for g in range(groups):
        for i in range(32):
            if flags[g] >> i & 1:
                w[(32 * g + i) * bw:(32 * g + i + 1) * bw] = u[pos:pos + bw]
                pos += bw
    return struct.pack(f"<{len(w)}I", *w)[:n]

# A zero-block stored raw where a writer codes it (chunk 5 of 8, runs; chunks 0-2 hold noise,
# stored raw by the writer): the file decodes to the same field. (Coded where the coding is
# larger than raw, a stream passes the bound of its port: readers reject it.)
head, records, streams = parse(open(f"{work}/chunk64-mixed-u8-1d-lossless.fzg", "rb").read())
(sflags, ssizes), (pflags, psizes) = records[5]
assert (sflags, pflags) == (0, 0)
records[5][1] = (1, psizes)
coded = streams[5][0]
streams[5] = [zb_decode(coded, psizes[0], 1)]
assert zb_encode(streams[5][0], 1) == coded  # the codec here is the library's
open(f"{work}/crafted-raw-chunk-u8-1d-lossless.fzg", "wb").write(build(head, records, streams))
EOF
# Their checksums hold (inspect takes them), and the raw chunk decodes to the input.
for f in "$work"/crafted-*.fzg; do "$FZG" info "$f" >/dev/null; done
"$FZG" decompress -i "$work/crafted-raw-chunk-u8-1d-lossless.fzg" -o "$work/check.out" --device cpu
cmp "$work/check.out" "$work/mixed-480.u8"

# Every seed was made: replace the old ones, keeping one file of each content, named after the
# first seed that made it.
find "$out" -maxdepth 1 -name '*.fzg' ! -name 'v1-*' ! -name 'v2-*' ! -name 'v3-*' -delete
kept=0
declare -A seen=()
for f in $(ls "$work"/*.fzg | sort); do
  sum="$(sha1sum "$f" | cut -d' ' -f1)"
  [[ -n "${seen[$sum]:-}" ]] && continue
  seen[$sum]=1
  cp "$f" "$out/"
  kept=$((kept + 1))
done
old=$(find "$out" -maxdepth 1 -name 'v[123]-*.fzg' | wc -l)
echo "make_corpus.sh: $count files compressed, $kept distinct seeds (with crafted ones) and $old version 1, 2 and 3 seeds in $out"
du -sh "$out" | cut -f1
