// Exclusive scan with total, the first step of every variable-length placement: from a count
// per item, where each item's output starts and how much output there is. The CPU form is
// here; the CUDA form (varlen/scan.cuh) computes the same numbers on the device.
#pragma once
#include <cstdint>
#include <functional>

namespace fzg::varlen {

// out[i] = term(0) op ... op term(i - 1) for i in [0, n] (out[0] = zero); returns out[n], the
// total. `term(i)` is called once per item, in order, so it may check what it reads.
template <typename T, typename Term, typename Op = std::plus<T>>
T exclusive_scan(Term term, uint64_t n, T* out, T zero = T{}, Op op = Op{}) {
  T running = zero;
  for (uint64_t i = 0; i < n; ++i) {
    out[i] = running;
    running = op(running, term(i));
  }
  out[n] = running;
  return running;
}

}  // namespace fzg::varlen
