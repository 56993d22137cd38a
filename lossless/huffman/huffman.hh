// Canonical Huffman coding of S-byte symbols (S = 1 or 2: bytes, or u16 codes such as
// Lorenzo's), in independent chunks on the shared chunked-stream layer (varlen/), with one
// length-limited codebook per stream (codebook.hh).
//
// Stream:
//   the codebook (stored_book.hh): u32 E | 1 << 31, u32 B, B bytes of runs of symbols and
//                              their code lengths (the escape is symbol 2^(8S))
//   a chunked stream (varlen/chunked_stream.hh) of the input, whose coded chunks are, for a
//   chunk of n bytes = m symbols and a tail of n mod S bytes:
//     u16 words[32]            lane l's code length in u32 words
//     u32 lane 0's words, lane 1's words, ... lane 31's
//     the tail's bytes
//   Lane l codes the chunk's symbols l, l + 32, l + 64, ... in order, each as its code's bits
//   (an escaped symbol: the escape's code, then its S bytes), packed from bit 0 of each
//   little-endian word up; the last word's unused bits are zero. The lanes let a warp decode
//   a chunk 32 symbols at a time.
//
// Ports: in (bytes) -> out (bytes).
#pragma once
#include <cstdint>
#include <memory>

#include "core/stage.hh"
#include "runtime/portable.hh"

namespace fzg {

std::unique_ptr<Stage> make_huffman_stage(const nlohmann::json& params);

namespace huffman {

constexpr uint32_t lanes = 32;
constexpr uint32_t lane_header_bytes = 2 * lanes;

// Symbol j of an input read (or written) as little-endian S-byte symbols, byte by byte: a stage's buffer
// may start at any byte (a byte field's chunk of odd rows), so no wider access is assumed
// aligned.
FZG_HOST_DEVICE uint32_t symbol_at(const uint8_t* in, uint64_t j, uint32_t S) {
  return S == 1 ? in[j] : uint32_t(in[2 * j]) | uint32_t(in[2 * j + 1]) << 8;
}
FZG_HOST_DEVICE void store_symbol(uint8_t* out, uint64_t j, uint32_t S, uint32_t symbol) {
  out[S * j] = uint8_t(symbol);
  if (S == 2) out[2 * j + 1] = uint8_t(symbol >> 8);
}

struct Params {
  uint32_t symbol_bytes = 2;
  uint32_t chunk_bytes = 16384;
  uint32_t max_length = 12;
};

// The most codebook entries and stream bytes an input of `input_bytes` gives.
uint64_t max_entries(const Params& p, uint64_t input_bytes);
uint64_t max_encoded_size(const Params& p, uint64_t input_bytes);

Buffer encode_cpu(const Params& p, const uint8_t* input, uint64_t input_bytes);
void decode_cpu(const Params& p, const uint8_t* stream, uint64_t stream_bytes, uint8_t* output, uint64_t output_bytes);
// CUDA backend (defined in CUDA builds): the same bytes.
Buffer encode_cuda(const Params& p, const uint8_t* input, uint64_t input_bytes, cudaStream_t stream);
void decode_cuda(const Params& p, const uint8_t* encoded, uint64_t encoded_bytes, uint8_t* output,
                 uint64_t output_bytes, cudaStream_t stream);

}  // namespace huffman
}  // namespace fzg
