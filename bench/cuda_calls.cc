// An LD_PRELOAD library that logs the host time of every CUDA runtime call a process makes
// (the calls fzg uses: launches, copies, memsets, events, stream waits and syncs,
// allocations, queries), for finding where a small call's host time goes: on an H100's host a
// launch took 4-6 us, a memset or copy 2-3, an event record or stream wait ~1, and a call of
// fzg makes 30-50 of them. The last 20,000 calls are written at exit to $FZG_CUDA_CALLS (or
// stderr), one a line: start (us, monotonic clock), host us, call, and up to two numbers
// (a launch's blocks and threads, a copy's or memset's bytes and kind). Needs libcudart as a
// shared library (fzg links CUDA::cudart). scripts/device-calls.sh builds it, runs `fzg bench`
// under it and prints one compress and one decompress call.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>

namespace {

struct Entry {
  const char* name;
  long long start, end, a, b;
};
constexpr long long kept = 20000;
Entry entries[kept];
long long count = 0;

long long now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}
void log_call(const char* name, long long start, long long a = 0, long long b = 0) {
  entries[count % kept] = {name, start, now_ns(), a, b};
  ++count;
}

struct WriteAtExit {
  ~WriteAtExit() {
    const char* path = std::getenv("FZG_CUDA_CALLS");
    FILE* f = path ? std::fopen(path, "w") : stderr;
    if (!f) return;
    for (long long i = count > kept ? count - kept : 0; i < count; ++i) {
      const Entry& e = entries[i % kept];
      std::fprintf(f, "%.3f %.3f %s %lld %lld\n", e.start / 1e3, (e.end - e.start) / 1e3, e.name, e.a, e.b);
    }
    if (f != stderr) std::fclose(f);
  }
} write_at_exit;

// The runtime's own function of the same name.
template <typename F>
F next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

// Each wrapper: the real call, timed. The signatures are the runtime's (cuda_runtime_api.h).
#define FZG_TIMED(name, label, a, b, params, args)                       \
  extern "C" cudaError_t name params {                                   \
    static const auto real = next<cudaError_t(*) params>(#name);         \
    const long long start = now_ns();                                    \
    const cudaError_t status = real args;                                \
    log_call(label, start, (long long)(a), (long long)(b));              \
    return status;                                                       \
  }

FZG_TIMED(__cudaLaunchKernel, "launch", g.x * g.y * g.z, t.x * t.y * t.z,
          (cudaKernel_t k, dim3 g, dim3 t, void** args, size_t shared, cudaStream_t s), (k, g, t, args, shared, s))
FZG_TIMED(cudaMemcpyAsync, "memcpyAsync", n, kind,
          (void* d, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s), (d, src, n, kind, s))
FZG_TIMED(cudaMemsetAsync, "memsetAsync", n, 0, (void* d, int v, size_t n, cudaStream_t s), (d, v, n, s))
FZG_TIMED(cudaEventRecord, "eventRecord", 0, 0, (cudaEvent_t e, cudaStream_t s), (e, s))
FZG_TIMED(cudaEventQuery, "eventQuery", 0, 0, (cudaEvent_t e), (e))
FZG_TIMED(cudaEventSynchronize, "eventSynchronize", 0, 0, (cudaEvent_t e), (e))
FZG_TIMED(cudaEventCreateWithFlags, "eventCreate", 0, 0, (cudaEvent_t * e, unsigned flags), (e, flags))
FZG_TIMED(cudaEventDestroy, "eventDestroy", 0, 0, (cudaEvent_t e), (e))
FZG_TIMED(cudaEventElapsedTime, "eventElapsedTime", 0, 0, (float* ms, cudaEvent_t a, cudaEvent_t b), (ms, a, b))
FZG_TIMED(cudaStreamWaitEvent, "streamWaitEvent", 0, 0, (cudaStream_t s, cudaEvent_t e, unsigned flags), (s, e, flags))
FZG_TIMED(cudaStreamSynchronize, "streamSynchronize", 0, 0, (cudaStream_t s), (s))
FZG_TIMED(cudaStreamGetId, "streamGetId", 0, 0, (cudaStream_t s, unsigned long long* id), (s, id))
FZG_TIMED(cudaDeviceSynchronize, "deviceSynchronize", 0, 0, (), ())
FZG_TIMED(cudaMallocAsync, "mallocAsync", n, 0, (void** p, size_t n, cudaStream_t s), (p, n, s))
FZG_TIMED(cudaFreeAsync, "freeAsync", 0, 0, (void* p, cudaStream_t s), (p, s))
FZG_TIMED(cudaMemGetInfo, "memGetInfo", 0, 0, (size_t * free_bytes, size_t* total), (free_bytes, total))
FZG_TIMED(cudaMemPoolGetAttribute, "memPoolGetAttribute", a, 0, (cudaMemPool_t p, cudaMemPoolAttr a, void* v), (p, a, v))
FZG_TIMED(cudaPointerGetAttributes, "pointerGetAttributes", 0, 0, (cudaPointerAttributes * a, const void* p), (a, p))
FZG_TIMED(cudaGetDevice, "getDevice", 0, 0, (int* d), (d))
FZG_TIMED(cudaSetDevice, "setDevice", d, 0, (int d), (d))
FZG_TIMED(cudaGetLastError, "getLastError", 0, 0, (), ())
FZG_TIMED(cudaPeekAtLastError, "peekAtLastError", 0, 0, (), ())
FZG_TIMED(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, "occupancy", threads, 0,
          (int* n, const void* f, int threads, size_t shared, unsigned flags), (n, f, threads, shared, flags))
