// GPULZ's block-coded encode (chunks of detail::block_chunk_min to block_chunk_max bytes): its
// own translation unit, so that its kernels build beside gpulz.cu's.
#include "lossless/gpulz/gpulz_coder.cuh"

namespace fzg::gpulz::detail {

Buffer encode_block_cuda(const Params& p, const uint8_t* input, uint64_t input_bytes, cudaStream_t stream) {
  const auto encode = [&](auto coder) {
    coder.p = p;
    return chunked::encode_cuda(coder, input, input_bytes, stream);
  };
  return p.wide() ? with_groups<true, true>(p.window, encode) : with_groups<false, true>(p.window, encode);
}

}  // namespace fzg::gpulz::detail
