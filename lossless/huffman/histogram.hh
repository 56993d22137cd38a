// The symbols that occur in a device input of S-byte symbols and their counts, for Huffman's
// codebook.
#pragma once
#include <cstdint>
#include <vector>

#include "lossless/huffman/codebook.hh"
#include "lossless/huffman/huffman.hh"

namespace fzg::huffman {

// In no particular order; two small read-backs (how many, then which), not 2^(8S) counts.
std::vector<Leaf> occurring_symbols_cuda(const Params& p, const uint8_t* input, uint64_t input_bytes,
                                         cudaStream_t stream);

}  // namespace fzg::huffman
