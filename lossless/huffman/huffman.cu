// CUDA backend of the Huffman stage. The histogram is histogram.cu's; the codebook is built on
// the host from it by the CPU's code (codebook.cc: a few thousand symbols, well under the time
// of the kernels), so both backends code with the same book, and only its entries go back up.
// Encode, on the chunked-stream scaffold: a block of four warps per chunk, each warp coding a
// quarter of every format lane (lane l: the chunk's symbols l, l + 32, ...); their bit counts
// and a scan place every part's bits. Decode: a warp per chunk, every lane walking its own lane
// by L-bit table lookups, symbol j of the chunk written by lane j % 32, so each step's 32
// symbols are written together.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.hh"
#include "lossless/huffman/codebook.hh"
#include "lossless/huffman/histogram.hh"
#include "lossless/huffman/huffman.hh"
#include "lossless/huffman/stored_book.hh"
#include "runtime/device_words.cuh"
#include "runtime/timer.hh"
#include "varlen/chunked_stream.cuh"

namespace fzg::huffman {

namespace {

// A little-endian u32 at any byte address (a chunk's stored bytes start anywhere): one load
// where it is aligned.
__device__ __forceinline__ uint32_t load_u32(const uint8_t* p, bool aligned) {
  if (aligned) return *reinterpret_cast<const uint32_t*>(p);
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

struct DeviceCoder {
  Params p;
  const uint64_t* encode_table = nullptr;  // Codebook::encode
  const uint32_t* decode_table = nullptr;  // Codebook::decode
  uint32_t escape = 0;

  static constexpr int encode_threads = 128;
  static constexpr bool encode_defers = false;  // every chunk codes in about the same time
  static constexpr bool decode_staged = false;  // each step writes 32 symbols in order
  __host__ __device__ uint32_t chunk_bytes() const { return p.chunk_bytes; }
  __host__ __device__ uint32_t encode_shared_bytes() const { return 4 * encode_threads; }

  // Symbol j of a chunk: one 2-byte load where the chunk is 2-byte aligned (the usual case of
  // u16 codes), byte loads otherwise.
  __device__ uint32_t symbol(const uint8_t* in, uint32_t j, bool aligned) const {
    if (p.symbol_bytes == 2 && aligned) return reinterpret_cast<const uint16_t*>(in)[j];
    return symbol_at(in, j, p.symbol_bytes);
  }
  // The codes of lane `lane`'s symbols t .. t + batch - 1 (below `last`; 0, no bits, past it):
  // all the loads issued before any is used, so a warp keeps many in flight.
  static constexpr uint32_t batch = 8;
  __device__ void load_codes(const uint8_t* in, uint32_t lane, uint32_t t, uint32_t last, bool aligned,
                             uint64_t (&codes)[batch]) const {
    uint32_t symbols[batch];
#pragma unroll
    for (uint32_t k = 0; k < batch; ++k) symbols[k] = t + k < last ? symbol(in, lane + 32 * (t + k), aligned) : 0;
#pragma unroll
    for (uint32_t k = 0; k < batch; ++k) codes[k] = t + k < last ? __ldg(encode_table + symbols[k]) : 0;
  }

  // Every warp of the block takes a contiguous part of each lane's symbols (warp w the w-th
  // quarter of lane l's), so four warps share a chunk's work: the parts' bit counts, scanned
  // per lane and then across lanes, place each part's bits in the staged words; a part's
  // first and last words may be shared with its neighbours' and are or-ed in.
  __device__ uint32_t encode_chunk(const uint8_t* in, uint32_t n, uint8_t* out, uint32_t capacity,
                                   uint8_t* shared) const {
    constexpr uint32_t warps = encode_threads / 32;
    const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32, S = p.symbol_bytes, m = n / S, tail = n % S;
    const bool aligned = reinterpret_cast<uintptr_t>(in) % 2 == 0;
    const uint32_t per_lane = (m + 31 - lane) / 32, part = (per_lane + warps - 1) / warps;
    const uint32_t first = min(per_lane, warp * part), last = min(per_lane, first + part);
    uint32_t bits = 0;
    for (uint32_t t = first; t < last; t += batch) {
      uint64_t codes[batch];
      load_codes(in, lane, t, last, aligned, codes);
#pragma unroll
      for (uint32_t k = 0; k < batch; ++k) bits += uint32_t(codes[k] >> 32);
    }
    auto* part_bits = reinterpret_cast<uint32_t*>(shared);  // [warps][lanes]
    part_bits[warp * 32 + lane] = bits;
    __syncthreads();
    uint32_t before_part = 0, lane_bits = 0;
    for (uint32_t w = 0; w < warps; ++w) {
      const uint32_t b = part_bits[w * 32 + lane];
      before_part += w < warp ? b : 0;
      lane_bits += b;
    }
    const uint32_t words = (lane_bits + 31) / 32;
    uint32_t total;
    const uint32_t before = warp_exclusive_sum(words, total);  // the same in every warp
    const uint32_t size = lane_header_bytes + 4 * total + tail;
    if (size > capacity) return capacity + 1;  // uniform across the block
    auto* word_out = reinterpret_cast<uint32_t*>(out + lane_header_bytes);  // `out` is 16-byte aligned
    for (uint32_t k = threadIdx.x; k < total; k += encode_threads) word_out[k] = 0;
    if (warp == 0) {
      out[2 * lane] = uint8_t(words), out[2 * lane + 1] = uint8_t(words >> 8);
      if (lane < tail) out[lane_header_bytes + 4 * total + lane] = in[m * S + lane];
    }
    __syncthreads();
    const uint32_t at = 32 * before + before_part;  // the part's first bit
    uint32_t* to = word_out + at / 32;
    uint64_t buffer = 0;
    uint32_t held = at % 32;
    bool shared_word = held != 0;  // the first word written may hold the previous part's bits
    for (uint32_t t = first; t < last; t += batch) {
      uint64_t codes[batch];
      load_codes(in, lane, t, last, aligned, codes);
#pragma unroll
      for (uint32_t k = 0; k < batch; ++k) {
        buffer |= uint64_t(uint32_t(codes[k])) << held;
        held += uint32_t(codes[k] >> 32);
        if (held >= 32) {
          if (shared_word) atomicOr(to, uint32_t(buffer));
          else *to = uint32_t(buffer);
          ++to, buffer >>= 32, held -= 32, shared_word = false;
        }
      }
    }
    if (held > 0 && last > first) atomicOr(to, uint32_t(buffer));
    __syncthreads();
    return size;
  }

  __host__ __device__ uint32_t decode_shared_bytes() const { return 0; }

  __device__ bool decode_chunk(const uint8_t* in, uint32_t size, uint8_t* out, uint32_t n, uint8_t*) const {
    const uint32_t lane = threadIdx.x % 32, S = p.symbol_bytes, m = n / S, tail = n % S, L = p.max_length;
    if (size < lane_header_bytes + tail) return false;  // uniform
    const bool aligned = reinterpret_cast<uintptr_t>(in) % 4 == 0, out_aligned = reinterpret_cast<uintptr_t>(out) % 2 == 0;
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
        buffer |= uint64_t(next < words ? load_u32(lane_words + 4 * next, aligned) : 0u) << held;
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
      if (S == 2 && out_aligned) reinterpret_cast<uint16_t*>(out)[j] = uint16_t(symbol);
      else store_symbol(out, j, S, symbol);
    }
    // Exactly the words the lane's bits need, the last one's unused bits zero.
    ok = ok && (consumed + 31) / 32 == words;
    if (ok && consumed % 32) ok = (load_u32(lane_words + 4 * (words - 1), aligned) >> (consumed % 32)) == 0;
    ok = __all_sync(0xffffffffu, ok);
    if (ok && lane < tail) out[m * S + lane] = in[size - tail + lane];
    __syncwarp();
    return ok;
  }
};

// The encode table (Codebook::encode) from the entries and their codes: a thread per symbol
// finds its entry by binary search (entries are in increasing symbol order); a symbol without
// one is the escape's code then its S bytes (or has no code when there is no escape). So only
// the codebook's entries travel to the device, not a table of 2^(8S) + 1 codes.
__global__ void encode_table_kernel(const uint32_t* __restrict__ entries, const uint64_t* __restrict__ codes,
                                    uint32_t count, uint32_t escape, uint32_t symbol_bytes, uint64_t* table) {
  const uint32_t s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s > escape) return;
  uint32_t low = 0, high = count;  // the first entry whose symbol is at least s
  while (low < high) {
    const uint32_t mid = (low + high) / 2;
    if ((entries[mid] & 0xffffffu) < s) low = mid + 1;
    else high = mid;
  }
  if (low < count && (entries[low] & 0xffffffu) == s) {
    table[s] = codes[low];
    return;
  }
  const bool has_escape = count > 0 && (entries[count - 1] & 0xffffffu) == escape;
  table[s] = has_escape ? escaped_code(codes[count - 1], s, symbol_bytes) : 0;
}

template <typename T>
Buffer upload(const std::vector<T>& values, cudaStream_t stream) {
  Buffer b = Buffer::device(values.size() * sizeof(T), stream);
  if (!values.empty()) copy_bytes(b.data(), Location::device, values.data(), Location::host, b.size(), stream);
  return b;
}

}  // namespace

Buffer encode_cuda(const Params& p, const uint8_t* input, uint64_t input_bytes, cudaStream_t stream) {
  const std::vector<Leaf> leaves = occurring_symbols_cuda(p, input, input_bytes, stream);
  trace::mark("huffman: histogram read");
  const std::vector<uint32_t> entries = code_lengths(leaves, p.symbol_bytes, p.max_length);
  trace::mark("huffman: codebook built");
  const uint32_t E = uint32_t(entries.size()), escape = 1u << (8 * p.symbol_bytes);
  const std::vector<uint64_t> codes = canonical_codes(entries);
  const std::vector<uint8_t> stored = write_book(entries);  // a multiple of 4 bytes
  // One upload: the entries, then (8-byte aligned) their codes, then the stored book.
  const uint64_t codes_at = (uint64_t(E) + 1) / 2, stored_at = codes_at + E;
  std::vector<uint64_t> up(stored_at + (stored.size() + 7) / 8);
  std::copy(entries.begin(), entries.end(), reinterpret_cast<uint32_t*>(up.data()));
  std::copy(codes.begin(), codes.end(), up.begin() + codes_at);
  std::memcpy(up.data() + stored_at, stored.data(), stored.size());
  const Buffer device_up = upload(up, stream);
  Buffer table = Buffer::device(8 * (uint64_t(escape) + 1), stream);
  encode_table_kernel<<<(escape + 256) / 256, 256, 0, stream>>>(device_up.as<uint32_t>(),
                                                               device_up.as<uint64_t>() + codes_at, E, escape,
                                                               p.symbol_bytes, table.as<uint64_t>());
  FZG_CUDA_CHECK_LAUNCH();
  Buffer out = chunked::encode_cuda(DeviceCoder{p, table.as<uint64_t>(), nullptr, escape}, input, input_bytes, stream,
                                    stored.size());
  trace::mark("huffman: chunks coded");
  copy_bytes_async(out.data(), Location::device, device_up.as<uint64_t>() + stored_at, Location::device,
                   stored.size(), stream);
  return out;
}

void decode_cuda(const Params& p, const uint8_t* encoded, uint64_t encoded_bytes, uint8_t* output,
                 uint64_t output_bytes, cudaStream_t stream) {
  // The codebook, read back with one copy: at most its largest size.
  const uint64_t entries_max = max_entries(p, output_bytes);
  const uint64_t head_max = std::min<uint64_t>(encoded_bytes, max_book_bytes(entries_max, p.symbol_bytes));
  std::vector<uint8_t> head(head_max);
  copy_bytes(head.data(), Location::host, encoded, Location::device, head_max, stream);
  StoredBook stored = read_book(head.data(), head_max, entries_max, p.symbol_bytes);
  const Codebook book = codebook_from_entries(std::move(stored.entries), p.symbol_bytes, p.max_length);
  const Buffer table = upload(book.decode, stream);
  const uint64_t at = stored.bytes;
  chunked::decode_cuda(DeviceCoder{p, nullptr, table.as<uint32_t>(), book.escape}, encoded + at, encoded_bytes - at,
                       output, output_bytes, stream);
}

}  // namespace fzg::huffman
