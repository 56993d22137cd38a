// bitshuffle -> zero-block (block_words 1) fused for the GPU. With one word per block, a
// zero-block group of 32 blocks is exactly one bitshuffle tile, so one warp shuffles a tile
// in registers and flags its non-zero planes at once: the shuffled stream is never written.
#pragma once
#include <memory>

#include "pipeline/fusion.hh"

namespace fzg {

std::unique_ptr<Fusion> make_shuffle_pack_fusion();

namespace shuffle_pack {
#ifdef FZG_HAVE_CUDA
// The encoded stream, sized exactly once the placement is known.
Buffer encode_cuda(const uint8_t* input, uint64_t input_bytes, cudaStream_t stream);
void decode_cuda(const uint32_t* input, uint64_t input_bytes, uint8_t* output, uint64_t output_bytes,
                 cudaStream_t stream);
#endif
}  // namespace shuffle_pack

}  // namespace fzg
