// fzg64: the stream checksum. Order-sensitive and fully parallel: the sum (mod 2^64) over
// 8-byte little-endian words w_i (the last zero-padded) of mix(w_i ^ (i * 0x9E3779B97F4A7C15)),
// plus mix(size_bytes). mix is the SplitMix64 finalizer. One flipped bit changes one term
// to an unrelated value; swapped words change their index salts. CPU and CUDA agree bit for bit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pipeline/buffer.hh"

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
// Computes on the GPU for device buffers, on the CPU otherwise; device sums are read back
// together, in one synchronization.
std::vector<uint64_t> checksums(const std::vector<Buffer>& buffers, cudaStream_t stream);

}  // namespace fzg
