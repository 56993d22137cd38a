// GPULZ's encode of narrow chunks, a warp a chunk (gpulz_coder.cuh): a unit of its own.
#include "lossless/gpulz/gpulz_coder.cuh"

namespace fzg::gpulz::detail {

FZG_GPULZ_ENCODE_CODED(, false, false);

}  // namespace fzg::gpulz::detail
