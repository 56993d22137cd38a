// The timeline of fzg::trace (timer.hh). One trace at a time, process-wide: it serves the
// bench, which traces one call on one thread.
#include <cstdio>
#include <vector>

#include "runtime/cuda_check.cuh"
#include "runtime/timer.hh"

namespace fzg::trace {

namespace {

using Clock = std::chrono::steady_clock;

struct Mark {
  const char* label;
  Clock::time_point host;
#ifdef FZG_HAVE_CUDA
  cudaEvent_t event = nullptr;
#endif
};

struct Timeline {
  bool open = false, on_device = false;
  cudaStream_t stream = nullptr;
  std::vector<Mark> marks;
};

Timeline& timeline() {
  static Timeline t;
  return t;
}

}  // namespace

void open(Device device, cudaStream_t stream) {
  Timeline& t = timeline();
  t = Timeline();
  t.open = true;
  t.on_device = device == Device::cuda;
  t.stream = stream;
  mark("start");
}

bool active() { return timeline().open; }

void mark(const char* label) {
  Timeline& t = timeline();
  if (!t.open) return;
  Mark m{label, Clock::now()};
#ifdef FZG_HAVE_CUDA
  if (t.on_device) {
    FZG_CUDA_CHECK(cudaEventCreate(&m.event));
    FZG_CUDA_CHECK(cudaEventRecord(m.event, t.stream));
  }
#endif
  t.marks.push_back(m);
}

std::string close() {
  Timeline& t = timeline();
  if (!t.open) return {};
  mark("end");
  std::string table = "  mark                               host us   gpu us\n";
  char line[160];
  for (const Mark& m : t.marks) {
    const double host = std::chrono::duration<double, std::micro>(m.host - t.marks[0].host).count();
    double gpu = -1;
#ifdef FZG_HAVE_CUDA
    if (t.on_device) {
      FZG_CUDA_CHECK(cudaEventSynchronize(m.event));
      float ms = 0;
      FZG_CUDA_CHECK(cudaEventElapsedTime(&ms, t.marks[0].event, m.event));
      gpu = 1e3 * ms;
    }
#endif
    if (gpu < 0) std::snprintf(line, sizeof line, "  %-32s %9.1f %8s\n", m.label, host, "-");
    else std::snprintf(line, sizeof line, "  %-32s %9.1f %8.1f\n", m.label, host, gpu);
    table += line;
  }
#ifdef FZG_HAVE_CUDA
  for (const Mark& m : t.marks)
    if (m.event) cudaEventDestroy(m.event);
#endif
  t = Timeline();
  return table;
}

}  // namespace fzg::trace
