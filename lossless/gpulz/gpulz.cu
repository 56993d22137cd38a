// CUDA backend of GPULZ on the chunked-stream scaffold (varlen/chunked_stream.cuh).
// Encode: a block per chunk; the chunk is loaded into shared memory and probed a distance per
// warp: for distance d, L_d(i) = x[i] == x[i - d] ? min(16, 1 + L_d(i + 1)) : 0 (the match
// length `probe` compares at i), taken 32 positions at a time from the chunk's end, a ballot
// of the equalities and a count of trailing ones per lane giving every L at once. Each
// position keeps the greatest (L, -d) by a shared-memory atomicMax: exactly `probe`'s answer
// (longest, nearest on a tie), without its per-lane loops of different lengths. Lengths below
// min_match are not kept (most of the atomics on noisy data): such a probe never changes the
// parse, which takes a match only from min_match on and looks ahead only for a longer one. Then one
// thread parses (a walk over the probes, cheap beside them) into the staging the scaffold
// places.
// Decode: a warp per chunk, 32 tokens at a time: a ballot over the flags and a scan of the
// token lengths give every token its input and output place at once; literals and matches
// whose source lies before the round are copied by their own lanes together, a match whose
// source the round itself writes by the whole warp in token order.
#include "lossless/gpulz/gpulz.hh"
#include "lossless/gpulz/gpulz_parse.hh"
#include "varlen/chunked_stream.cuh"

namespace fzg::gpulz {

namespace {

__host__ __device__ constexpr uint32_t align16(uint32_t n) { return (n + 15) / 16 * 16; }

struct DeviceCoder {
  Params p;

  static constexpr int encode_threads = 128;
  __host__ __device__ uint32_t chunk_bytes() const { return p.chunk_bytes; }

  // symbols | probes (a u32 per byte at most) | flags | a trial code (auto) | the result
  __host__ __device__ uint32_t encode_shared_bytes() const {
    const uint32_t C = p.chunk_bytes;
    return align16(C) + align16(4 * C) + align16(C / 8 + 1) + (p.symbol ? 0 : align16(C)) + 16;
  }
  __host__ __device__ uint32_t decode_shared_bytes() const { return p.chunk_bytes; }
  static constexpr bool decode_staged = true;  // matches read back what the chunk wrote

  __device__ uint32_t encode_chunk(const uint8_t* in, uint32_t n, uint8_t* out, uint32_t capacity,
                                   uint8_t* shared) const {
    uint8_t* symbols = shared;
    chunked::copy_bytes(symbols, in, n, threadIdx.x, blockDim.x);
    __syncthreads();
    if (p.symbol) return encode_with(p.symbol, n, out, capacity, shared);
    uint8_t* trial = shared + encode_shared_bytes() - 16 - align16(p.chunk_bytes);
    uint32_t best = capacity + 1;
    for (uint32_t S = 1; S <= 4; S *= 2) {
      const uint32_t size = encode_with(S, n, trial, capacity, shared);
      if (size < best) {
        best = size;
        chunked::copy_bytes(out, trial, size, threadIdx.x, blockDim.x);
        __syncthreads();
      }
    }
    return best;
  }

  __device__ uint32_t encode_with(uint32_t S, uint32_t n, uint8_t* out, uint32_t capacity, uint8_t* shared) const {
    if (n < S) return capacity + 1;
    switch (S) {
      case 1: return encode_as<uint8_t>(n, out, capacity, shared);
      case 2: return encode_as<uint16_t>(n, out, capacity, shared);
      default: return encode_as<uint32_t>(n, out, capacity, shared);
    }
  }

  template <typename Sym>
  __device__ uint32_t encode_as(uint32_t n, uint8_t* out, uint32_t capacity, uint8_t* shared) const {
    const uint32_t C = p.chunk_bytes, m = n / sizeof(Sym);
    const auto* x = reinterpret_cast<const Sym*>(shared);
    auto* best = reinterpret_cast<uint32_t*>(shared + align16(C));
    uint8_t* flags = shared + align16(C) + align16(4 * C);
    auto* result = reinterpret_cast<uint32_t*>(shared + encode_shared_bytes() - 16);
    const uint32_t min_match = min_match_of(p, sizeof(Sym));
    probe_by_distance(x, m, min_match, best);
    if (threadIdx.x == 0)
      *result = write_chunk(x, m, [&](uint32_t i) { return probe_of(best[i]); }, min_match, shared + m * sizeof(Sym),
                            n % sizeof(Sym), out, capacity, flags);
    __syncthreads();
    const uint32_t size = *result;
    __syncthreads();  // the result and the probes are rewritten by the next width
    return size;
  }

  // best[i] as the CPU's probe_by_distance (gpulz_parse.hh) packs it.
  template <typename Sym>
  __device__ void probe_by_distance(const Sym* x, uint32_t m, uint32_t min_match, uint32_t* best) const {
    const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (uint32_t i = threadIdx.x; i < m; i += blockDim.x) best[i] = 0;
    __syncthreads();
    const uint32_t farthest = p.window < m ? p.window : (m ? m - 1 : 0);
    for (uint32_t d = 1 + warp; d <= farthest; d += warps) {
      // Positions [d, m) in windows of 32 from the end; `carry` is L at the window's end.
      uint32_t carry = 0;
      const uint32_t span = m - d, windows = (span + 31) / 32;
      for (uint32_t w = windows; w-- > 0;) {
        const uint32_t i = d + 32 * w + lane;
        const bool inside = i < m;
        const bool equal = inside && x[i] == x[i - d];
        const uint32_t ones = __ballot_sync(0xffffffffu, equal) >> lane;  // bit k: position i + k equal
        // The run of equalities from i: to the window's end it continues into `carry`.
        const uint32_t run = ones == 0xffffffffu >> lane ? 32 - lane + carry : __ffs(~ones) - 1;
        const uint32_t len = run < probe_cap ? run : probe_cap;
        const uint32_t packed = len << 8 | (255 - d);
        if (len >= min_match) atomicMax(best + i, packed);
        const uint32_t first = __shfl_sync(0xffffffffu, len, 0);
        carry = first;
      }
    }
    __syncthreads();
  }

  __device__ bool decode_chunk(const uint8_t* stored, uint32_t size, uint8_t* out, uint32_t n, uint8_t* shared) const {
    const uint32_t lane = threadIdx.x % 32, below = (1u << lane) - 1u;
    chunked::copy_bytes(shared, stored, size, lane, 32);
    __syncwarp();
    const uint8_t* in = shared;
    ChunkShape s;
    if (!chunk_shape(in, size, n, s)) return false;  // uniform: every lane reads the same bytes
    const uint32_t S = s.S, min_match = min_match_of(p, S);
    const uint8_t* flags = in + s.tokens_end;
    uint32_t pos = header_bytes, o = 0;  // the round's first token byte and output symbol
    for (uint32_t base = 0; base < s.tokens; base += 32) {
      const uint32_t t = base + lane;
      const bool valid = t < s.tokens;
      const bool is_match = valid && (flags[t / 8] >> (t % 8) & 1u);
      const uint32_t matches = __ballot_sync(0xffffffffu, is_match);
      const uint32_t literals = __ballot_sync(0xffffffffu, valid) & ~matches;
      const uint32_t at = pos + 2 * __popc(matches & below) + S * __popc(literals & below);
      const uint32_t bytes = valid ? (is_match ? 2 : S) : 0;
      bool good = at + bytes <= s.tokens_end;
      uint32_t len = valid ? 1 : 0, d = 0;
      if (is_match && good) len = in[at] + min_match, d = in[at + 1] + 1u;
      uint32_t end = len;  // inclusive scan of the lengths: where each token's output ends
#pragma unroll
      for (uint32_t k = 1; k < 32; k *= 2) {
        const uint32_t v = __shfl_up_sync(0xffffffffu, end, k);
        if (lane >= k) end += v;
      }
      const uint32_t from = o + end - len;  // this token's first output symbol
      good = good && (!valid || from + len <= s.symbols) && (!is_match || d <= from);
      if (!__all_sync(0xffffffffu, good)) return false;
      if (valid && !is_match)
        for (uint32_t b = 0; b < S; ++b) out[from * S + b] = in[at + b];
      __syncwarp();
      // A match repeats its source's first min(len, d) symbols: when those lie before the
      // round, the lane copies it alone.
      const bool alone = is_match && from - d + (len < d ? len : d) <= o;
      if (alone) copy_match(out, from * S, d * S, len * S, 0, 1);
      __syncwarp();
      for (uint32_t rest = __ballot_sync(0xffffffffu, is_match && !alone); rest; rest &= rest - 1) {
        const int j = __ffs(rest) - 1;
        const uint32_t jf = __shfl_sync(0xffffffffu, from, j), jd = __shfl_sync(0xffffffffu, d, j);
        const uint32_t jl = __shfl_sync(0xffffffffu, len, j);
        copy_match(out, jf * S, jd * S, jl * S, lane, 32);
        __syncwarp();
      }
      pos += 2 * __popc(matches) + S * __popc(literals);
      o += __shfl_sync(0xffffffffu, end, 31);
    }
    if (pos != s.tokens_end || o != s.symbols) return false;
    if (lane < s.tail) out[s.symbols * S + lane] = in[size - s.tail + lane];
    __syncwarp();
    return true;
  }

  // Bytes [first, first + bytes) of out repeat the `distance` bytes before `first`.
  __device__ static void copy_match(uint8_t* out, uint32_t first, uint32_t distance, uint32_t bytes, uint32_t thread,
                                    uint32_t threads) {
    const uint8_t* src = out + first - distance;
    for (uint32_t b = thread; b < bytes; b += threads) out[first + b] = src[b < distance ? b : b % distance];
  }
};

}  // namespace

Buffer encode_cuda(const Params& p, const uint8_t* input, uint64_t input_bytes, cudaStream_t stream) {
  return chunked::encode_cuda(DeviceCoder{p}, input, input_bytes, stream);
}

void decode_cuda(const Params& p, const uint8_t* encoded, uint64_t encoded_bytes, uint8_t* output, uint64_t output_bytes,
                 cudaStream_t stream) {
  chunked::decode_cuda(DeviceCoder{p}, encoded, encoded_bytes, output, output_bytes, stream);
}

}  // namespace fzg::gpulz
