// GPULZ's encode of wide chunks, a warp a chunk (gpulz_coder.cuh): a unit of its own.
#include "lossless/gpulz/gpulz_coder.cuh"

namespace fzg::gpulz::detail {

FZG_GPULZ_ENCODE_CODED(, true, false);

}  // namespace fzg::gpulz::detail
