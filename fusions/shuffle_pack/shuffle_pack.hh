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
// The encoded stream, one pass over the input (defined in CUDA builds).
Buffer encode_cuda(const uint8_t* input, uint64_t input_bytes, cudaStream_t stream);
void decode_cuda(const uint32_t* input, uint64_t input_bytes, uint8_t* output, uint64_t output_bytes,
                 const zeroblock::Checks& checks, cudaStream_t stream);

}  // namespace shuffle_pack

}  // namespace fzg
