// CUDA backend of a decode's codes of every point from the codes of the points with data
// (lorenzo.hh), as scatter_data_codes_cpu, by the points' data bits (DataBits): the words are
// cut into segments of 256, one a thread; a first pass counts each segment's points with data,
// the shared scan (varlen/scan.cuh) gives every segment its first code, and a second pass moves
// the codes, a block per segment: a block scan of the threads' counts places each word, then
// each warp walks its 32 words, a word's 32 codes by the 32 lanes (one coalesced store of a
// row's 32 neighbours). The total is checked against the stream's code count (read back
// before the move). (A masked encode writes its codes in place: no gather.)
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "core/error.hh"
#include "predictors/lorenzo/lorenzo.hh"
#include "runtime/cuda_check.cuh"
#include "runtime/launch.cuh"
#include "varlen/scan.cuh"

namespace fzg::lorenzo {

namespace {

constexpr int segment_words = 256;  // a thread's word each

// The words as the kernels read them: where word w's 32 points start in field order, and
// how many of them the row holds.
struct Words {
  const uint32_t* bits;
  DataBits layout;

  __device__ uint32_t at(uint64_t w) const { return w < layout.words() ? bits[w] : 0u; }
  __device__ void place(uint64_t w, uint64_t& first_point, uint32_t& points) const {
    if (w >= layout.words()) {
      first_point = 0, points = 0;
      return;
    }
    layout.place(w, first_point, points);
  }
};

__global__ void __launch_bounds__(segment_words) segment_counts_kernel(Words words, uint64_t segments,
                                                                       uint32_t* __restrict__ counts) {
  using Reduce = cub::BlockReduce<uint32_t, segment_words>;
  __shared__ typename Reduce::TempStorage temp;
  for (uint64_t s = blockIdx.x; s < segments; s += gridDim.x) {
    const uint32_t total = Reduce(temp).Sum(__popc(words.at(s * segment_words + threadIdx.x)));
    if (threadIdx.x == 0) counts[s] = total;
    __syncthreads();
  }
}

// Point i with data is the (count of points with data before it)-th data code: all[i] =
// data[j] there, 0 at missing points. A warp moves its 32 words `batch` at a time, all the
// batch's loads issued before its stores: one word's 64 bytes in flight a warp left the move
// latency-bound (174 us for 100 M points, 52 % missing, H100).
__global__ void __launch_bounds__(segment_words) scatter_kernel(const uint16_t* __restrict__ in, Words words,
                                                             uint64_t segments, const uint64_t* __restrict__ first,
                                                             uint16_t* __restrict__ out) {
  using Scan = cub::BlockScan<uint32_t, segment_words>;
  constexpr int batch = 8;
  __shared__ typename Scan::TempStorage temp;
  const uint32_t lane = threadIdx.x % 32, below = (1u << lane) - 1;
  for (uint64_t s = blockIdx.x; s < segments; s += gridDim.x) {
    const uint64_t w = s * segment_words + threadIdx.x;
    const uint32_t bits = words.at(w);
    uint32_t before;
    Scan(temp).ExclusiveSum(uint32_t(__popc(bits)), before);
    const uint64_t my_first_code = first[s] + before;
    uint64_t my_first_point;
    uint32_t my_points;
    words.place(w, my_first_point, my_points);
    uint32_t rest = 0xffffffffu;  // the warp's words still to move, a bit a lane's word
    while (rest) {
      uint64_t to[batch];
      uint16_t value[batch];
      bool store[batch];
#pragma unroll
      for (int u = 0; u < batch; ++u) {
        const bool real = rest != 0;  // a batch's last places may be past the warp's last word
        const int j = real ? __ffs(rest) - 1 : 0;
        rest &= rest - 1;
        const uint32_t b = __shfl_sync(0xffffffffu, bits, j);
        const uint64_t code = __shfl_sync(0xffffffffu, my_first_code, j) + __popc(b & below);
        const uint64_t point = __shfl_sync(0xffffffffu, my_first_point, j) + lane;
        const uint32_t points = __shfl_sync(0xffffffffu, my_points, j);
        const bool has_data = real && (b >> lane & 1u);
        store[u] = real && lane < points, to[u] = point;
        value[u] = has_data ? in[code] : uint16_t(0);
      }
#pragma unroll
      for (int u = 0; u < batch; ++u)
        if (store[u]) out[to[u]] = value[u];
    }
    __syncthreads();  // the scan's storage is reused by the next segment
  }
}

// Each segment's first data code; first[segments] is the total.
struct DataPlaces {
  uint64_t segments = 0;
  Buffer first;
  const uint64_t* total() const { return first.as<uint64_t>() + segments; }
};

// Queued on the stream; nothing is read back.
DataPlaces data_places(const Words& words, cudaStream_t stream) {
  DataPlaces places;
  places.segments = (words.layout.words() + segment_words - 1) / segment_words;
  Buffer counts = Buffer::device(places.segments * sizeof(uint32_t), stream);
  places.first = Buffer::device((places.segments + 1) * sizeof(uint64_t), stream);
  segment_counts_kernel<<<grid_for(places.segments, 1), segment_words, 0, stream>>>(words, places.segments,
                                                                                  counts.as<uint32_t>());
  FZG_CUDA_CHECK_LAUNCH();
  varlen::exclusive_scan(varlen::CountTerms{counts.as<uint32_t>(), places.segments}, places.segments,
                         places.first.as<uint64_t>(), uint64_t(0), varlen::Plus{}, stream);
  return places;
}

uint64_t read_total(const DataPlaces& places, cudaStream_t stream) {
  uint64_t total;
  copy_bytes(&total, Location::host, places.total(), Location::device, sizeof total, stream);
  return total;
}

Words words_of(const uint32_t* data_bits, const Dims& dims) {
  return {data_bits, DataBits(dims)};
}

}  // namespace

void scatter_data_codes_cuda(const uint16_t* data_codes, uint64_t count, const uint32_t* data_bits, const Dims& dims,
                             uint16_t* codes, cudaStream_t stream) {
  const Words words = words_of(data_bits, dims);
  const DataPlaces places = data_places(words, stream);
  require_data(read_total(places, stream) == count, "lorenzo codes size");  // before any code past `count` is read
  scatter_kernel<<<grid_for(places.segments, 1), segment_words, 0, stream>>>(
      data_codes, words, places.segments, places.first.as<uint64_t>(), codes);
  FZG_CUDA_CHECK_LAUNCH();
}

}  // namespace fzg::lorenzo
