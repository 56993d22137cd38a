// Huffman's codebook: a length-limited canonical prefix code over the symbols of one stream
// (S-byte symbols, S = 1 or 2) and, when more symbols occur than codes of at most L bits can
// name, an escape symbol for the rarest (an escaped symbol is the escape's code then its S
// bytes, raw). Built on the host from a histogram by the CPU and the CUDA backends alike, so
// both write the same code.
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/portable.hh"

namespace fzg::huffman {

struct Codebook {
  uint32_t symbol_bytes = 2, max_length = 12;
  uint32_t escape = 1u << 16;  // the escape's symbol number: one past the last S-byte symbol
  // The stored form: symbol | length << 24 for every symbol with a code, increasing symbols.
  std::vector<uint32_t> entries;
  // Per symbol 0 .. escape: its bits as written (LSB first; an escaped symbol's raw bytes
  // follow the escape's code) in bits 0-31, their count in bits 32-39.
  std::vector<uint64_t> encode;
  // Per L-bit window (LSB first): symbol | length << 24 of the code it starts with; 0 where
  // no code starts so (a damaged stream).
  std::vector<uint32_t> decode;
};

// The code of symbol s without an entry, given the escape's code `esc` (bits | length << 32):
// the escape's bits, then s's S bytes.
FZG_HOST_DEVICE uint64_t escaped_code(uint64_t esc, uint32_t s, uint32_t symbol_bytes) {
  const uint32_t length = uint32_t(esc >> 32);
  return (uint32_t(esc) | s << length) | uint64_t(length + 8 * symbol_bytes) << 32;
}

// A symbol that occurs and its count.
struct Leaf {
  uint32_t symbol;
  uint64_t count;
};

// The entries (the stored form) of the code for the leaves, in any order, distinct symbols.
std::vector<uint32_t> code_lengths(std::vector<Leaf> leaves, uint32_t symbol_bytes, uint32_t max_length);
// Each entry's canonical code: its bits as written (LSB first) | length << 32.
std::vector<uint64_t> canonical_codes(const std::vector<uint32_t>& entries);
// From the counts of every S-byte symbol (2^(8S) of them).
Codebook build_codebook(const uint64_t* counts, uint32_t symbol_bytes, uint32_t max_length);
// From stored entries, checked (corrupt_data): increasing symbols up to the escape, lengths in
// [1, L], a prefix code (Kraft sum at most 1).
Codebook codebook_from_entries(std::vector<uint32_t> entries, uint32_t symbol_bytes, uint32_t max_length);

}  // namespace fzg::huffman
