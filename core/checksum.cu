// fzg64 on the GPU: a kernel that sums each stream's 8-byte words' terms (and copies them
// into a file on the way, for the container). Reads each byte of the stream once; the sum
// is exact integer arithmetic, so any reduction order gives the CPU's value.
#include <cub/block/block_reduce.cuh>

#include <algorithm>

#include "core/checksum.hh"
#include "runtime/cuda_check.cuh"
#include "runtime/launch.cuh"

namespace fzg {

namespace {

constexpr int block_threads = 256;

// Word i of a stream (8 bytes little-endian, zero past the end). Streams are 4- or 8-byte
// aligned in fzg's allocations; stay byte-safe for any caller.
__device__ __forceinline__ uint64_t stream_word(const uint8_t* data, size_t size_bytes, uint64_t i) {
  uint64_t w = 0;
  const uint8_t* p = data + 8 * i;
  if (8 * i + 8 <= size_bytes) {
    const uintptr_t misalignment = reinterpret_cast<uintptr_t>(p) & 7;
    if (misalignment == 0) return *reinterpret_cast<const uint64_t*>(p);
    if (misalignment == 4) {  // a slice of a word array (shuffle-pack's stream)
      const auto* half = reinterpret_cast<const uint32_t*>(p);
      return uint64_t(half[0]) | uint64_t(half[1]) << 32;
    }
  }
  for (size_t b = 0; b < 8 && 8 * i + b < size_bytes; ++b) w |= uint64_t(p[b]) << (8 * b);
  return w;
}

// A stream to sum, and where its words go (null: nowhere).
struct Summed {
  const uint8_t* data;
  size_t size_bytes;
  uint8_t* copy_to;
};

// Up to this many streams a launch (a launch costs host time: ~3-5 us each on an H100, where
// a small field's whole GPU call is ~150 us).
constexpr uint32_t streams_a_launch = 8;
struct SummedStreams {
  Summed streams[streams_a_launch];
};

// Sums stream blockIdx.y's checksum terms into sums[blockIdx.y] and, with a destination,
// copies its words there on the way. The integer sum is exact, so the order in which blocks
// add their parts does not matter.
__global__ void __launch_bounds__(block_threads) checksum_kernel(SummedStreams batch, unsigned long long* sums) {
  using Reduce = cub::BlockReduce<uint64_t, block_threads>;
  __shared__ typename Reduce::TempStorage storage;
  const Summed s = batch.streams[blockIdx.y];
  const uint64_t words = (s.size_bytes + 7) / 8;
  if (uint64_t(blockIdx.x) * block_threads >= words) return;  // uniform across the block
  auto* destination = reinterpret_cast<uint64_t*>(s.copy_to);
  uint64_t part = 0;
  for (uint64_t i = blockIdx.x * uint64_t(block_threads) + threadIdx.x; i < words;
       i += uint64_t(gridDim.x) * block_threads) {
    const uint64_t w = stream_word(s.data, s.size_bytes, i);
    if (destination) destination[i] = w;
    part += checksum_mix(w ^ (i * checksum_salt));
  }
  const uint64_t block_sum = Reduce(storage).Sum(part);
  if (threadIdx.x == 0) atomicAdd(sums + blockIdx.y, static_cast<unsigned long long>(block_sum));
}

// Into sums zeroed by one memset, one launch for up to eight streams (a grid row each, as
// many blocks as the largest needs): what CUB's reduction took per stream (a size query,
// scratch, two kernels) cost ~20 us of host time in a 2D field's GPU decompress call on an
// H100, and a launch per stream ~4 us more a stream.
void sum_streams(const std::vector<Summed>& streams, uint64_t* sums, cudaStream_t stream) {
  FZG_CUDA_CHECK(cudaMemsetAsync(sums, 0, streams.size() * sizeof(uint64_t), stream));
  for (size_t first = 0; first < streams.size(); first += streams_a_launch) {
    const uint32_t n = uint32_t(std::min<size_t>(streams_a_launch, streams.size() - first));
    SummedStreams batch{};
    uint64_t most_words = 0;
    for (uint32_t k = 0; k < n; ++k) {
      batch.streams[k] = streams[first + k];
      most_words = std::max<uint64_t>(most_words, (streams[first + k].size_bytes + 7) / 8);
    }
    if (most_words == 0) continue;
    const dim3 grid(resident_grid(checksum_kernel, block_threads, most_words, block_threads), n);
    checksum_kernel<<<grid, block_threads, 0, stream>>>(batch, reinterpret_cast<unsigned long long*>(sums + first));
    FZG_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

void checksum_copy_device(const std::vector<Buffer>& streams, const std::vector<uint64_t>& offsets, uint8_t* file,
                          uint64_t* sums, cudaStream_t stream) {
  std::vector<Summed> summed;
  for (size_t s = 0; s < streams.size(); ++s) summed.push_back({streams[s].data(), streams[s].size(), file + offsets[s]});
  sum_streams(summed, sums, stream);
}

void checksum_terms_device(const std::vector<Buffer>& buffers, uint64_t* sums, cudaStream_t stream) {
  std::vector<Summed> summed;
  for (const Buffer& b : buffers)  // a host buffer's slot stays zero
    summed.push_back(b.on_device() ? Summed{b.data(), b.size(), nullptr} : Summed{nullptr, 0, nullptr});
  sum_streams(summed, sums, stream);
}

}  // namespace fzg
