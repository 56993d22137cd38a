// The chunked-stream scaffold on the GPU (the layout: varlen/chunked_stream.hh). A coder's .cu
// instantiates encode_cuda / decode_cuda with a device-side coder, a trivially copyable
// struct with:
//
//   __host__ __device__ uint32_t chunk_bytes() const;
//   static constexpr int encode_threads;             // a block per chunk
//   static constexpr bool encode_defers;             // chunks of uneven work (encode_kernel)
//   __host__ __device__ uint32_t encode_shared_bytes() const;  // for encode_chunk
//   __device__ uint32_t encode_chunk(const uint8_t* in, uint32_t n, uint8_t* out,
//                                    uint32_t capacity, uint8_t* shared) const;
//       called by every thread of the block; `out` is shared memory of `capacity` bytes;
//       returns (to every thread) the size written, or any value above `capacity`
//   __host__ __device__ uint32_t decode_shared_bytes() const;  // per warp, for decode_chunk
//   static constexpr bool decode_staged;
//   __device__ bool decode_chunk(const uint8_t* in, uint32_t size, uint8_t* out, uint32_t n,
//                                uint8_t* shared) const;
//       called by one whole warp; `out` is the chunk's n bytes: in shared memory (copied out
//       by the scaffold) when decode_staged, else the output itself (for a coder that writes
//       its output in order, coalesced); returns (to every lane) whether the chunk was
//       consistent
//
// Encode is one pass: a block codes its chunk into shared memory and finds where the stored
// bytes go by the shared look-back (varlen/lookback.cuh), so the input is read once and the
// stream written once; one read-back gives the stream's size (with `encode_defers`, a chunk whose
// predecessors are not all known waits in its staging while the block codes the next). Decode
// scans the table into offsets on the device, decodes a chunk per warp and reads back one word:
// whether every chunk was consistent.
#pragma once
#include <algorithm>

#include "core/error.hh"
#include "runtime/buffer.hh"
#include "runtime/cuda_check.cuh"
#include "runtime/launch.cuh"
#include "varlen/chunked_stream.hh"
#include "varlen/lookback.cuh"
#include "varlen/scan.cuh"

namespace fzg::chunked {

namespace detail {
// `count` bytes in Words where both ends share their alignment modulo sizeof(Word).
template <typename Word>
__device__ __forceinline__ void copy_words(uint8_t* to, const uint8_t* from, uint32_t count, uint32_t thread,
                                           uint32_t threads) {
  constexpr uint32_t W = sizeof(Word);
  const uint32_t head = std::min<uint32_t>(count, (W - (reinterpret_cast<uintptr_t>(to) & (W - 1))) & (W - 1));
  for (uint32_t i = thread; i < head; i += threads) to[i] = from[i];
  const uint32_t words = (count - head) / W;
  auto* to_words = reinterpret_cast<Word*>(to + head);
  const auto* from_words = reinterpret_cast<const Word*>(from + head);
  for (uint32_t i = thread; i < words; i += threads) to_words[i] = from_words[i];
  for (uint32_t i = head + W * words + thread; i < count; i += threads) to[i] = from[i];
}
}  // namespace detail

// `count` bytes from `from` to `to` by the threads [0, threads) that call it (for coders too:
// a chunk into shared memory).
__device__ __forceinline__ void copy_bytes(uint8_t* to, const uint8_t* from, uint32_t count, uint32_t thread,
                                           uint32_t threads) {
  // 16-byte or word copies where both ends share their alignment (the common case of a raw
  // chunk at an aligned place, or a staged chunk copied out), bytes otherwise.
  const auto offset = reinterpret_cast<uintptr_t>(to) ^ reinterpret_cast<uintptr_t>(from);
  if ((offset & 15) == 0) return detail::copy_words<uint4>(to, from, count, thread, threads);
  if ((offset & 3) == 0) return detail::copy_words<uint32_t>(to, from, count, thread, threads);
  for (uint32_t i = thread; i < count; i += threads) to[i] = from[i];
}

namespace detail {

using LookBack = varlen::LookBack<1>;

// A block codes a chunk into a staging buffer, publishes its size and places it (its table
// entry and bytes) once every chunk before it has published. With `encode_defers` (a coder whose
// chunks take different times: its work follows the data), a chunk whose predecessors are not
// all known waits in its staging while the block codes its next chunk into a second one, and is
// placed before that one, its predecessors long done: a block that waited for a slower
// predecessor sat idle (GPULZ's look-back spin was 23 % of its instructions). Coders of even
// chunks keep one staging, and their occupancy.
template <typename Coder>
__global__ void __launch_bounds__(Coder::encode_threads) encode_kernel(Coder coder, const uint8_t* __restrict__ input,
                                                                       uint64_t input_bytes, uint64_t chunks,
                                                                       LookBack lb, uint8_t* __restrict__ stream) {
  extern __shared__ __align__(16) uint8_t shared[];
  __shared__ uint64_t chunk[2], at;
  __shared__ uint32_t entry[2];  // the table entry of each staging's chunk
  __shared__ bool placed;
  const uint32_t C = coder.chunk_bytes(), staged = (C + 15) / 16 * 16;
  uint8_t* coder_shared = shared + (Coder::encode_defers ? 2 : 1) * staged;
  uint8_t* payload = stream + 4 * chunks;
  // Places the chunk of staging `slot`; without `wait`, returns false (to every thread) rather
  // than wait for a chunk before it.
  auto place = [&](int slot, bool wait) {
    const uint64_t c = chunk[slot];
    if (threadIdx.x < 32) {
      varlen::Counts<1> before;
      const bool known = lb.exclusive_prefix(c, before, wait);
      if (threadIdx.x == 0) {
        placed = known, at = before.v[0];
        if (known) {
          lb.publish_inclusive(c, {before.v[0] + (entry[slot] & ~raw_flag)});
          reinterpret_cast<uint32_t*>(stream)[c] = entry[slot];
        }
      }
    }
    __syncthreads();
    if (!placed) return false;  // uniform across the block
    const bool raw = entry[slot] & raw_flag;
    copy_bytes(payload + at, raw ? input + c * C : shared + slot * staged, entry[slot] & ~raw_flag, threadIdx.x,
               blockDim.x);
    __syncthreads();  // `at`, `placed` and the staging are rewritten
    return true;
  };
  int pending = -1;  // the staging of a chunk not yet placed
  for (int slot = 0;; slot = Coder::encode_defers ? slot ^ 1 : 0) {
    if (threadIdx.x == 0) chunk[slot] = lb.claim(0);
    __syncthreads();
    const uint64_t c = chunk[slot];
    if (c >= chunks) break;  // uniform across the block
    const uint8_t* in = input + c * C;
    const uint32_t n = chunk_size(input_bytes, C, c);
    const uint32_t size = n > 1 ? coder.encode_chunk(in, n, shared + slot * staged, n - 1, coder_shared) : n;
    const bool raw = size >= n;
    if (threadIdx.x == 0) {
      entry[slot] = raw ? (n | raw_flag) : size;
      if (c > 0) lb.publish_aggregate(c, {raw ? n : size});
    }
    if constexpr (Coder::encode_defers) {
      if (pending >= 0) place(pending, true);
      pending = place(slot, false) ? -1 : slot;
    } else {
      place(slot, true);
    }
  }
  if (pending >= 0) place(pending, true);
}

struct StoredSize {
  const uint32_t* table;
  uint64_t chunks;
  __device__ uint64_t operator()(uint64_t k) const { return k < chunks ? table[k] & ~raw_flag : 0; }
};

constexpr int decode_warps = 4;  // at most: fewer where a warp's shared memory is large

// Shared memory per decoding warp: the staging (when the coder decodes into it) and the coder's.
template <typename Coder>
__host__ __device__ uint32_t decode_warp_bytes(const Coder& coder) {
  const uint32_t staging = Coder::decode_staged ? (coder.chunk_bytes() + 15) / 16 * 16 : 0;
  return staging + (coder.decode_shared_bytes() + 15) / 16 * 16;
}

template <typename Coder>
__global__ void __launch_bounds__(32 * decode_warps) decode_kernel(Coder coder, const uint8_t* __restrict__ stream,
                                                                   uint64_t stream_bytes, const uint64_t* __restrict__ at,
                                                                   uint64_t chunks, uint8_t* __restrict__ output,
                                                                   uint64_t output_bytes, int* bad) {
  extern __shared__ __align__(16) uint8_t shared[];
  const uint32_t C = coder.chunk_bytes(), lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  uint8_t* staging = shared + warp * decode_warp_bytes(coder);
  uint8_t* coder_shared = staging + (Coder::decode_staged ? (C + 15) / 16 * 16 : 0);
  const auto* table = reinterpret_cast<const uint32_t*>(stream);
  const uint8_t* payload = stream + 4 * chunks;
  if (blockIdx.x == 0 && threadIdx.x == 0 && at[chunks] != stream_bytes - 4 * chunks) *bad = 1;
  for (uint64_t c = blockIdx.x * uint64_t(warps) + warp; c < chunks; c += uint64_t(gridDim.x) * warps) {
    const uint32_t entry = table[c], stored = entry & ~raw_flag, n = chunk_size(output_bytes, C, c);
    const bool raw = entry & raw_flag;
    bool ok = (raw ? stored == n : stored >= 1 && stored < n) && at[c] + stored <= stream_bytes - 4 * chunks;
    uint8_t* out = output + c * C;
    if (ok && raw) copy_bytes(out, payload + at[c], n, lane, 32);
    if (ok && !raw) {
      if constexpr (Coder::decode_staged) {
        ok = coder.decode_chunk(payload + at[c], stored, staging, n, coder_shared);
        __syncwarp();
        if (ok) copy_bytes(out, staging, n, lane, 32);
      } else {
        ok = coder.decode_chunk(payload + at[c], stored, out, n, coder_shared);
      }
    }
    if (!ok && lane == 0) *bad = 1;
    __syncwarp();  // the staging is rewritten for the next chunk
  }
}

template <typename Kernel>
unsigned resident_grid_with_shared(Kernel kernel, int threads, uint32_t shared_bytes, uint64_t blocks_needed) {
  // Past 48 KiB of static and dynamic shared memory together a launch needs the opt-in.
  cudaFuncAttributes attributes;
  FZG_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  if (attributes.sharedSizeBytes + shared_bytes > 48 * 1024)
    FZG_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared_bytes)));
  int per_sm = 0;
  FZG_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared_bytes));
  const uint64_t resident = uint64_t(multiprocessor_count()) * uint64_t(std::max(per_sm, 1));
  return unsigned(std::max<uint64_t>(1, std::min(blocks_needed, resident)));
}

}  // namespace detail

// The stream of `input_bytes` bytes on the device, behind `head_bytes` left for the caller's
// own bytes (as encode_cpu); one synchronization (its size).
template <typename Coder>
Buffer encode_cuda(const Coder& coder, const uint8_t* input, uint64_t input_bytes, cudaStream_t stream,
                   uint64_t head_bytes = 0) {
  const uint32_t C = coder.chunk_bytes();
  const uint64_t K = chunk_count(input_bytes, C);
  if (K == 0) return Buffer::device(head_bytes, stream);
  using LB = detail::LookBack;
  Buffer state = Buffer::device(8 * LB::words(K), stream);
  FZG_CUDA_CHECK(cudaMemsetAsync(state.data(), 0, state.size(), stream));
  Buffer out = Buffer::device(head_bytes + max_encoded_size(input_bytes, C), stream);
  const uint32_t shared = (Coder::encode_defers ? 2 : 1) * ((C + 15) / 16 * 16) + coder.encode_shared_bytes();
  auto kernel = detail::encode_kernel<Coder>;
  const unsigned grid = detail::resident_grid_with_shared(kernel, Coder::encode_threads, shared, K);
  kernel<<<grid, Coder::encode_threads, shared, stream>>>(coder, input, input_bytes, K,
                                                          LB::at(state.as<unsigned long long>(), K),
                                                          out.data() + head_bytes);
  FZG_CUDA_CHECK_LAUNCH();
  const uint64_t payload = read_back(state.as<unsigned long long>() + LB::inclusive_word(K, K - 1), stream) - 1;
  return out.slice(0, head_bytes + 4 * K + payload);
}

// Fills the output's `output_bytes` bytes from the stream; one synchronization (whether every
// chunk was consistent: corrupt_data when not).
template <typename Coder>
void decode_cuda(const Coder& coder, const uint8_t* stream_bytes_at, uint64_t stream_bytes, uint8_t* output,
                 uint64_t output_bytes, cudaStream_t stream) {
  const uint32_t C = coder.chunk_bytes();
  check_stream(stream_bytes, output_bytes, C);
  const uint64_t K = chunk_count(output_bytes, C);
  if (K == 0) return;
  // at[K + 1] | bad
  Buffer scratch = Buffer::device(8 * (K + 2), stream);
  uint64_t* at = scratch.as<uint64_t>();
  int* bad = reinterpret_cast<int*>(at + K + 1);
  FZG_CUDA_CHECK(cudaMemsetAsync(bad, 0, sizeof(int), stream));
  varlen::exclusive_scan(detail::StoredSize{reinterpret_cast<const uint32_t*>(stream_bytes_at), K}, K, at, uint64_t(0),
                         varlen::Plus{}, stream);
  // As many decoding warps a block as its shared memory allows (a coder staging chunks of 32 KiB
  // in two buffers a warp fits two warps, not four, in sm_90's 227 KiB); asked of the device
  // only past the 48 KiB every device gives.
  auto kernel = detail::decode_kernel<Coder>;
  const uint32_t per_warp = detail::decode_warp_bytes(coder);
  uint32_t warps = detail::decode_warps;
  if (uint64_t(warps) * per_warp > 48 * 1024) {
    cudaFuncAttributes attributes;
    FZG_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    const uint32_t limit = max_shared_bytes_per_block();
    const uint32_t room = limit - std::min<uint32_t>(limit, uint32_t(attributes.sharedSizeBytes));
    warps = std::min<uint32_t>(warps, room / per_warp);
    if (warps == 0)
      fail(ErrorCode::unsupported, "chunk of " + std::to_string(C) + " bytes: its decode needs " +
                                       std::to_string(per_warp) + " bytes of shared memory, more than the device's " +
                                       std::to_string(room));
  }
  const uint32_t shared = warps * per_warp;
  const unsigned grid = detail::resident_grid_with_shared(kernel, int(32 * warps), shared, (K + warps - 1) / warps);
  kernel<<<grid, 32 * warps, shared, stream>>>(coder, stream_bytes_at, stream_bytes, at, K, output, output_bytes,
                                               bad);
  FZG_CUDA_CHECK_LAUNCH();
  require_data(read_back(bad, stream) == 0, "chunked stream");
}

}  // namespace fzg::chunked
