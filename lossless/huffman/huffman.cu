// CUDA backend of the Huffman stage. The histogram is CUB's; the codebook is built on the host
// from it by the CPU's code (codebook.cc: a few thousand symbols, well under the time of the
// kernels), so both backends code with the same book. Encode, on the chunked-stream scaffold:
// a warp per chunk, lane l coding the chunk's symbols l, l + 32, ... (the format's lanes):
// their bit counts, a shuffle scan for the lanes' places, then each lane writes its words.
// Decode: a warp per chunk, every lane walking its own lane by L-bit table lookups, symbol j
// of the chunk written by lane j % 32, so each step's 32 symbols are written together.
#include <cub/device/device_histogram.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <vector>

#include "core/error.hh"
#include "lossless/huffman/codebook.hh"
#include "lossless/huffman/huffman.hh"
#include "varlen/chunked_stream.cuh"

namespace fzg::huffman {

namespace {

// Symbols are read and written by bytes (symbol_at, huffman.hh): a stage's buffers may start
// at any byte. A warp still reads 64 consecutive bytes.
struct SymbolAt {
  const uint8_t* in;
  __device__ uint32_t operator()(int64_t j) const { return symbol_at(in, uint64_t(j), 2); }
};

// A little-endian u32 at any byte address (a chunk's stored bytes start anywhere).
__device__ __forceinline__ uint32_t load_u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

__device__ __forceinline__ uint32_t warp_exclusive_sum(uint32_t v, uint32_t& total) {
  const uint32_t lane = threadIdx.x % 32;
  uint32_t inclusive = v;
#pragma unroll
  for (uint32_t k = 1; k < 32; k *= 2) {
    const uint32_t u = __shfl_up_sync(0xffffffffu, inclusive, k);
    if (lane >= k) inclusive += u;
  }
  total = __shfl_sync(0xffffffffu, inclusive, 31);
  return inclusive - v;
}

struct DeviceCoder {
  Params p;
  const uint64_t* encode_table = nullptr;  // Codebook::encode
  const uint32_t* decode_table = nullptr;  // Codebook::decode
  uint32_t escape = 0;

  static constexpr int encode_threads = 32;
  static constexpr bool decode_staged = false;  // each step writes 32 symbols in order
  __host__ __device__ uint32_t chunk_bytes() const { return p.chunk_bytes; }
  __host__ __device__ uint32_t encode_shared_bytes() const { return 0; }
  __host__ __device__ uint32_t decode_shared_bytes() const { return 0; }

  __device__ uint32_t encode_chunk(const uint8_t* in, uint32_t n, uint8_t* out, uint32_t capacity, uint8_t*) const {
    const uint32_t lane = threadIdx.x, S = p.symbol_bytes, m = n / S, tail = n % S;
    uint32_t bits = 0;
    for (uint32_t j = lane; j < m; j += lanes) bits += uint32_t(encode_table[symbol_at(in, j, S)] >> 32);
    const uint32_t words = (bits + 31) / 32;
    uint32_t total;
    const uint32_t before = warp_exclusive_sum(words, total);
    const uint32_t size = lane_header_bytes + 4 * total + tail;
    if (size > capacity) return capacity + 1;  // uniform
    out[2 * lane] = uint8_t(words), out[2 * lane + 1] = uint8_t(words >> 8);
    auto* word_out = reinterpret_cast<uint32_t*>(out + lane_header_bytes) + before;  // `out` is 16-byte aligned
    uint64_t buffer = 0;
    uint32_t held = 0;
    for (uint32_t j = lane; j < m; j += lanes) {
      const uint64_t code = encode_table[symbol_at(in, j, S)];
      buffer |= uint64_t(uint32_t(code)) << held;
      held += uint32_t(code >> 32);
      if (held >= 32) *word_out++ = uint32_t(buffer), buffer >>= 32, held -= 32;
    }
    if (held > 0) *word_out = uint32_t(buffer);
    if (lane < tail) out[lane_header_bytes + 4 * total + lane] = in[m * S + lane];
    __syncwarp();
    return size;
  }

  __device__ bool decode_chunk(const uint8_t* in, uint32_t size, uint8_t* out, uint32_t n, uint8_t*) const {
    const uint32_t lane = threadIdx.x % 32, S = p.symbol_bytes, m = n / S, tail = n % S, L = p.max_length;
    if (size < lane_header_bytes + tail) return false;  // uniform
    const uint32_t words = uint32_t(in[2 * lane]) | uint32_t(in[2 * lane + 1]) << 8;
    uint32_t total;
    const uint32_t before = warp_exclusive_sum(words, total);
    if (uint64_t(lane_header_bytes) + 4 * uint64_t(total) + tail != size) return false;  // uniform
    const uint8_t* lane_words = in + lane_header_bytes + 4 * before;
    uint64_t buffer = 0, consumed = 0;
    uint32_t held = 0, next = 0;
    bool ok = true;
    for (uint32_t j = lane; j < m && ok; j += lanes) {
      while (held <= 32) {
        buffer |= uint64_t(next < words ? load_u32(lane_words + 4 * next) : 0u) << held;
        ++next, held += 32;
      }
      const uint32_t entry = decode_table[buffer & ((1u << L) - 1)];
      const uint32_t length = entry >> 24;
      uint32_t symbol = entry & 0xffffffu;
      ok = length != 0;
      buffer >>= length, held -= length, consumed += length;
      if (symbol == escape) {
        symbol = uint32_t(buffer & ((1u << (8 * S)) - 1));
        buffer >>= 8 * S, held -= 8 * S, consumed += 8 * S;
      }
      out[S * j] = uint8_t(symbol);
      if (S == 2) out[2 * j + 1] = uint8_t(symbol >> 8);
    }
    // Exactly the words the lane's bits need, the last one's unused bits zero.
    ok = ok && (consumed + 31) / 32 == words;
    if (ok && consumed % 32) ok = (load_u32(lane_words + 4 * (words - 1)) >> (consumed % 32)) == 0;
    ok = __all_sync(0xffffffffu, ok);
    if (ok && lane < tail) out[m * S + lane] = in[size - tail + lane];
    __syncwarp();
    return ok;
  }
};

// Counts of every S-byte symbol in the input (its first input_bytes / S symbols), CUB's
// histogram over pieces of under 2^31 symbols (its counters are 32-bit) added on the host.
std::vector<uint64_t> histogram(const Params& p, const uint8_t* input, uint64_t input_bytes, cudaStream_t stream) {
  const uint32_t alphabet = 1u << (8 * p.symbol_bytes);
  const uint64_t m = input_bytes / p.symbol_bytes;
  std::vector<uint64_t> counts(alphabet, 0);
  if (m == 0) return counts;
  Buffer device_counts = Buffer::device(4 * uint64_t(alphabet), stream);
  std::vector<unsigned int> narrow(alphabet);
  constexpr uint64_t piece = uint64_t(1) << 30;
  for (uint64_t first = 0; first < m; first += piece) {
    const int64_t count = int64_t(std::min(piece, m - first));
    const uint8_t* from = input + first * p.symbol_bytes;
    size_t temp_bytes = 0;
    auto run = [&](void* temp) {
      if (p.symbol_bytes == 1)
        return cub::DeviceHistogram::HistogramEven(temp, temp_bytes, from, device_counts.as<unsigned int>(),
                                                   int(alphabet + 1), 0, int(alphabet), count, stream);
      const auto symbols = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), SymbolAt{from});
      return cub::DeviceHistogram::HistogramEven(temp, temp_bytes, symbols, device_counts.as<unsigned int>(),
                                                 int(alphabet + 1), 0, int(alphabet), count, stream);
    };
    FZG_CUDA_CHECK(run(nullptr));
    Buffer temp = Buffer::device(temp_bytes, stream);
    FZG_CUDA_CHECK(run(temp.data()));
    copy_bytes(narrow.data(), Location::host, device_counts.data(), Location::device, 4 * uint64_t(alphabet), stream);
    for (uint32_t s = 0; s < alphabet; ++s) counts[s] += narrow[s];
  }
  return counts;
}

template <typename T>
Buffer upload(const std::vector<T>& values, cudaStream_t stream) {
  Buffer b = Buffer::device(values.size() * sizeof(T), stream);
  if (!values.empty()) copy_bytes(b.data(), Location::device, values.data(), Location::host, b.size(), stream);
  return b;
}

}  // namespace

Buffer encode_cuda(const Params& p, const uint8_t* input, uint64_t input_bytes, cudaStream_t stream) {
  const std::vector<uint64_t> counts = histogram(p, input, input_bytes, stream);
  const Codebook book = build_codebook(counts.data(), p.symbol_bytes, p.max_length);
  const Buffer table = upload(book.encode, stream);
  const uint32_t entries = uint32_t(book.entries.size());
  std::vector<uint32_t> head(1 + entries);
  head[0] = entries;
  std::copy(book.entries.begin(), book.entries.end(), head.begin() + 1);
  Buffer out = chunked::encode_cuda(DeviceCoder{p, table.as<uint64_t>(), nullptr, book.escape}, input, input_bytes,
                                    stream, 4 * head.size());
  copy_bytes(out.data(), Location::device, head.data(), Location::host, 4 * head.size(), stream);
  return out;
}

void decode_cuda(const Params& p, const uint8_t* encoded, uint64_t encoded_bytes, uint8_t* output,
                 uint64_t output_bytes, cudaStream_t stream) {
  require_data(encoded_bytes >= 4, "huffman codebook size");
  // The codebook, read back with one copy: at most its largest size.
  const uint64_t head_max = std::min<uint64_t>(encoded_bytes, 4 + 4 * max_entries(p, output_bytes));
  std::vector<uint32_t> head((head_max + 3) / 4);
  copy_bytes(head.data(), Location::host, encoded, Location::device, head_max, stream);
  const uint32_t entries = head[0];
  require_data(entries <= max_entries(p, output_bytes) && 4 + 4 * uint64_t(entries) <= encoded_bytes,
               "huffman codebook size");
  const Codebook book = codebook_from_entries(std::vector<uint32_t>(head.begin() + 1, head.begin() + 1 + entries),
                                              p.symbol_bytes, p.max_length);
  const Buffer table = upload(book.decode, stream);
  const uint64_t at = 4 + 4 * uint64_t(entries);
  chunked::decode_cuda(DeviceCoder{p, nullptr, table.as<uint32_t>(), book.escape}, encoded + at, encoded_bytes - at,
                       output, output_bytes, stream);
}

}  // namespace fzg::huffman
