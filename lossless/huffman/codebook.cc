// Length-limited canonical Huffman codes, deterministic everywhere: lengths from the
// two-queue construction over symbols sorted by (count, symbol); lengths past L clamped and
// the Kraft sum restored by lengthening the longest codes below L (rarest, then highest
// symbol, first); canonical codes assigned in (length, symbol) order.
#include "lossless/huffman/codebook.hh"

#include <algorithm>
#include <numeric>

#include "core/error.hh"

namespace fzg::huffman {

namespace {

// Code lengths of a Huffman code for the leaves, sorted by (count, symbol) ascending.
std::vector<uint32_t> huffman_lengths(const std::vector<Leaf>& leaves) {
  const size_t n = leaves.size();
  if (n == 1) return {1};
  // Nodes 0..n-1 are leaves, n.. internal; parent links give the depths.
  std::vector<uint64_t> weight(2 * n - 1);
  std::vector<size_t> parent(2 * n - 1, 0);
  for (size_t i = 0; i < n; ++i) weight[i] = leaves[i].count;
  size_t next_leaf = 0, next_internal = n, made = n;
  auto take = [&]() {
    // The lighter of the two queues' heads; a leaf on a tie.
    if (next_leaf < n && (next_internal >= made || weight[next_leaf] <= weight[next_internal])) return next_leaf++;
    return next_internal++;
  };
  while (made < 2 * n - 1) {
    const size_t a = take(), b = take();
    weight[made] = weight[a] + weight[b];
    parent[a] = parent[b] = made;
    ++made;
  }
  std::vector<uint32_t> depth(2 * n - 1, 0);
  for (size_t i = 2 * n - 1; i-- > 0;)
    if (i != 2 * n - 2) depth[i] = depth[parent[i]] + 1;
  return std::vector<uint32_t>(depth.begin(), depth.begin() + n);
}

// Lengthens codes below L until the Kraft sum (in units of 2^-L) is at most 1: each step
// lengthens, by one bit, the first leaf (in ascending count order) among those of the longest
// length below L. That leaf is then alone at its new length, so it is picked again until it
// reaches L or the sum fits: the leaves are taken per length, longest first, in order, in
// O(n + L) rather than a scan per step (thousands of steps when many symbols clamp).
void lengthen_to_fit(std::vector<uint32_t>& length, uint64_t& kraft, uint32_t max_length) {
  const uint64_t one = uint64_t(1) << max_length;
  if (kraft <= one) return;
  std::vector<std::vector<size_t>> at_length(max_length);
  for (size_t i = 0; i < length.size(); ++i)
    if (length[i] < max_length) at_length[length[i]].push_back(i);
  std::vector<size_t> taken(max_length, 0);
  uint32_t top = max_length - 1;
  // A sum over 1 means some leaf is below L (at most 2^L leaves, each at least 2^-L).
  while (kraft > one) {
    while (taken[top] == at_length[top].size()) --top;
    const size_t pick = at_length[top][taken[top]++];
    while (length[pick] < max_length && kraft > one) kraft -= uint64_t(1) << (max_length - length[pick] - 1), ++length[pick];
  }
}

uint32_t reverse_bits(uint32_t code, uint32_t length) {
  uint32_t r = 0;
  for (uint32_t b = 0; b < length; ++b) r |= ((code >> b) & 1u) << (length - 1 - b);
  return r;
}

}  // namespace

std::vector<uint64_t> canonical_codes(const std::vector<uint32_t>& entries) {
  // Codes counted up in (length, symbol) order; entries are in symbol order.
  std::vector<uint32_t> order(entries.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return (entries[a] >> 24) < (entries[b] >> 24); });
  std::vector<uint64_t> codes(entries.size());
  uint32_t code = 0, previous = order.empty() ? 0 : entries[order[0]] >> 24;
  for (uint32_t k : order) {
    const uint32_t length = entries[k] >> 24;
    code <<= (length - previous);
    previous = length;
    codes[k] = reverse_bits(code, length) | uint64_t(length) << 32;
    ++code;
  }
  return codes;
}

Codebook codebook_from_entries(std::vector<uint32_t> entries, uint32_t symbol_bytes, uint32_t max_length) {
  Codebook book;
  book.symbol_bytes = symbol_bytes, book.max_length = max_length;
  book.escape = 1u << (8 * symbol_bytes);
  uint64_t kraft = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const uint32_t symbol = entries[i] & 0xffffffu, length = entries[i] >> 24;
    require_data(symbol <= book.escape && (i == 0 || symbol > (entries[i - 1] & 0xffffffu)), "huffman codebook symbols");
    require_data(length >= 1 && length <= max_length, "huffman code length");
    kraft += uint64_t(1) << (max_length - length);
  }
  require_data(kraft <= (uint64_t(1) << max_length), "huffman codebook is not a prefix code");
  const std::vector<uint64_t> codes = canonical_codes(entries);
  book.encode.assign(book.escape + 1, 0);
  book.decode.assign(size_t(1) << max_length, 0);
  for (size_t k = 0; k < entries.size(); ++k) {
    const uint32_t symbol = entries[k] & 0xffffffu, length = entries[k] >> 24, bits = uint32_t(codes[k]);
    book.encode[symbol] = codes[k];
    for (uint32_t window = bits; window < (1u << max_length); window += 1u << length)
      book.decode[window] = symbol | length << 24;
  }
  // Symbols without a code: the escape's code, then their S bytes.
  const uint64_t esc = book.encode[book.escape];
  for (uint32_t s = 0; s < book.escape; ++s)
    if (book.encode[s] == 0 && esc != 0) book.encode[s] = escaped_code(esc, s, symbol_bytes);
  book.entries = std::move(entries);
  return book;
}

std::vector<uint32_t> code_lengths(std::vector<Leaf> leaves, uint32_t symbol_bytes, uint32_t max_length) {
  const uint32_t alphabet = 1u << (8 * symbol_bytes);
  // More symbols than L-bit codes: keep the most frequent 2^L - 1 (the lower symbol on a
  // tie), the rest escape.
  const size_t room = size_t(1) << max_length;
  if (leaves.size() > room) {
    std::sort(leaves.begin(), leaves.end(),
              [](const Leaf& a, const Leaf& b) { return a.count != b.count ? a.count > b.count : a.symbol < b.symbol; });
    uint64_t escaped = 0;
    for (size_t i = room - 1; i < leaves.size(); ++i) escaped += leaves[i].count;
    leaves.resize(room - 1);
    leaves.push_back({alphabet, escaped});
  }
  std::sort(leaves.begin(), leaves.end(),
            [](const Leaf& a, const Leaf& b) { return a.count != b.count ? a.count < b.count : a.symbol < b.symbol; });
  std::vector<uint32_t> length = leaves.empty() ? std::vector<uint32_t>{} : huffman_lengths(leaves);
  // Limit to L: clamp, then lengthen codes below L until the Kraft sum is at most 1.
  uint64_t kraft = 0;
  for (uint32_t& l : length) l = std::min(l, max_length), kraft += uint64_t(1) << (max_length - l);
  lengthen_to_fit(length, kraft, max_length);
  std::vector<uint32_t> entries(leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i) entries[i] = leaves[i].symbol | length[i] << 24;
  std::sort(entries.begin(), entries.end(), [](uint32_t a, uint32_t b) { return (a & 0xffffffu) < (b & 0xffffffu); });
  return entries;
}

Codebook build_codebook(const uint64_t* counts, uint32_t symbol_bytes, uint32_t max_length) {
  std::vector<Leaf> leaves;
  for (uint32_t s = 0; s < (1u << (8 * symbol_bytes)); ++s)
    if (counts[s]) leaves.push_back({s, counts[s]});
  return codebook_from_entries(code_lengths(std::move(leaves), symbol_bytes, max_length), symbol_bytes, max_length);
}

}  // namespace fzg::huffman
