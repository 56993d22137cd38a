// The codebook as a Huffman stream stores it, in front of its chunks: written and read on the
// host by both backends, so they store the same bytes.
//
// Written (the compact form):
//   u32 E | 1 << 31           E entries (the top bit marks this form)
//   u32 B                     bytes of the bit string that follows, a multiple of 4
//   B bytes                   the entries as a bit string (LSB first), zero bits to the end
// The bit string codes the increasing symbols as runs of consecutive symbols, each run as
// gamma(gap + 1), gamma(count), then its symbols' code lengths; `gap` is how many symbols lie
// between the previous run's last symbol + 1 (0 for the first run) and the run's first. The
// first length of the book is 4 bits; each next one is its difference from the one before:
// '0' for none, '10' and a sign bit (1: shorter) for one, '11' and 4 bits for any other.
// gamma(v), v >= 1, with n = floor(log2 v): n one bits, a zero bit, then v's low n bits.
// A code's lengths change slowly along the symbols (Lorenzo's codes: with the magnitude), and
// a 2^14-symbol book costs ~1-2 KB instead of 4 bytes an entry (64 KB), most of a small
// field's file at tight bounds.
//
// Read also (the first form, from before the compact one; never written):
//   u32 E                     entries, E < 2^31
//   u32 entries[E]            symbol | length << 24, increasing symbols
#pragma once
#include <cstdint>
#include <vector>

namespace fzg::huffman {

// The compact form of the entries (symbol | length << 24, increasing symbols, lengths 1-15).
std::vector<uint8_t> write_book(const std::vector<uint32_t>& entries);

// The most bytes a stored book of at most `max_entries` entries over S-byte symbols takes, in
// either form: what a decoder reads to find the book.
uint64_t max_book_bytes(uint64_t max_entries, uint32_t symbol_bytes);

struct StoredBook {
  std::vector<uint32_t> entries;  // symbol | length << 24
  uint64_t bytes = 0;             // the stored book's size: where the chunks start
};

// The book at the start of a stream of which `available` bytes are at hand, in either form:
// corrupt_data when it is cut short or holds more than `max_entries` entries, and for the
// compact form when it names a symbol past 2^(8S) (the escape) or a length outside [1, 15],
// is not the form the writer makes (runs not maximal, spare words, bits set past its end).
// The entries' own checks (increasing symbols, a prefix code, lengths up to L) are
// codebook_from_entries's, for both forms.
StoredBook read_book(const uint8_t* stream, uint64_t available, uint64_t max_entries, uint32_t symbol_bytes);

}  // namespace fzg::huffman
