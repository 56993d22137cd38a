// CPU reference of the Huffman stage: the histogram, the codebook (codebook.cc), then every
// chunk coded lane by lane on the chunked-stream scaffold; decoding by table lookups of L
// bits at a time.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.hh"
#include "lossless/huffman/codebook.hh"
#include "lossless/huffman/stored_book.hh"
#include "lossless/huffman/huffman.hh"
#include "varlen/chunked_stream.hh"

namespace fzg::huffman {

namespace {

class Coder final : public chunked::ChunkCoder {
 public:
  Coder(const Params& p, const Codebook& book) : p_(p), book_(book) {}
  uint32_t chunk_bytes() const override { return p_.chunk_bytes; }

  uint64_t encode_chunk(const uint8_t* in, uint32_t n, uint8_t* out, uint32_t capacity) const override {
    const uint32_t S = p_.symbol_bytes, m = n / S, tail = n % S;
    uint32_t words[lanes], at = lane_header_bytes;
    for (uint32_t l = 0; l < lanes; ++l) {
      uint64_t bits = 0;
      for (uint32_t j = l; j < m; j += lanes) bits += book_.encode[symbol_at(in, j, S)] >> 32;
      words[l] = uint32_t((bits + 31) / 32);
      at += 4 * words[l];
    }
    if (at + tail > capacity) return uint64_t(capacity) + 1;
    for (uint32_t l = 0; l < lanes; ++l) out[2 * l] = uint8_t(words[l]), out[2 * l + 1] = uint8_t(words[l] >> 8);
    uint8_t* word_out = out + lane_header_bytes;
    for (uint32_t l = 0; l < lanes; ++l) {
      uint64_t buffer = 0;
      uint32_t held = 0;
      auto flush = [&] {
        const uint32_t w = uint32_t(buffer);
        std::memcpy(word_out, &w, 4);
        word_out += 4, buffer >>= 32, held -= 32;
      };
      for (uint32_t j = l; j < m; j += lanes) {
        const uint64_t code = book_.encode[symbol_at(in, j, S)];
        buffer |= uint64_t(uint32_t(code)) << held;
        held += uint32_t(code >> 32);
        if (held >= 32) flush();
      }
      if (held > 0) held = 32, flush();
    }
    std::memcpy(word_out, in + m * S, tail);
    return at + tail;
  }

  void decode_chunk(const uint8_t* in, uint32_t size, uint8_t* out, uint32_t n) const override {
    const uint32_t S = p_.symbol_bytes, m = n / S, tail = n % S, L = p_.max_length;
    require_data(size >= lane_header_bytes + tail, "huffman chunk header");
    uint64_t at = lane_header_bytes;
    for (uint32_t l = 0; l < lanes; ++l) {
      const uint32_t words = uint32_t(in[2 * l]) | uint32_t(in[2 * l + 1]) << 8;
      require_data(at + 4 * uint64_t(words) + tail <= size, "huffman lane size");
      const uint8_t* lane = in + at;
      at += 4 * uint64_t(words);
      uint64_t buffer = 0, consumed = 0;
      uint32_t held = 0, next = 0;
      auto refill = [&] {
        while (held <= 32) {
          uint32_t w = 0;
          if (next < words) std::memcpy(&w, lane + 4 * next, 4);
          ++next;
          buffer |= uint64_t(w) << held;
          held += 32;
        }
      };
      for (uint32_t j = l; j < m; j += lanes) {
        refill();
        const uint32_t entry = book_.decode[buffer & ((1u << L) - 1)];
        const uint32_t length = entry >> 24;
        require_data(length != 0, "huffman code");
        uint32_t symbol = entry & 0xffffffu;
        buffer >>= length, held -= length, consumed += length;
        if (symbol == book_.escape) {
          symbol = uint32_t(buffer & ((1u << (8 * S)) - 1));
          buffer >>= 8 * S, held -= 8 * S, consumed += 8 * S;
        }
        store_symbol(out, j, S, symbol);
      }
      // Exactly the words the lane's bits need, the last one's unused bits zero.
      require_data((consumed + 31) / 32 == words, "huffman lane length");
      if (consumed % 32) {
        uint32_t last;
        std::memcpy(&last, lane + 4 * (words - 1), 4);
        require_data((last >> (consumed % 32)) == 0, "huffman lane padding");
      }
    }
    require_data(at + tail == size, "huffman chunk size");
    std::memcpy(out + m * S, in + at, tail);
  }

 private:
  Params p_;
  const Codebook& book_;
};

std::vector<uint64_t> histogram_cpu(const Params& p, const uint8_t* input, uint64_t input_bytes) {
  std::vector<uint64_t> counts(size_t(1) << (8 * p.symbol_bytes), 0);
  const uint64_t m = input_bytes / p.symbol_bytes;
  for (uint64_t j = 0; j < m; ++j) ++counts[symbol_at(input, j, p.symbol_bytes)];
  return counts;
}

}  // namespace

uint64_t max_entries(const Params& p, uint64_t input_bytes) {
  // Every entry is a symbol that occurs, or the escape of at least 2^L of them.
  return std::min<uint64_t>(uint64_t(1) << p.max_length, input_bytes / p.symbol_bytes);
}

uint64_t max_encoded_size(const Params& p, uint64_t input_bytes) {
  return max_book_bytes(max_entries(p, input_bytes), p.symbol_bytes) +
         chunked::max_encoded_size(input_bytes, p.chunk_bytes);
}

Buffer encode_cpu(const Params& p, const uint8_t* input, uint64_t input_bytes) {
  const std::vector<uint64_t> counts = histogram_cpu(p, input, input_bytes);
  const Codebook book = build_codebook(counts.data(), p.symbol_bytes, p.max_length);
  const std::vector<uint8_t> stored = write_book(book.entries);
  Buffer out = chunked::encode_cpu(Coder(p, book), input, input_bytes, stored.size());
  std::memcpy(out.data(), stored.data(), stored.size());
  return out;
}

void decode_cpu(const Params& p, const uint8_t* stream, uint64_t stream_bytes, uint8_t* output, uint64_t output_bytes) {
  StoredBook stored = read_book(stream, stream_bytes, max_entries(p, output_bytes), p.symbol_bytes);
  const Codebook book = codebook_from_entries(std::move(stored.entries), p.symbol_bytes, p.max_length);
  chunked::decode_cpu(Coder(p, book), stream + stored.bytes, stream_bytes - stored.bytes, output, output_bytes);
}

}  // namespace fzg::huffman
