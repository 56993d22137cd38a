// GPULZ's encode of wide chunks, a block of warps a chunk of 8-16 KiB (gpulz_coder.cuh): a unit of its own.
#include "lossless/gpulz/gpulz_coder.cuh"

namespace fzg::gpulz::detail {

FZG_GPULZ_ENCODE_CODED(, true, true);

}  // namespace fzg::gpulz::detail
