// Single-pass placement by decoupled look-back (Merrill & Garland): blocks take chunks of the
// input in order, and each finds where its output goes from the chunks before it without a
// second pass or a host round trip. A chunk publishes its own counts (`aggregate`) as soon as
// it has them, then the counts of every chunk up to and including it (`inclusive`); a chunk
// looking back adds aggregates until it meets an inclusive total. No atomics decide the
// layout (only which block takes which chunk), so the output is a pure function of the input.
//
// Counts are K 64-bit words per chunk (such as flag words and blocks), each stored plus one so
// that 0 means "not yet"; a reader takes a chunk's counts only when all K are there.
#pragma once
#include <cstdint>

#include "runtime/buffer.hh"
#include "runtime/cuda_check.cuh"

namespace fzg::varlen {

template <int K>
struct Counts {
  uint64_t v[K];
};

// The look-back's state in device memory, zeroed before the first launch (words(chunks)
// 64-bit words).
template <int K>
struct LookBack {
  unsigned long long* aggregate;  // [chunks][K]
  unsigned long long* inclusive;  // [chunks][K]
  unsigned int* next_chunk;       // [chunks]: a launch starting at chunk c hands out chunks by next_chunk[c]

  static uint64_t words(uint64_t chunks) { return 2 * K * chunks + (chunks + 1) / 2; }
  static LookBack at(unsigned long long* state, uint64_t chunks) {
    return {state, state + K * chunks, reinterpret_cast<unsigned int*>(state + 2 * K * chunks)};
  }
  // Where in the state the inclusive counts of chunk c are (of the last chunk: the totals,
  // each plus one).
  static uint64_t inclusive_word(uint64_t chunks, uint64_t c) { return K * (chunks + c); }

#ifdef __CUDACC__
  // The next chunk for the calling block in a launch that starts at `first` (thread 0 calls).
  __device__ uint64_t claim(uint64_t first) const { return first + atomicAdd(next_chunk + first, 1u); }

  __device__ void publish_aggregate(uint64_t c, const Counts<K>& n) const { publish(aggregate + K * c, n); }
  __device__ void publish_inclusive(uint64_t c, const Counts<K>& n) const { publish(inclusive + K * c, n); }

  // The counts of chunks [0, c), by one whole warp: lane l reads chunk end - 1 - l, and the warp
  // waits until every chunk up to the nearest one with inclusive counts has published something
  // (not for the chunks beyond it: chunks take different times), then adds them. Chunks are
  // claimed in order by resident blocks, so every chunk waited on is being worked on.
  __device__ Counts<K> exclusive_prefix(uint64_t c) const {
    Counts<K> before{};
    exclusive_prefix(c, before, true);
    return before;
  }
  // The same; without `wait`, false (to every lane) where it would have to wait for a chunk.
  __device__ bool exclusive_prefix(uint64_t c, Counts<K>& before, bool wait) const {
    const uint32_t lane = threadIdx.x % 32;
    before = Counts<K>{};
    for (uint64_t end = c; end > 0; end = end > 32 ? end - 32 : 0) {
      const bool exists = lane < end;
      const uint64_t j = exists ? end - 1 - lane : 0;
      Counts<K> got{};
      uint32_t totals, counted;
      for (;;) {  // until the chunks up to the nearest inclusive total (or all 32) have published
        bool ready = !exists, total = false;
        if (exists) {
          total = load(inclusive + K * j, got);
          ready = total || load(aggregate + K * j, got);
        }
        totals = __ballot_sync(0xffffffffu, total);
        counted = totals ? (2u << (__ffs(totals) - 1)) - 1u : 0xffffffffu;  // lanes up to the nearest total
        if ((__ballot_sync(0xffffffffu, ready) & counted) == counted) break;
        if (!wait) return false;
      }
      const bool use = exists && (counted >> lane & 1u);
#pragma unroll
      for (int k = 0; k < K; ++k) before.v[k] += warp_sum(use ? got.v[k] : 0);
      if (totals) break;
    }
    return true;
  }

 private:
  // Each word is stored whole, in any order: a reader takes the counts only when all are set.
  __device__ static void publish(unsigned long long* p, const Counts<K>& n) {
    auto* q = reinterpret_cast<volatile unsigned long long*>(p);
#pragma unroll
    for (int k = 0; k < K; ++k) q[k] = n.v[k] + 1;
  }
  // Whether chunk p has published; its counts in `n` when it has.
  __device__ static bool load(const unsigned long long* p, Counts<K>& n) {
    const auto* q = reinterpret_cast<const volatile unsigned long long*>(p);
    bool all = true;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const unsigned long long w = q[k];
      all = all && w != 0;
      n.v[k] = w - 1;
    }
    return all;
  }
  __device__ static uint64_t warp_sum(uint64_t v) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
    return v;
  }
#endif
};

}  // namespace fzg::varlen
