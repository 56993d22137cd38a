// Wall time of a region on a backend: CUDA events on the stream for cuda, a steady clock
// for the CPU.
#pragma once
#include <chrono>
#include <string>

#include "core/field.hh"
#include "runtime/buffer.hh"

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
  // The CUDA ones go unused in a build without the CUDA backend.
  [[maybe_unused]] Device device_;
  [[maybe_unused]] cudaStream_t stream_;
  [[maybe_unused]] void* events_[2] = {nullptr, nullptr};
  std::chrono::steady_clock::time_point begin_;
};

}  // namespace fzg

namespace fzg::trace {

// A timeline of one call, for finding where its time goes (`fzg bench --trace`). Each mark
// records the host clock and, on a CUDA trace, an event on the traced stream: a mark whose GPU
// time trails its host time by little means the device sat idle waiting for the host. Marks
// cost nothing while no trace is open.
void open(Device device, cudaStream_t stream);
void mark(const char* label);
bool active();  // whether a trace is open
// Waits for the device, closes the trace, and returns its table (one line per mark).
std::string close();

}  // namespace fzg::trace
