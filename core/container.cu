// The container's metadata finished on the device: stream checksums and the header checksum
// filled in where the stream sums already are, so a device file is assembled without the
// host waiting for them.
#include <cub/block/block_reduce.cuh>
#include <algorithm>
#include <cstring>

#include "core/checksum.cuh"
#include "core/checksum.hh"
#include "core/container.hh"
#include "runtime/cuda_check.cuh"
#include "runtime/launch.cuh"

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

// The metadata's finish, by one block: with `has_inline` the metadata goes to the file first
// (else its bytes are there already); then each stream's checksum slot gets its summed terms
// (`sum_of(s)`) plus the length term, and the header checksum word the fzg64 of the whole
// metadata (computed with that word zero, as on the CPU).
template <int Threads, typename Inline, typename SumOf>
__device__ void finish_metadata_block(uint64_t* file, uint64_t words, uint64_t streams, const Inline& metadata,
                                      bool has_inline, SumOf sum_of) {
  if (has_inline)
    for (uint64_t i = threadIdx.x; i < words; i += Threads) file[i] = metadata.words[i];
  __syncthreads();
  // The stream table ends the metadata: per stream, its size then its checksum.
  for (uint64_t s = threadIdx.x; s < streams; s += Threads) {
    const uint64_t slot = words - 2 * uint64_t(streams - s);
    file[slot + 1] = sum_of(s) + checksum_mix(file[slot]);
  }
  if (threadIdx.x == 0) file[header_checksum_word] = 0;
  __syncthreads();
  uint64_t part = 0;
  for (uint64_t i = threadIdx.x; i < words; i += Threads) part += checksum_mix(file[i] ^ (i * checksum_salt));
  using Reduce = cub::BlockReduce<uint64_t, Threads>;
  __shared__ typename Reduce::TempStorage storage;
  const uint64_t sum = Reduce(storage).Sum(part);
  __syncthreads();  // every thread has read the checksum word before it changes
  if (threadIdx.x == 0) file[header_checksum_word] = sum + checksum_mix(8 * words);
}

template <typename Inline>
__global__ void __launch_bounds__(block_threads) finish_metadata_kernel(uint64_t* file, uint64_t words,
                                                                        uint64_t streams,
                                                                        const uint64_t* __restrict__ stream_sums,
                                                                        Inline metadata, bool has_inline) {
  finish_metadata_block<block_threads>(file, words, streams, metadata, has_inline,
                                       [&](uint64_t s) { return stream_sums[s]; });
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

// The streams' copy-and-sum (checksum.cuh) and the metadata's finish in one launch: every
// block takes a ticket once its part of the sums is in (a fence before it), and the block
// that takes the last finishes the metadata as finish_metadata_kernel does. `done` counts the
// tickets (zeroed with the sums, after them).
template <typename Inline>
__global__ void __launch_bounds__(checksum_threads) copy_sum_finish_kernel(SummedStreams batch,
                                                                           unsigned long long* sums,
                                                                           unsigned int* done, uint64_t* file,
                                                                           uint64_t words, uint64_t streams,
                                                                           Inline metadata) {
  sum_block_part(batch, sums);
  __shared__ bool last;
  __threadfence();  // this block's sum (thread 0's atomic) before its ticket
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(done, 1u) == gridDim.x * gridDim.y - 1;
  __syncthreads();
  if (!last) return;  // uniform across the block
  __threadfence();
  // The other blocks' atomics, from L2.
  finish_metadata_block<checksum_threads>(file, words, streams, metadata, true,
                                          [&](uint64_t s) { return uint64_t(__ldcg(sums + s)); });
}

}  // namespace

void copy_streams_and_finish_device(const std::vector<uint8_t>& metadata, const std::vector<Buffer>& streams,
                                    const std::vector<uint64_t>& offsets, uint8_t* file, cudaStream_t stream) {
  uint64_t most_words = 0;
  for (const Buffer& b : streams) most_words = std::max<uint64_t>(most_words, (b.size() + 7) / 8);
  const uint64_t words = metadata.size() / 8;
  // Sums, then the ticket count: zeroed by one memset.
  Buffer sums = Buffer::device((streams.size() + 1) * sizeof(uint64_t), stream);
  if (streams.empty() || streams.size() > streams_a_launch || words > SmallMetadata::capacity_words ||
      most_words == 0) {
    checksum_copy_device(streams, offsets, file, sums.as<uint64_t>(), stream);
    finish_metadata_device(metadata, streams.size(), sums.as<uint64_t>(), file, stream);
    return;
  }
  FZG_CUDA_CHECK(cudaMemsetAsync(sums.data(), 0, sums.size(), stream));
  SummedStreams batch{};
  for (size_t k = 0; k < streams.size(); ++k) batch.streams[k] = {streams[k].data(), streams[k].size(), file + offsets[k]};
  SmallMetadata inline_metadata;
  std::memcpy(inline_metadata.words, metadata.data(), metadata.size());
  const auto kernel = copy_sum_finish_kernel<SmallMetadata>;
  const dim3 grid(resident_grid(kernel, checksum_threads, most_words, checksum_threads), unsigned(streams.size()));
  kernel<<<grid, checksum_threads, 0, stream>>>(batch, reinterpret_cast<unsigned long long*>(sums.data()),
                                                reinterpret_cast<unsigned int*>(sums.as<uint64_t>() + streams.size()),
                                                reinterpret_cast<uint64_t*>(file), words, streams.size(),
                                                inline_metadata);
  FZG_CUDA_CHECK_LAUNCH();
}

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
