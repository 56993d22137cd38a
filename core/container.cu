// The container's metadata finished on the device: stream checksums and the header checksum
// filled in where the stream sums already are, so a device file is assembled without the
// host waiting for them.
#include <cub/block/block_reduce.cuh>
#include <cstring>

#include "core/checksum.hh"
#include "core/container.hh"
#include "runtime/cuda_check.cuh"

namespace fzg {

namespace {

constexpr int block_threads = 256;
constexpr uint64_t header_checksum_word = header_checksum_offset / 8;

// Metadata small enough to travel as a kernel argument (copied at launch, so the host's bytes
// may go away at once); within the 4 KiB that every CUDA version accepts for arguments. A
// usual file's metadata (one chunk, 200-400 bytes) takes the small form: a launch's time grows
// with its arguments' bytes.
template <uint64_t Words>
struct InlineMetadata {
  static constexpr uint64_t capacity_words = Words;
  uint64_t words[Words];
};
using SmallMetadata = InlineMetadata<64>;
using LargeMetadata = InlineMetadata<480>;

// One block. With `has_inline`, the metadata goes to the file first (else its bytes are there
// already); then each stream's checksum slot gets its summed terms plus the length term,
// and the header checksum word the fzg64 of the whole metadata (computed with that word zero, as on the CPU).
template <typename Inline>
__global__ void __launch_bounds__(block_threads) finish_metadata_kernel(uint64_t* file, uint64_t words,
                                                                        uint64_t streams,
                                                                        const uint64_t* __restrict__ stream_sums,
                                                                        Inline metadata, bool has_inline) {
  if (has_inline)
    for (uint64_t i = threadIdx.x; i < words; i += block_threads) file[i] = metadata.words[i];
  __syncthreads();
  // The stream table ends the metadata: per stream, its size then its checksum.
  for (uint64_t s = threadIdx.x; s < streams; s += block_threads) {
    const uint64_t slot = words - 2 * uint64_t(streams - s);
    file[slot + 1] = stream_sums[s] + checksum_mix(file[slot]);
  }
  if (threadIdx.x == 0) file[header_checksum_word] = 0;
  __syncthreads();
  uint64_t part = 0;
  for (uint64_t i = threadIdx.x; i < words; i += block_threads) part += checksum_mix(file[i] ^ (i * checksum_salt));
  using Reduce = cub::BlockReduce<uint64_t, block_threads>;
  __shared__ typename Reduce::TempStorage storage;
  const uint64_t sum = Reduce(storage).Sum(part);
  __syncthreads();  // every thread has read the checksum word before it changes
  if (threadIdx.x == 0) file[header_checksum_word] = sum + checksum_mix(8 * words);
}

template <typename Inline>
void finish_with(const std::vector<uint8_t>& metadata, uint64_t streams, const uint64_t* stream_sums, uint8_t* file,
                 cudaStream_t stream) {
  const uint64_t words = metadata.size() / 8;
  Inline inline_metadata;
  const bool has_inline = words <= Inline::capacity_words;
  if (has_inline) std::memcpy(inline_metadata.words, metadata.data(), metadata.size());
  else copy_bytes(file, Location::device, metadata.data(), Location::host, metadata.size(), stream);  // waits
  finish_metadata_kernel<<<1, block_threads, 0, stream>>>(reinterpret_cast<uint64_t*>(file), words, streams,
                                                          stream_sums, inline_metadata, has_inline);
  FZG_CUDA_CHECK_LAUNCH();
}

}  // namespace

void finish_metadata_device(const std::vector<uint8_t>& metadata, uint64_t streams, const uint64_t* stream_sums,
                            uint8_t* file, cudaStream_t stream) {
  // write_metadata keeps the metadata whole words, the fixed header first, the stream table last.
  static_assert(fixed_header_bytes % 8 == 0 && fixed_header_bytes / 8 > header_checksum_word, "header layout");
  if (metadata.size() / 8 <= SmallMetadata::capacity_words)
    finish_with<SmallMetadata>(metadata, streams, stream_sums, file, stream);
  else
    finish_with<LargeMetadata>(metadata, streams, stream_sums, file, stream);
}

}  // namespace fzg
