#include "runtime/cuda_check.cuh"
#include "runtime/timer.hh"

namespace fzg {

RegionTimer::RegionTimer(Device device, cudaStream_t stream) : device_(device), stream_(stream) {
  if (device_ == Device::cuda)
    for (auto& e : events_) FZG_CUDA_CHECK(cudaEventCreate(reinterpret_cast<cudaEvent_t*>(&e)));
}

RegionTimer::~RegionTimer() {
  for (auto e : events_)
    if (e) cudaEventDestroy(static_cast<cudaEvent_t>(e));
}

void RegionTimer::start() {
  if (device_ == Device::cuda) FZG_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(events_[0]), stream_));
  else begin_ = std::chrono::steady_clock::now();
}

double RegionTimer::stop_ms() {
  if (device_ != Device::cuda)
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin_).count();
  FZG_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(events_[1]), stream_));
  FZG_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(events_[1])));
  float ms = 0;
  FZG_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(events_[0]), static_cast<cudaEvent_t>(events_[1])));
  return ms;
}

}  // namespace fzg
