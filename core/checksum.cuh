// fzg64 on the GPU, the pieces the checksum kernels share (core/checksum.cu, and the
// container's kernel that also finishes the metadata, core/container.cu): one block's part of
// a batch of streams' sums, copying their words on the way.
#pragma once
#include <cub/block/block_reduce.cuh>

#include <cstdint>

#include "core/checksum.hh"

namespace fzg {

constexpr int checksum_threads = 256;

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

// This block's part of stream blockIdx.y: its words summed into sums[blockIdx.y] and, with a
// destination, copied there on the way. The integer sum is exact, so the order in which
// blocks add their parts does not matter. Every thread of the block calls it (a block past
// the stream's words does nothing, uniformly).
__device__ __forceinline__ void sum_block_part(const SummedStreams& batch, unsigned long long* sums) {
  using Reduce = cub::BlockReduce<uint64_t, checksum_threads>;
  __shared__ typename Reduce::TempStorage storage;
  const Summed s = batch.streams[blockIdx.y];
  const uint64_t words = (s.size_bytes + 7) / 8;
  if (uint64_t(blockIdx.x) * checksum_threads >= words) return;  // uniform across the block
  auto* destination = reinterpret_cast<uint64_t*>(s.copy_to);
  const uint64_t stride = uint64_t(gridDim.x) * checksum_threads;
  uint64_t i = blockIdx.x * uint64_t(checksum_threads) + threadIdx.x, part = 0;
  // The whole words of a 4- or 8-byte aligned stream (fzg's own), four a thread at a time:
  // their loads issued together, and each word's salt i * checksum_salt carried by additions
  // (mod 2^64 the same product). A word at a time, the kernel waited on each load and spent a
  // third of its instructions on 64-bit index products (H200: 2.4 of 4.8 TB/s).
  const uintptr_t misalignment = reinterpret_cast<uintptr_t>(s.data) & 7;
  if (misalignment % 4 == 0) {  // uniform across the grid
    const auto* halves = reinterpret_cast<const uint32_t*>(s.data);
    const uint64_t whole = s.size_bytes / 8, salt_step = stride * checksum_salt;
    uint64_t salt = i * checksum_salt;
    for (; i + 3 * stride < whole; i += 4 * stride, salt += 4 * salt_step) {
      uint64_t w[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const uint64_t j = i + k * stride;
        w[k] = misalignment == 0 ? reinterpret_cast<const uint64_t*>(halves)[j]
                                 : uint64_t(halves[2 * j]) | uint64_t(halves[2 * j + 1]) << 32;
      }
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        if (destination) destination[i + k * stride] = w[k];
        part += checksum_mix(w[k] ^ (salt + k * salt_step));
      }
    }
  }
  for (; i < words; i += stride) {
    const uint64_t w = stream_word(s.data, s.size_bytes, i);
    if (destination) destination[i] = w;
    part += checksum_mix(w ^ (i * checksum_salt));
  }
  const uint64_t block_sum = Reduce(storage).Sum(part);
  if (threadIdx.x == 0) atomicAdd(sums + blockIdx.y, static_cast<unsigned long long>(block_sum));
}
// (It returns early for a block with no words; a caller with work after it continues there.)

}  // namespace fzg
