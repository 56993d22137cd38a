// Wall time of a region on a backend: CUDA events on the stream for cuda, a steady clock
// for the CPU.
#pragma once
#include <chrono>

#include "pipeline/buffer.hh"
#include "pipeline/field.hh"

namespace fzg {

class RegionTimer {
 public:
  RegionTimer(Device device, cudaStream_t stream);
  ~RegionTimer();
  RegionTimer(const RegionTimer&) = delete;
  RegionTimer& operator=(const RegionTimer&) = delete;
  void start();
  double stop_ms();  // waits for the region to finish

 private:
  Device device_;
  cudaStream_t stream_;
  void* events_[2] = {nullptr, nullptr};
  std::chrono::steady_clock::time_point begin_;
};

}  // namespace fzg
