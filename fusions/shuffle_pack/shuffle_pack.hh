// bitshuffle -> zero-block (block_words 1) fused for the GPU. With one word per block, a
// zero-block group of 32 blocks is exactly one bitshuffle tile, so one warp shuffles a tile
// in registers and flags its non-zero planes at once: the shuffled stream is never written.
#pragma once
#include <memory>

#include "fusions/composite.hh"
#include "lossless/zeroblock/zeroblock.hh"

namespace fzg {

std::unique_ptr<Composite> make_shuffle_pack();

namespace shuffle_pack {
// The encoded stream, sized exactly once the placement is known (defined in CUDA builds).
Buffer encode_cuda(const uint8_t* input, uint64_t input_bytes, cudaStream_t stream);
void decode_cuda(const uint32_t* input, uint64_t input_bytes, uint8_t* output, uint64_t output_bytes,
                 cudaStream_t stream);

#ifdef FZG_HAVE_CUDA

// Bytes [from, from + bytes) of a window to copy to `to` on the way: an even count below
// max_bytes, `from` and `to` 16-byte aligned.
struct Carry {
  static constexpr uint64_t max_bytes = 128 * 128;
  uint64_t from = 0, bytes = 0;
  uint8_t* to = nullptr;
};

// The single pass, a window of the input at a time (encode_cuda passes its whole input as one
// window). The input is cut into chunks of 128 tiles; a launch encodes a run of chunks and
// places them after those of every earlier launch, so the launches must cover the chunks in
// order. The blocks go to a scratch of `capacity` words (at most, and by default, half the
// input): finish() says when they did not fit, and blocks() how many there were.
class DeviceEncoder {
 public:
  static constexpr uint64_t chunk_bytes = Carry::max_bytes;
  // The most blocks (words) the single pass takes: half the input's.
  static uint64_t max_capacity(uint64_t input_bytes);

  DeviceEncoder(uint64_t input_bytes, cudaStream_t stream, uint64_t capacity = ~uint64_t(0));
  uint64_t chunks() const { return chunks_; }
  // Chunks [first, end); `window` holds the input from byte first * chunk_bytes on. On
  // `stream` when given, else the encoder's.
  void encode_chunks(uint64_t first, uint64_t end, const uint8_t* window, Carry carry = {},
                     cudaStream_t stream = nullptr);
  // Device address of the totals (flag words + 1, blocks + 1), complete after the last chunk.
  const unsigned long long* totals() const;
  // Queues the stream's assembly in the scratch (its head copied in front of the blocks) from
  // the totals on the device: after the last chunk, before the host waits for the totals, so
  // that it runs meanwhile. finish() queues it if no one has.
  void assemble();
  // The stream from the totals read back; an empty buffer when the blocks outgrew the scratch.
  Buffer finish(const unsigned long long totals[2]);
  // The stream's blocks (words), from the totals read back: a capacity they fit in.
  static uint64_t blocks(const unsigned long long totals[2]) { return totals[1] - 1; }

 private:
  uint64_t input_bytes_;
  zeroblock::Layout layout_;
  cudaStream_t stream_;
  uint64_t chunks_ = 0, capacity_ = 0, bits_at_ = 0, flags_at_ = 0, blocks_at_ = 0;  // in words
  Buffer scratch_;
  bool assembled_ = false;
};

// Decode a window of tiles at a time: the stream is planned once (one synchronization).
class DeviceDecoder {
 public:
  DeviceDecoder(const uint32_t* input, uint64_t input_bytes, uint64_t output_bytes, cudaStream_t stream);
  uint64_t tiles() const { return tiles_; }
  // Output tiles [first, end) (128 bytes each, the last one ragged) into `window`, on `stream`
  // when given, else the decoder's.
  void decode_tiles(uint64_t first, uint64_t end, uint8_t* window, cudaStream_t stream = nullptr);

 private:
  uint64_t output_bytes_, tiles_ = 0;
  cudaStream_t stream_;
  Buffer scratch_;  // the plan: per tile its flag word and first block
  const uint32_t* group_flags_ = nullptr;
  const uint64_t* block_index_ = nullptr;
  const uint32_t* blocks_ = nullptr;
};
#endif
}  // namespace shuffle_pack

}  // namespace fzg
