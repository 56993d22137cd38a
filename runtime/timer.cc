// The CPU-only build's timer; with CUDA, timer.cu provides this class.
#ifndef FZG_HAVE_CUDA
#include "runtime/timer.hh"

namespace fzg {

RegionTimer::RegionTimer(Device device, cudaStream_t stream) : device_(device), stream_(stream) {}
RegionTimer::~RegionTimer() = default;
void RegionTimer::start() { begin_ = std::chrono::steady_clock::now(); }
double RegionTimer::stop_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin_).count();
}

}  // namespace fzg
#endif
