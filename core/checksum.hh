// fzg64: the stream checksum. Order-sensitive and fully parallel: the sum (mod 2^64) over
// 8-byte little-endian words w_i (the last zero-padded) of mix(w_i ^ (i * 0x9E3779B97F4A7C15)),
// plus mix(size_bytes). mix is the SplitMix64 finalizer. One flipped bit changes one term
// to an unrelated value; swapped words change their index salts. CPU and CUDA agree bit for bit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/buffer.hh"

namespace fzg {

constexpr uint64_t checksum_salt = 0x9E3779B97F4A7C15ull;

#if defined(__CUDACC__)
__host__ __device__
#endif
inline uint64_t checksum_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t checksum_host(const void* data, size_t size_bytes);
// Checksums of several buffers: host buffers are summed on the CPU at once, device buffers by
// kernels launched on `stream` that run while the caller goes on; finish() waits for them
// (one synchronization for all) and returns every sum.
//
// `lengths`, when given, are the sizes that go into the length terms, one per buffer, each at
// most its buffer's size. A reader passes a stream's bytes with their padding to the next
// 8-byte boundary and the stream's own size: its words then are those the writer summed when
// the padding is zero, as it is in every valid file, and a flipped padding bit fails the sum.
class PendingChecksums {
 public:
  PendingChecksums(const std::vector<Buffer>& buffers, cudaStream_t stream, std::vector<uint64_t> lengths = {});
  std::vector<uint64_t> finish();

 private:
  std::vector<uint64_t> sums_;
  std::vector<bool> on_device_;
  std::vector<uint64_t> sizes_;
  Buffer partial_;  // device sums
  cudaStream_t stream_;
};

#ifdef FZG_HAVE_CUDA
// Copies each device stream to file + offsets[s] (8-byte aligned device memory), zero-padded
// to a whole number of 8-byte words, and sums its checksum terms (without the length term)
// into sums[s]: the container takes each stream's bytes and checksum in one read.
void checksum_copy_device(const std::vector<Buffer>& streams, const std::vector<uint64_t>& offsets, uint8_t* file,
                          uint64_t* sums, cudaStream_t stream);
#endif

inline std::vector<uint64_t> checksums(const std::vector<Buffer>& buffers, cudaStream_t stream) {
  return PendingChecksums(buffers, stream).finish();
}

}  // namespace fzg
