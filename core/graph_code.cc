#include "core/graph_code.hh"

#include <algorithm>
#include <map>
#include <mutex>

#include "core/error.hh"

namespace fzg {

namespace {

// The dictionary of version 3: the canonical graphs (with a fill value, which holds the graph
// without one but for a few bytes) of the configs fzg shipped when version 3 was made, the
// most used last (the nearest, so the shortest distances). Part of the format: never edit.
constexpr char dictionary[] =
    R"({"chunk_values":67108864,"name":"lossless-gpulz","stages":[{"id":"lz","inputs":{"in":"input"},"params":{"chunk":4096,"min_match":0,"symbol":"auto","window":128},"type":"gpulz"}],"store":["lz.out"]})"
    R"({"chunk_values":67108864,"name":"gpulz","stages":[{"id":"predict","inputs":{"field":"input"},"params":{"fill":[1e+20]},"type":"lorenzo"},{"id":"lz","inputs":{"in":"predict.codes"},"params":{"chunk":2048,"min_match":0,"symbol":"2","window":64},"type":"gpulz"}],"store":["lz.out","predict.outliers","predict.mask"]})"
    R"({"chunk_values":67108864,"name":"fz-gpulz","stages":[{"id":"predict","inputs":{"field":"input"},"params":{"fill":[1e+20]},"type":"lorenzo"},{"id":"shuffle","inputs":{"in":"predict.codes"},"params":{},"type":"bitshuffle"},{"id":"pack","inputs":{"in":"shuffle.out"},"params":{"block_words":1},"type":"zero-block"},{"id":"lz","inputs":{"in":"pack.out"},"params":{"chunk":4096,"min_match":0,"symbol":"4","window":64},"type":"gpulz"}],"store":["lz.out","predict.outliers","predict.mask"]})"
    R"({"chunk_values":67108864,"name":"cusz","stages":[{"id":"predict","inputs":{"field":"input"},"params":{"fill":[1e+20]},"type":"lorenzo"},{"id":"huff","inputs":{"in":"predict.codes"},"params":{"chunk":16384,"max_length":12,"symbol":2},"type":"huffman"}],"store":["huff.out","predict.outliers","predict.mask"]})"
    R"({"chunk_values":67108864,"name":"ratio","stages":[{"id":"predict","inputs":{"field":"input"},"params":{"fill":[1e+20]},"type":"lorenzo"},{"id":"huff","inputs":{"in":"predict.codes"},"params":{"chunk":65536,"max_length":14,"symbol":2},"type":"huffman"},{"id":"pack","inputs":{"in":"huff.out"},"params":{"block_words":1},"type":"zero-block"},{"id":"predict-mask","inputs":{"in":"predict.mask"},"params":{"chunk":16384,"max_length":12,"symbol":2},"type":"huffman"}],"store":["pack.out","predict.outliers","predict-mask.out"]})"
    R"({"chunk_values":67108864,"name":"fz","stages":[{"id":"predict","inputs":{"field":"input"},"params":{"fill":[1e+20]},"type":"lorenzo"},{"id":"shuffle","inputs":{"in":"predict.codes"},"params":{},"type":"bitshuffle"},{"id":"pack","inputs":{"in":"shuffle.out"},"params":{"block_words":1},"type":"zero-block"}],"store":["pack.out","predict.outliers","predict.mask"]})";
constexpr size_t dictionary_bytes = sizeof(dictionary) - 1;

// Tokens: a byte b below 0x80 is b + 1 literal bytes, which follow; from 0x80 up, a match of
// (b - 0x80) + min_match bytes, then its distance back (1 at least) in LEB128, 3 bytes at most.
constexpr size_t min_match = 4, max_match = 0x7F + min_match, max_literals = 0x80;
constexpr size_t max_distance = (size_t(1) << 21) - 1;
static_assert(max_graph_text_bytes == size_t(16) << 20, "the messages below name the limit: 16 MiB");

uint32_t prefix_hash(const uint8_t* p) {
  const uint32_t v = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
  return (v * 2654435761u) >> 20;  // 12 bits
}

// The code of `text`, found afresh.
std::vector<uint8_t> code_of(const std::string& text) {
  if (text.size() > max_graph_text_bytes) fail(ErrorCode::invalid_config, "the graph's JSON is over 16 MiB");
  // The dictionary and the text as one history; a chain of earlier positions per 4-byte prefix.
  std::vector<uint8_t> all(dictionary, dictionary + dictionary_bytes);
  all.insert(all.end(), text.begin(), text.end());
  std::vector<int64_t> head(size_t(1) << 12, -1), previous(all.size(), -1);
  auto insert = [&](size_t at) {
    if (at + min_match > all.size()) return;
    const uint32_t h = prefix_hash(&all[at]);
    previous[at] = head[h];
    head[h] = int64_t(at);
  };
  for (size_t at = 0; at < dictionary_bytes; ++at) insert(at);

  std::vector<uint8_t> code, literals;
  auto flush_literals = [&] {
    for (size_t first = 0; first < literals.size(); first += max_literals) {
      const size_t n = std::min(max_literals, literals.size() - first);
      code.push_back(uint8_t(n - 1));
      code.insert(code.end(), literals.begin() + ptrdiff_t(first), literals.begin() + ptrdiff_t(first + n));
    }
    literals.clear();
  };
  size_t at = dictionary_bytes;
  while (at < all.size()) {
    // The longest match, the nearest on a tie (the chain runs from the nearest back).
    size_t best_length = 0, best_distance = 0;
    if (at + min_match <= all.size()) {
      // Up to 1024 chain steps a position in a text's first 64 KiB (every config fzg ships is a
      // few KiB), 32 past it: a chain holds every position of its 12-bit hash, so a long text
      // of few distinct prefixes (a config with a 15 MiB name) took minutes at 1024.
      const int max_steps = at - dictionary_bytes < (size_t(1) << 16) ? 1024 : 32;
      int steps = 0;
      for (int64_t from = head[prefix_hash(&all[at])]; from >= 0 && steps < max_steps; from = previous[size_t(from)], ++steps) {
        const size_t distance = at - size_t(from);
        if (distance > max_distance) break;
        size_t length = 0;
        while (at + length < all.size() && length < max_match && all[size_t(from) + length] == all[at + length]) ++length;
        if (length > best_length) best_length = length, best_distance = distance;
      }
    }
    if (best_length < min_match) {
      literals.push_back(all[at]);
      insert(at++);
      continue;
    }
    flush_literals();
    code.push_back(uint8_t(0x80 + best_length - min_match));
    for (size_t d = best_distance;; d >>= 7) {
      code.push_back(uint8_t((d & 0x7F) | (d >= 0x80 ? 0x80 : 0)));
      if (d < 0x80) break;
    }
    for (size_t end = at + best_length; at < end;) insert(at++);
  }
  flush_literals();
  return code;
}

}  // namespace

// Every file of a call codes its graph again, and a session has a handful of graphs: the
// match search (up to 1024 chain steps a position) took ~35 us of a 2D field's ~190 us GPU
// compress call on an H100 (fzg bench --trace), so each distinct text is coded once.
std::vector<uint8_t> encode_graph_text(const std::string& text) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<uint8_t>> coded;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = coded.find(text);
    if (it != coded.end()) return it->second;
  }
  std::vector<uint8_t> code = code_of(text);
  if (text.size() > 65536) return code;  // no config's graph is near this: keep the memo small
  std::lock_guard<std::mutex> lock(mutex);
  if (coded.size() >= 64) coded.clear();
  coded.emplace(text, code);
  return code;
}

std::string decode_graph_text(const uint8_t* code, size_t size) {
  std::string all(dictionary, dictionary_bytes);
  size_t pos = 0;
  while (pos < size) {
    const uint8_t token = code[pos++];
    if (token < 0x80) {
      const size_t n = size_t(token) + 1;
      require_data(n <= size - pos, "graph code (literals past its end)");
      all.append(reinterpret_cast<const char*>(code + pos), n);
      pos += n;
    } else {
      const size_t length = size_t(token - 0x80) + min_match;
      size_t distance = 0;
      for (int shift = 0;; shift += 7) {
        require_data(pos < size && shift < 21, "graph code (a match's distance)");
        const uint8_t byte = code[pos++];
        distance |= size_t(byte & 0x7F) << shift;
        if (!(byte & 0x80)) break;
      }
      require_data(distance >= 1 && distance <= all.size(), "graph code (a match's distance)");
      for (size_t k = 0, from = all.size() - distance; k < length; ++k) all.push_back(all[from + k]);
    }
    require_data(all.size() - dictionary_bytes <= max_graph_text_bytes, "graph code (a text over 16 MiB)");
  }
  return all.substr(dictionary_bytes);
}

}  // namespace fzg
