// lorenzo -> bitshuffle -> zero-block (block_words 1) as one chain on the GPU, a slab of tile
// rows at a time: the Lorenzo kernel writes a slab's codes into a window that stays in L2, the
// single-pass shuffle-pack places them after the slabs before, and the next slab reuses the
// window. The field's codes (half the field in f32) never exist whole, in either direction.
#pragma once
#include <memory>

#include "pipeline/fusion.hh"

namespace fzg {

std::unique_ptr<ChainFusion> make_lorenzo_pack_chain();

}  // namespace fzg
