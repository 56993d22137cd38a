// GPULZ (Zhang et al., ICS'23): LZSS on multi-byte symbols, in independent chunks on the
// shared chunked-stream layer (varlen/chunked_stream.hh), a chunk that would not shrink
// stored raw.
//
// A chunk of n bytes is m = n / S symbols of S bytes (1, 2 or 4) and a tail of n mod S bytes.
// Tokens are literals (one symbol) and matches (a length of L >= min_match symbols copied from
// d symbols back, 1 <= d <= window; the source may overlap the match: d < L repeats the last d
// symbols). A chunk's code:
//
//   u8  S, | 0x80 when wide
//   u16 T                        tokens (little-endian)
//   token bytes, in order        literal: its S bytes; match: u8 L - min_match, u8 d - 1, or
//                                when wide a u16 (L - min_match) | (d - 1) << 5 (d <= 2048,
//                                L <= min_match + 31)
//   u8  flags[ceil(T / 8)]       bit t % 8 of byte t / 8: token t is a match
//   the tail's n mod S bytes
//
// min_match is the stage's parameter, or for "auto" the shortest match a token makes
// smaller: 3, 2, 1 symbols for S = 1, 2, 4. The parse (gpulz_parse.hh) is a pure function of
// the chunk, so the CPU and the GPU write the same bytes. With symbol "auto" each chunk is
// coded at every S and the smallest code kept (ties to the smaller S). With offset_bits 11 the
// chunks are wide: besides the window's exhaustive probe, each position has four candidates from
// up to 2048 symbols back (the latest earlier positions with the same hash of its next 4 bytes);
// a chunk of long runs, which narrow matches code in fewer tokens, may be coded narrow instead.
//
// Ports: in (bytes) -> out (bytes).
#pragma once
#include <cstdint>
#include <memory>

#include "core/stage.hh"

namespace fzg {

std::unique_ptr<Stage> make_gpulz_stage(const nlohmann::json& params);

namespace gpulz {

struct Params {
  uint32_t chunk_bytes = 2048;
  uint32_t window = 64;     // symbols
  uint32_t symbol = 2;      // bytes; 0: auto (1, 2 and 4 tried per chunk)
  uint32_t min_match = 0;   // symbols; 0: auto
  uint32_t offset_bits = 8; // 8: GPULZ's tokens; 11: wide (far candidates, matches up to 2048 back)
  constexpr bool wide() const { return offset_bits == 11; }
};

// The shortest match a chunk of S-byte symbols codes.
constexpr uint32_t min_match_of(const Params& p, uint32_t S) { return p.min_match ? p.min_match : S == 1 ? 3 : S == 2 ? 2 : 1; }

Buffer encode_cpu(const Params& p, const uint8_t* input, uint64_t input_bytes);
void decode_cpu(const Params& p, const uint8_t* stream, uint64_t stream_bytes, uint8_t* output, uint64_t output_bytes);
// CUDA backend (defined in CUDA builds): the same bytes.
Buffer encode_cuda(const Params& p, const uint8_t* input, uint64_t input_bytes, cudaStream_t stream);
void decode_cuda(const Params& p, const uint8_t* encoded, uint64_t encoded_bytes, uint8_t* output, uint64_t output_bytes,
                 cudaStream_t stream);

}  // namespace gpulz
}  // namespace fzg
