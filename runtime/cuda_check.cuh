// Checked CUDA calls: a failure becomes an fzg::Error naming the call, file and line.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "core/error.hh"

namespace fzg {

inline void cuda_check(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess)
    fail(ErrorCode::cuda, std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                              cudaGetErrorString(status));
}

}  // namespace fzg

#define FZG_CUDA_CHECK(call) ::fzg::cuda_check((call), #call, __FILE__, __LINE__)
#define FZG_CUDA_CHECK_LAUNCH() ::fzg::cuda_check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
