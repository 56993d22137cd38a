#include "runtime/lanes.hh"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#ifdef FZG_HAVE_CUDA
#include "runtime/cuda_check.cuh"
#include "runtime/launch.cuh"
#endif

namespace fzg {

namespace {
#ifdef FZG_HAVE_CUDA
// One step of a spin-wait: the CPU's pause hint where there is one.
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

cudaEvent_t record(cudaStream_t stream) {
  cudaEvent_t e = nullptr;
  FZG_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  FZG_CUDA_CHECK(cudaEventRecord(e, stream));
  return e;
}

void wait(cudaStream_t stream, cudaEvent_t e) { FZG_CUDA_CHECK(cudaStreamWaitEvent(stream, e, 0)); }

// The helper threads, made once and kept (with their streams) for the process's life: a job is
// one call's lanes 1..n-1, the calling thread being lane 0. One call holds them at a time;
// a call that finds them busy (another thread compressing) runs its chunks in order.
class Helpers {
 public:
  static constexpr unsigned count = 3;
  static Helpers& get() {
    static Helpers* helpers = new Helpers();  // never destroyed: threads outlive static teardown
    return *helpers;
  }
  std::mutex busy;  // held by the call that uses the helpers
  std::vector<cudaStream_t> streams = std::vector<cudaStream_t>(count, nullptr);

  // Runs lane(1 .. lanes-1) on helpers and returns once they are done.
  void start(unsigned lanes, const std::function<void(unsigned)>& lane) {
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = &lane;
    active_ = lanes - 1;
    pending_.store(lanes - 1, std::memory_order_relaxed);
    ++generation_;
    wake_.notify_all();
  }
  // Spins first, for up to a few milliseconds (a call's lanes end within that on a large
  // field), then sleeps. Why: a caller put to sleep here wakes on a cold core, and the
  // caller's next steps pay for it; Python's, wrapping fzg's output in a cupy array, took
  // ~35 us after the sleep against ~5 us without (python/bench/device_overhead.py on an H100).
  // CUDA's own waits spin the same way (cudaDeviceScheduleAuto with few contexts).
  void finish() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
    for (unsigned spin = 1; pending_.load(std::memory_order_acquire) != 0; ++spin) {
      if (spin % 256 == 0 && std::chrono::steady_clock::now() > deadline) break;
      relax();
    }
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return pending_.load(std::memory_order_relaxed) == 0; });
    job_ = nullptr;
  }

 private:
  Helpers() {
    for (unsigned i = 0; i < count; ++i) std::thread([this, i] { loop(i); }).detach();
  }
  void loop(unsigned i) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(unsigned)>* job = nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        if (i >= active_) continue;
        job = job_;
      }
      (*job)(i + 1);
      std::lock_guard<std::mutex> lock(mutex_);
      if (pending_.fetch_sub(1, std::memory_order_release) == 1) done_.notify_all();
    }
  }
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(unsigned)>* job_ = nullptr;
  unsigned active_ = 0;
  std::atomic<unsigned> pending_{0};  // lanes still running: read without the lock by finish's spin
  uint64_t generation_ = 0;
};

// The lanes' streams of this thread's last run, for lanes_wait_for.
thread_local std::vector<cudaStream_t> last_streams;
#endif
}  // namespace

void run_in_lanes(Device device, cudaStream_t stream, uint64_t count, unsigned lanes,
                  const std::function<void(uint64_t, cudaStream_t)>& work) {
  lanes = unsigned(std::min<uint64_t>(lanes, count));
#ifdef FZG_HAVE_CUDA
  lanes = std::min(lanes, Helpers::count + 1);
  Helpers& helpers = Helpers::get();
  std::unique_lock<std::mutex> hold(helpers.busy, std::defer_lock);
  if (device == Device::cuda && lanes > 1 && hold.try_lock()) {
    int current = 0;
    FZG_CUDA_CHECK(cudaGetDevice(&current));
    cudaEvent_t start = record(stream);
    std::atomic<uint64_t> next{0};
    std::mutex mutex;
    std::exception_ptr failure;
    std::vector<cudaEvent_t> done(lanes, nullptr);
    std::vector<cudaStream_t> streams(lanes, nullptr);
    const std::function<void(unsigned)> lane = [&](unsigned i) {
      try {
        FZG_CUDA_CHECK(cudaSetDevice(current));
        cudaStream_t own = thread_stream(0);  // the lane thread's own, kept for its life
        streams[i] = own;
        wait(own, start);
        for (uint64_t k = next++; k < count; k = next++) {
          {
            std::lock_guard<std::mutex> lock(mutex);
            if (failure) break;
          }
          work(k, own);
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!failure) failure = std::current_exception();
      }
      // Even after a failure: the caller's stream must wait for what this lane queued (its
      // kernels may still write memory the caller frees once the exception reaches it).
      if (streams[i]) {
        try {
          done[i] = record(streams[i]);
        } catch (...) {
          cudaStreamSynchronize(streams[i]);
        }
      }
    };
    helpers.start(lanes, lane);
    lane(0);  // the calling thread is a lane too
    helpers.finish();
    for (cudaEvent_t e : done)
      if (e) {
        wait(stream, e);
        FZG_CUDA_CHECK(cudaEventDestroy(e));
      }
    FZG_CUDA_CHECK(cudaEventDestroy(start));
    last_streams = streams;
    if (failure) std::rethrow_exception(failure);
    return;
  }
#endif
#ifdef FZG_HAVE_CUDA
  last_streams.clear();
#endif
  (void)device, (void)lanes;
  for (uint64_t k = 0; k < count; ++k) work(k, stream);
}

void lanes_wait_for(cudaStream_t stream) {
#ifdef FZG_HAVE_CUDA
  if (last_streams.empty()) return;
  cudaEvent_t e = record(stream);
  for (cudaStream_t s : last_streams)
    if (s) wait(s, e);
  FZG_CUDA_CHECK(cudaEventDestroy(e));
#else
  (void)stream;
#endif
}

void stream_wait(cudaStream_t waiter, cudaStream_t stream) {
#ifdef FZG_HAVE_CUDA
  if (waiter == stream) return;
  cudaEvent_t e = record(stream);
  wait(waiter, e);
  FZG_CUDA_CHECK(cudaEventDestroy(e));  // released once the wait is done
#else
  (void)waiter, (void)stream;
#endif
}

}  // namespace fzg
