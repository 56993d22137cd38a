#include "lossless/huffman/stored_book.hh"

#include <algorithm>
#include <cstring>

#include "core/error.hh"

namespace fzg::huffman {

namespace {

constexpr uint32_t compact_form = 1u << 31;
constexpr uint32_t length_bits = 4;

class BitWriter {
 public:
  void put(uint64_t value, uint32_t count) {
    for (uint32_t b = 0; b < count; ++b, ++bits_) {
      if (bits_ % 8 == 0) bytes_.push_back(0);
      bytes_.back() |= uint8_t(((value >> b) & 1u) << (bits_ % 8));
    }
  }
  void gamma(uint64_t v) {  // v >= 1
    uint32_t n = 0;
    while ((v >> (n + 1)) != 0) ++n;
    put((uint64_t(1) << n) - 1, n + 1);  // n ones, then a zero
    put(v, n);
  }
  std::vector<uint8_t> take() {
    bytes_.resize((bytes_.size() + 3) / 4 * 4, 0);
    return std::move(bytes_);
  }

 private:
  std::vector<uint8_t> bytes_;
  uint64_t bits_ = 0;
};

class BitReader {
 public:
  BitReader(const uint8_t* bytes, uint64_t size) : bytes_(bytes), size_(size) {}
  uint64_t get(uint32_t count) {
    require_data(bits_ + count <= 8 * size_, "huffman codebook is cut short");
    uint64_t v = 0;
    for (uint32_t b = 0; b < count; ++b, ++bits_) v |= uint64_t((bytes_[bits_ / 8] >> (bits_ % 8)) & 1u) << b;
    return v;
  }
  uint64_t gamma() {
    uint32_t n = 0;
    while (get(1)) require_data(++n < 40, "huffman codebook run");
    return (uint64_t(1) << n) | get(n);
  }
  uint64_t position() const { return bits_; }
  // Whatever follows the last code is zero, so each book has one stored form.
  void finish() {
    while (bits_ < 8 * size_) require_data(get(1) == 0, "huffman codebook has bits past its end");
  }

 private:
  const uint8_t* bytes_;
  uint64_t size_, bits_ = 0;
};

uint32_t symbol_of(uint32_t entry) { return entry & 0xffffffu; }
uint32_t length_of(uint32_t entry) { return entry >> 24; }

void put_length(BitWriter& w, uint32_t length, uint32_t previous, bool first) {
  if (first) return w.put(length, length_bits);
  if (length == previous) return w.put(0, 1);
  if (length + 1 == previous || length == previous + 1) return w.put(0b01 | (length < previous) << 2, 3);
  w.put(0b11, 2);
  w.put(length, length_bits);
}

uint32_t get_length(BitReader& r, uint32_t previous, bool first) {
  if (first) return uint32_t(r.get(length_bits));
  if (!r.get(1)) return previous;
  if (r.get(1)) return uint32_t(r.get(length_bits));
  return r.get(1) ? previous - 1 : previous + 1;
}

}  // namespace

std::vector<uint8_t> write_book(const std::vector<uint32_t>& entries) {
  BitWriter w;
  uint64_t next = 0;  // one past the previous run's last symbol
  uint32_t previous = 0;
  for (size_t i = 0; i < entries.size();) {
    size_t end = i + 1;
    while (end < entries.size() && symbol_of(entries[end]) == symbol_of(entries[end - 1]) + 1) ++end;
    w.gamma(symbol_of(entries[i]) - next + 1);
    w.gamma(end - i);
    for (size_t k = i; k < end; ++k) {
      put_length(w, length_of(entries[k]), previous, k == 0);
      previous = length_of(entries[k]);
    }
    next = symbol_of(entries[end - 1]) + 1;
    i = end;
  }
  const std::vector<uint8_t> bits = w.take();
  std::vector<uint8_t> stored(8 + bits.size());
  const uint32_t head[2] = {uint32_t(entries.size()) | compact_form, uint32_t(bits.size())};
  std::memcpy(stored.data(), head, 8);
  if (!bits.empty()) std::memcpy(stored.data() + 8, bits.data(), bits.size());
  return stored;
}

uint64_t max_book_bytes(uint64_t max_entries, uint32_t symbol_bytes) {
  // Compact: a run per entry at worst, its gap's gamma at most 2 * (8S + 1) + 1 bits, its
  // count's 1, its length 6: under 6 bytes an entry with S = 2. The first form: 4 an entry.
  const uint64_t entry_bits = 2 * (8 * uint64_t(symbol_bytes) + 1) + 1 + 1 + 6;
  return std::max(8 + (max_entries * entry_bits + 31) / 32 * 4, 4 + 4 * max_entries);
}

StoredBook read_book(const uint8_t* stream, uint64_t available, uint64_t max_entries, uint32_t symbol_bytes) {
  require_data(available >= 4, "huffman codebook size");
  uint32_t head[2] = {0, 0};
  std::memcpy(head, stream, 4);
  StoredBook book;
  const uint64_t entries = head[0] & ~compact_form;
  require_data(entries <= max_entries, "huffman codebook size");
  if (!(head[0] & compact_form)) {  // the first form
    require_data(available >= 4 + 4 * entries, "huffman codebook size");
    book.entries.resize(entries);
    if (entries) std::memcpy(book.entries.data(), stream + 4, 4 * entries);
    book.bytes = 4 + 4 * entries;
    return book;
  }
  require_data(available >= 8, "huffman codebook size");
  std::memcpy(head + 1, stream + 4, 4);
  require_data(head[1] % 4 == 0 && head[1] <= available - 8, "huffman codebook size");
  BitReader r(stream + 8, head[1]);
  const uint64_t escape = uint64_t(1) << (8 * symbol_bytes);
  uint64_t next = 0;
  uint32_t previous = 0;
  book.entries.reserve(entries);
  while (book.entries.size() < entries) {
    const uint64_t gap = r.gamma() - 1, first = next + gap, count = r.gamma();
    // Runs are maximal (a writer merges consecutive symbols), so only the first may start at
    // `next`: each book has one stored form.
    require_data(count <= entries - book.entries.size() && first + count - 1 <= escape &&
                     (gap > 0 || book.entries.empty()),
                 "huffman codebook symbols");
    for (uint64_t s = first; s < first + count; ++s) {
      previous = get_length(r, previous, book.entries.empty());
      require_data(previous >= 1 && previous <= 15, "huffman code length");
      book.entries.push_back(uint32_t(s) | previous << 24);
    }
    next = first + count;
  }
  require_data(head[1] == (r.position() + 31) / 32 * 4, "huffman codebook size");  // no spare words
  r.finish();
  book.bytes = 8 + uint64_t(head[1]);
  return book;
}

}  // namespace fzg::huffman
