// The symbol histogram on the GPU, read back as the symbols that occur. A predictor's codes crowd a few symbols (Lorenzo's
// sign-magnitude codes: small magnitudes of either sign), so a general-purpose histogram of
// 2^16 bins in global memory spends its time in atomics on the same few addresses (CUB's
// took 1 ms for 64 M codes). Here each block counts the crowded window (magnitudes below
// 2^12 of either sign, or every byte) in shared memory and everything else in global memory,
// and each thread first merges runs of one symbol in a register, so a field of mostly one
// code costs few atomics of any kind.
#include <algorithm>

#include "lossless/huffman/histogram.hh"
#include "runtime/buffer.hh"
#include "runtime/cuda_check.cuh"
#include "runtime/launch.cuh"

namespace fzg::huffman {

namespace {

constexpr int histogram_threads = 256;
constexpr uint32_t window_magnitudes = 4096;  // per sign, for 2-byte symbols

template <uint32_t S>
struct Window {
  static constexpr uint32_t bins = S == 1 ? 256 : 2 * window_magnitudes;
  // The symbol's shared bin, or bins when it is counted in global memory.
  __device__ static uint32_t bin(uint32_t s) {
    if constexpr (S == 1) return s;
    const uint32_t magnitude = s & 0x7fffu;
    return magnitude < window_magnitudes ? (s >> 15) * window_magnitudes + magnitude : bins;
  }
  __device__ static uint32_t symbol(uint32_t b) {
    if constexpr (S == 1) return b;
    return (b / window_magnitudes) << 15 | b % window_magnitudes;
  }
};

template <uint32_t S>
struct Counter {
  uint32_t* shared;
  unsigned long long* global;
  uint32_t held = 0, count = 0;  // the run being merged

  __device__ void flush() {
    if (count == 0) return;
    const uint32_t b = Window<S>::bin(held);
    if (b < Window<S>::bins) atomicAdd(shared + b, count);
    else atomicAdd(global + held, (unsigned long long)count);
  }
  __device__ void add(uint32_t s) {
    if (s == held) {
      ++count;
      return;
    }
    flush();
    held = s, count = 1;
  }
};

// Symbols [0, m) of `in`: the first `vectors` 16-byte words (in is 16-byte aligned when
// vectors > 0) by vector loads, the rest one by one. Per launch m < 2^32, so no shared
// counter overflows.
template <uint32_t S>
__global__ void __launch_bounds__(histogram_threads)
    histogram_kernel(const uint8_t* __restrict__ in, uint64_t m, uint64_t vectors, unsigned long long* counts) {
  __shared__ uint32_t bins[Window<S>::bins];
  for (uint32_t b = threadIdx.x; b < Window<S>::bins; b += blockDim.x) bins[b] = 0;
  __syncthreads();
  Counter<S> counter{bins, counts};
  const uint64_t thread = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x, threads = uint64_t(gridDim.x) * blockDim.x;
  const auto* words = reinterpret_cast<const uint4*>(in);
  for (uint64_t v = thread; v < vectors; v += threads) {
    const uint4 w = words[v];
    const uint32_t four[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (const uint32_t word : four) {
      if constexpr (S == 1) {
        for (uint32_t k = 0; k < 4; ++k) counter.add((word >> (8 * k)) & 0xffu);
      } else {
        counter.add(word & 0xffffu), counter.add(word >> 16);
      }
    }
  }
  for (uint64_t j = vectors * (16 / S) + thread; j < m; j += threads) counter.add(symbol_at(in, j, S));
  counter.flush();
  __syncthreads();
  for (uint32_t b = threadIdx.x; b < Window<S>::bins; b += blockDim.x)
    if (bins[b]) atomicAdd(counts + Window<S>::symbol(b), (unsigned long long)bins[b]);
}

template <uint32_t S>
void count_symbols(const uint8_t* input, uint64_t m, unsigned long long* counts, cudaStream_t stream) {
  constexpr uint64_t piece = uint64_t(1) << 31;
  for (uint64_t first = 0; first < m; first += piece) {
    const uint64_t count = std::min(piece, m - first);
    const uint8_t* from = input + first * S;
    const uint64_t vectors = reinterpret_cast<uintptr_t>(from) % 16 == 0 ? count * S / 16 : 0;
    auto kernel = histogram_kernel<S>;
    const unsigned grid = resident_grid(kernel, histogram_threads, std::max<uint64_t>(vectors, count / 16),
                                        histogram_threads);
    kernel<<<grid, histogram_threads, 0, stream>>>(from, count, vectors, counts);
    FZG_CUDA_CHECK_LAUNCH();
  }
}

// The non-zero bins as leaves, at places claimed by an atomic counter (the host sorts them).
__global__ void leaves_kernel(const unsigned long long* __restrict__ counts, uint32_t alphabet, Leaf* leaves,
                              unsigned long long* found) {
  const uint32_t s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= alphabet || counts[s] == 0) return;
  leaves[atomicAdd(found, 1ull)] = Leaf{s, counts[s]};
}

}  // namespace

std::vector<Leaf> occurring_symbols_cuda(const Params& p, const uint8_t* input, uint64_t input_bytes,
                                         cudaStream_t stream) {
  const uint32_t alphabet = 1u << (8 * p.symbol_bytes);
  const uint64_t m = input_bytes / p.symbol_bytes;
  if (m == 0) return {};
  // counts[alphabet] | found | leaves[alphabet]
  Buffer scratch = Buffer::device(8 * (uint64_t(alphabet) + 1) + sizeof(Leaf) * uint64_t(alphabet), stream);
  auto* counts = scratch.as<unsigned long long>();
  auto* leaves = reinterpret_cast<Leaf*>(counts + alphabet + 1);
  FZG_CUDA_CHECK(cudaMemsetAsync(counts, 0, 8 * (uint64_t(alphabet) + 1), stream));
  if (p.symbol_bytes == 1) count_symbols<1>(input, m, counts, stream);
  else count_symbols<2>(input, m, counts, stream);
  leaves_kernel<<<(alphabet + 255) / 256, 256, 0, stream>>>(counts, alphabet, leaves, counts + alphabet);
  FZG_CUDA_CHECK_LAUNCH();
  std::vector<Leaf> found(read_back(counts + alphabet, stream));
  if (!found.empty())
    copy_bytes(found.data(), Location::host, leaves, Location::device, sizeof(Leaf) * found.size(), stream);
  return found;
}

}  // namespace fzg::huffman
