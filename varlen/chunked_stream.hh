// The chunked-stream scaffold: a byte coder supplies only "encode one chunk into at most B
// bytes" and "decode one chunk"; the scaffold cuts the input into chunks, runs the coder on
// every chunk independently (in parallel on the CPU, a block per chunk on the GPU), stores a
// chunk raw when its code would not be smaller, and places the variable-length results one
// after another behind a table of their sizes. The bytes are the same on every backend.
//
// Stream layout (docs/FORMAT.md, "Chunked streams"), for an input of n bytes cut into
// chunks of C bytes (the last one ragged), K = ceil(n / C):
//
//   u32 table[K]   bit 31: chunk k is stored raw (its n_k input bytes as they are);
//                  bits 0-30: the chunk's stored size in bytes (raw: exactly n_k; coded:
//                  at least 1 and below n_k)
//   chunk k's stored bytes, for k = 0 .. K-1, back to back, no padding
//
// C is the coder's parameter (it travels in the graph), n the stage's recorded input size:
// neither is stored again. An empty input is an empty stream.
#pragma once
#include <cstdint>

#include "runtime/buffer.hh"
#include "runtime/portable.hh"

namespace fzg::chunked {

constexpr uint32_t raw_flag = 1u << 31;
constexpr uint32_t max_chunk_bytes = 1u << 30;

FZG_HOST_DEVICE uint64_t chunk_count(uint64_t input_bytes, uint32_t chunk_bytes) {
  return input_bytes / chunk_bytes + (input_bytes % chunk_bytes != 0);
}
inline uint64_t table_bytes(uint64_t input_bytes, uint32_t chunk_bytes) {
  return 4 * chunk_count(input_bytes, chunk_bytes);
}
// A stream is never larger than its input and its table.
inline uint64_t max_encoded_size(uint64_t input_bytes, uint32_t chunk_bytes) {
  return table_bytes(input_bytes, chunk_bytes) + input_bytes;
}
// Input bytes of chunk k.
FZG_HOST_DEVICE uint32_t chunk_size(uint64_t input_bytes, uint32_t chunk_bytes, uint64_t k) {
  const uint64_t first = k * chunk_bytes;
  return uint32_t(input_bytes - first < chunk_bytes ? input_bytes - first : chunk_bytes);
}

// What a byte coder supplies to run on the CPU (its CUDA side: varlen/chunked_stream.cuh).
class ChunkCoder {
 public:
  virtual ~ChunkCoder() = default;
  virtual uint32_t chunk_bytes() const = 0;
  // Encodes the n bytes at `in` into `out`, which has room for `capacity` bytes (capacity <
  // n); returns the size written, or any value above `capacity` when the code would not fit
  // (the chunk is then stored raw).
  virtual uint64_t encode_chunk(const uint8_t* in, uint32_t n, uint8_t* out, uint32_t capacity) const = 0;
  // Decodes a chunk's `size` stored bytes into exactly n bytes; every inconsistency throws
  // corrupt_data.
  virtual void decode_chunk(const uint8_t* in, uint32_t size, uint8_t* out, uint32_t n) const = 0;
};

// The stream, behind `head_bytes` left for the caller's own bytes (a coder's codebook), which
// it writes there itself: the stream is never copied to make room.
Buffer encode_cpu(const ChunkCoder& coder, const uint8_t* input, uint64_t input_bytes, uint64_t head_bytes = 0);
void decode_cpu(const ChunkCoder& coder, const uint8_t* stream, uint64_t stream_bytes, uint8_t* output,
                uint64_t output_bytes);
// What can be checked before the output is allocated: the table fits in the stream and the
// stream is no larger than the most any input of this size could give.
void check_stream(uint64_t stream_bytes, uint64_t input_bytes, uint32_t chunk_bytes);

}  // namespace fzg::chunked
