// GPULZ's CUDA backend: the encode's dispatch to its coders (gpulz_coder.cuh) and the decode.
// Decode: a warp per chunk, 32 tokens at a time: a ballot over the flags and a scan of the
// token lengths give every token its input and output place at once; then the round's symbols
// are written 32 at a time, a lane a symbol, each finding its token by the starts before it
// and a match's source among what is written or, within the step, by pointer jumping over the
// lanes (no lane copies a match alone: the work follows the symbols, not the longest match).
#include "lossless/gpulz/gpulz_coder.cuh"

namespace fzg::gpulz {

namespace {

using detail::all_lanes;

// A literal's S bytes (little-endian, at any byte address) as a symbol.
template <typename Sym>
__device__ __forceinline__ Sym load_symbol(const uint8_t* at) {
  uint32_t v = 0;
#pragma unroll
  for (uint32_t b = 0; b < sizeof(Sym); ++b) v |= uint32_t(at[b]) << (8 * b);
  return Sym(v);
}

// Staged (chunks below block_chunk_min): the stored chunk is copied into shared memory and the
// chunk decoded into the scaffold's staging there, matches reading back what the chunk wrote.
// Unstaged (larger chunks, whose two copies a warp would leave an SM a few warps): tokens read
// from the stream and symbols written to the output, matches reading it back (through L1; a
// warp's own writes, ordered by __syncwarp).
template <bool Staged>
struct DeviceDecoder {
  Params p;

  __host__ __device__ uint32_t chunk_bytes() const { return p.chunk_bytes; }
  // The stored chunk, placed at its own address's alignment so that it is copied by words.
  __host__ __device__ uint32_t decode_shared_bytes() const { return Staged ? p.chunk_bytes + 16 : 0; }
  static constexpr bool decode_staged = Staged;

  __device__ bool decode_chunk(const uint8_t* stored, uint32_t size, uint8_t* out, uint32_t n, uint8_t* shared) const {
    const uint32_t lane = threadIdx.x % 32;
    const uint8_t* in = stored;
    if constexpr (Staged) {
      uint8_t* copy = shared + (reinterpret_cast<uintptr_t>(stored) & 15u);
      chunked::copy_bytes(copy, stored, size, lane, 32);
      __syncwarp();
      in = copy;
    }
    ChunkShape s;
    if (!chunk_shape(in, size, n, s)) return false;  // uniform: every lane reads the same bytes
    const uint32_t min_match = min_match_of(p, s.S);
    const bool ok = s.S == 1   ? decode_symbols<uint8_t>(in, s, min_match, out)
                    : s.S == 2 ? decode_symbols<uint16_t>(in, s, min_match, out)
                               : decode_symbols<uint32_t>(in, s, min_match, out);
    if (!ok) return false;
    if (lane < s.tail) out[s.symbols * s.S + lane] = in[size - s.tail + lane];
    __syncwarp();
    return true;
  }

  // The chunk's tokens into its symbols, 32 tokens a round: a ballot over the flags and a scan
  // of the lengths give every token its input and output place; then the round's output is
  // written 32 symbols at a time, a lane a symbol: a symbol's token is the last one starting
  // at or before it (a count of the starts, an OR across the warp), a literal's symbol is read
  // from the tokens and a match's from d symbols back, which lies either in what earlier steps
  // wrote or in this step's own lanes (resolved by pointer jumping over the lanes: at most 5
  // shuffle steps, since a source lane is always below its reader). Work follows the symbols,
  // not the longest match.
  template <typename Sym>
  __device__ static bool decode_symbols(const uint8_t* in, const ChunkShape& s, uint32_t min_match, uint8_t* out_bytes) {
    constexpr uint32_t S = sizeof(Sym);
    Sym* out = reinterpret_cast<Sym*>(out_bytes);  // 16-byte aligned staging, or the chunk's place in the output
    const uint32_t lane = threadIdx.x % 32, below = (1u << lane) - 1u, upto = below | (1u << lane);
    const uint8_t* flags = in + s.tokens_end;
    uint32_t pos = header_bytes, o = 0;  // the round's first token byte and output symbol
    for (uint32_t base = 0; base < s.tokens; base += 32) {
      const uint32_t t = base + lane;
      const bool valid = t < s.tokens;
      const bool is_match = valid && (flags[t / 8] >> (t % 8) & 1u);
      const uint32_t matches = __ballot_sync(all_lanes, is_match);
      const uint32_t literals = __ballot_sync(all_lanes, valid) & ~matches;
      const uint32_t at = pos + 2 * __popc(matches & below) + S * __popc(literals & below);
      bool good = at + (valid ? (is_match ? 2 : S) : 0) <= s.tokens_end;
      uint32_t len = valid ? 1 : 0, d = 0;  // d = 0: a literal
      if (is_match && good) {
        uint32_t extra;
        get_match(in + at, s.wide, extra, d);
        len = extra + min_match;
      }
      uint32_t round_symbols;
      const uint32_t from = o + warp_exclusive_sum(len, round_symbols);  // this token's first output symbol
      good = good && (!valid || from + len <= s.symbols) && (!is_match || d <= from);
      if (!__all_sync(all_lanes, good)) return false;
      const uint32_t round_end = o + round_symbols;
      uint32_t before = 0;  // the round's tokens that start before the step's first symbol
      for (uint32_t q = o; q < round_end; q += 32) {
        const bool starts_here = valid && from >= q && from - q < 32;
        const uint32_t starts = __reduce_or_sync(all_lanes, starts_here ? 1u << (from - q) : 0u);
        const uint32_t k = before + __popc(starts & upto) - 1;  // the token of symbol q + lane
        before += __popc(starts);
        const uint32_t kd = __shfl_sync(all_lanes, d, k), kat = __shfl_sync(all_lanes, at, k);
        const uint32_t i = q + lane;
        const bool live = i < round_end;
        uint32_t v = 0, ref = 0;
        bool pending = false;
        if (live) {
          if (kd == 0) v = load_symbol<Sym>(in + kat);
          else if (i - kd < q) v = out[i - kd];
          else pending = true, ref = i - kd - q;
        }
        while (__any_sync(all_lanes, pending)) {
          const uint32_t ref_v = __shfl_sync(all_lanes, v, ref), ref_ref = __shfl_sync(all_lanes, ref, ref);
          const bool ref_pending = __shfl_sync(all_lanes, pending, ref);
          if (pending) {
            if (ref_pending) ref = ref_ref;
            else v = ref_v, pending = false;
          }
        }
        if (live) out[i] = Sym(v);
        __syncwarp();
      }
      pos += 2 * __popc(matches) + S * __popc(literals);
      o = round_end;
    }
    return pos == s.tokens_end && o == s.symbols;
  }
};

}  // namespace

Buffer encode_cuda(const Params& p, const uint8_t* input, uint64_t input_bytes, cudaStream_t stream) {
  if (p.chunk_bytes >= detail::block_chunk_min && p.chunk_bytes <= detail::block_chunk_max)
    return p.wide() ? detail::encode_coded<true, true>(p, input, input_bytes, stream)
                    : detail::encode_coded<false, true>(p, input, input_bytes, stream);
  return p.wide() ? detail::encode_coded<true, false>(p, input, input_bytes, stream)
                  : detail::encode_coded<false, false>(p, input, input_bytes, stream);
}

void decode_cuda(const Params& p, const uint8_t* encoded, uint64_t encoded_bytes, uint8_t* output, uint64_t output_bytes,
                 cudaStream_t stream) {
  // Unstaged, a chunk writes its symbols in place: the output's address must suit them.
  if (p.chunk_bytes >= detail::block_chunk_min && reinterpret_cast<uintptr_t>(output) % 4 == 0)
    chunked::decode_cuda(DeviceDecoder<false>{p}, encoded, encoded_bytes, output, output_bytes, stream);
  else
    chunked::decode_cuda(DeviceDecoder<true>{p}, encoded, encoded_bytes, output, output_bytes, stream);
}

}  // namespace fzg::gpulz
