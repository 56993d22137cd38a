// fzg64 on the GPU: a kernel that sums each stream's 8-byte words' terms (and copies them
// into a file on the way, for the container). Reads each byte of the stream once; the sum
// is exact integer arithmetic, so any reduction order gives the CPU's value.
#include <cub/block/block_reduce.cuh>

#include <algorithm>

#include "core/checksum.cuh"
#include "core/checksum.hh"
#include "runtime/cuda_check.cuh"
#include "runtime/launch.cuh"

namespace fzg {

namespace {

// Sums stream blockIdx.y's checksum terms into sums[blockIdx.y] (checksum.cuh).
__global__ void __launch_bounds__(checksum_threads) checksum_kernel(SummedStreams batch, unsigned long long* sums) {
  sum_block_part(batch, sums);
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
    const dim3 grid(resident_grid(checksum_kernel, checksum_threads, most_words, checksum_threads), n);
    checksum_kernel<<<grid, checksum_threads, 0, stream>>>(batch, reinterpret_cast<unsigned long long*>(sums + first));
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
