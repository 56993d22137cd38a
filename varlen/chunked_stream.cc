// The chunked-stream scaffold on the CPU: every chunk coded into a slot of its own in
// parallel, then the two-pass compaction (the shared scan of the stored sizes, the copies in
// parallel).
#include "varlen/chunked_stream.hh"

#include <cstring>
#include <exception>
#include <vector>

#include "core/error.hh"
#include "varlen/scan.hh"

namespace fzg::chunked {

Buffer encode_cpu(const ChunkCoder& coder, const uint8_t* input, uint64_t input_bytes, uint64_t head_bytes) {
  const uint32_t C = coder.chunk_bytes();
  const uint64_t K = chunk_count(input_bytes, C);
  std::vector<uint32_t> table(K);
  std::vector<uint8_t> slots(K * uint64_t(C));
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t k = 0; k < int64_t(K); ++k) {
    const uint32_t n = chunk_size(input_bytes, C, uint64_t(k));
    const uint64_t size = n > 1 ? coder.encode_chunk(input + uint64_t(k) * C, n, slots.data() + uint64_t(k) * C, n - 1)
                                : n;
    table[k] = size < n ? uint32_t(size) : (n | raw_flag);
  }
  std::vector<uint64_t> at(K + 1);
  const uint64_t payload = varlen::exclusive_scan([&](uint64_t k) -> uint64_t { return table[k] & ~raw_flag; }, K,
                                                  at.data());
  Buffer out = Buffer::host(head_bytes + 4 * K + payload);
  if (K) std::memcpy(out.data() + head_bytes, table.data(), 4 * K);
  uint8_t* chunks = out.data() + head_bytes + 4 * K;
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < int64_t(K); ++k) {
    const bool raw = table[k] & raw_flag;
    const uint8_t* from = raw ? input + uint64_t(k) * C : slots.data() + uint64_t(k) * C;
    std::memcpy(chunks + at[k], from, table[k] & ~raw_flag);
  }
  return out;
}

void check_stream(uint64_t stream_bytes, uint64_t input_bytes, uint32_t chunk_bytes) {
  require_data(stream_bytes >= table_bytes(input_bytes, chunk_bytes), "chunked stream shorter than its table");
  require_data(stream_bytes <= max_encoded_size(input_bytes, chunk_bytes), "chunked stream longer than its input");
}

void decode_cpu(const ChunkCoder& coder, const uint8_t* stream, uint64_t stream_bytes, uint8_t* output,
                uint64_t output_bytes) {
  const uint32_t C = coder.chunk_bytes();
  check_stream(stream_bytes, output_bytes, C);
  const uint64_t K = chunk_count(output_bytes, C);
  std::vector<uint64_t> at(K + 1);
  const uint64_t payload = varlen::exclusive_scan(
      [&](uint64_t k) -> uint64_t {
        uint32_t entry;
        std::memcpy(&entry, stream + 4 * k, 4);
        const uint32_t n = chunk_size(output_bytes, C, k), stored = entry & ~raw_flag;
        require_data((entry & raw_flag) ? stored == n : stored >= 1 && stored < n, "chunked stream table");
        return stored;
      },
      K, at.data());
  require_data(payload == stream_bytes - 4 * K, "chunked stream size");
  const uint8_t* chunks = stream + 4 * K;
  // The first failure wins; the others are dropped with it (an exception may not leave a
  // parallel loop).
  std::exception_ptr failure;
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t k = 0; k < int64_t(K); ++k) {
    try {
      uint32_t entry;
      std::memcpy(&entry, stream + 4 * k, 4);
      const uint32_t n = chunk_size(output_bytes, C, uint64_t(k));
      uint8_t* out = output + uint64_t(k) * C;
      if (entry & raw_flag) std::memcpy(out, chunks + at[k], n);
      else coder.decode_chunk(chunks + at[k], entry & ~raw_flag, out, n);
    } catch (...) {
#pragma omp critical(fzg_chunked_failure)
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace fzg::chunked
