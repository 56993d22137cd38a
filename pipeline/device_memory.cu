// The one place fzg allocates device memory: the device's default stream-ordered pool
// (cudaMallocAsync), told to keep what it frees so a hot loop of compress calls stops
// calling into the driver after the first. Peak use is the pool's own high-water mark.
#include <cstdint>
#include <mutex>

#include "pipeline/buffer.hh"
#include "pipeline/cuda_check.cuh"

namespace fzg {

namespace {
void keep_pool_memory() {
  static std::once_flag once;
  std::call_once(once, [] {
    int device = 0;
    FZG_CUDA_CHECK(cudaGetDevice(&device));
    cudaMemPool_t pool;
    FZG_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
    uint64_t keep_all = UINT64_MAX;
    FZG_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  });
}
}  // namespace

uint8_t* device_allocate(size_t size_bytes, cudaStream_t stream, void (**release)(uint8_t*, cudaStream_t)) {
  keep_pool_memory();
  void* p = nullptr;
  const size_t rounded = (size_bytes + 255) & ~size_t(255);
  FZG_CUDA_CHECK(cudaMallocAsync(&p, rounded ? rounded : 256, stream));
  *release = [](uint8_t* q, cudaStream_t s) {
    cudaFreeAsync(q, s);  // never throws from a destructor; a failure here surfaces on the next call
  };
  return static_cast<uint8_t*>(p);
}

DeviceMemoryStats device_memory_stats() {
  int device = 0;
  cudaMemPool_t pool;
  DeviceMemoryStats stats;
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess) return stats;
  uint64_t used = 0, high = 0;
  cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used);
  cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high);
  stats.current_bytes = used;
  stats.peak_bytes = high;
  return stats;
}

void reset_device_memory_peak() {
  int device = 0;
  cudaMemPool_t pool;
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess) return;
  uint64_t zero = 0;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero);
}

void device_copy(void* dst, Location, const void* src, Location, size_t size_bytes, cudaStream_t stream, bool wait) {
  FZG_CUDA_CHECK(cudaMemcpyAsync(dst, src, size_bytes, cudaMemcpyDefault, stream));
  if (wait) FZG_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void device_synchronize(cudaStream_t stream) { FZG_CUDA_CHECK(cudaStreamSynchronize(stream)); }

// The pieces buffer.cc needs to stage copies through page-locked memory.
bool host_memory_is_pinned(const void* p) {
  cudaPointerAttributes attributes;
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error of a failed query
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

// Two page-locked bounce buffers of `chunk_bytes` and their events, made once and kept.
void staging_buffers(size_t chunk_bytes, uint8_t** buffers, void** events) {
  static uint8_t* kept[2] = {};
  static cudaEvent_t kept_events[2] = {};
  static std::once_flag once;
  std::call_once(once, [chunk_bytes] {
    for (int i = 0; i < 2; ++i) {
      FZG_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&kept[i]), chunk_bytes));
      FZG_CUDA_CHECK(cudaEventCreateWithFlags(&kept_events[i], cudaEventDisableTiming));
    }
  });
  for (int i = 0; i < 2; ++i) buffers[i] = kept[i], events[i] = kept_events[i];
}

void copy_async(void* dst, const void* src, size_t size_bytes, cudaStream_t stream) {
  FZG_CUDA_CHECK(cudaMemcpyAsync(dst, src, size_bytes, cudaMemcpyDefault, stream));
}
void event_record(void* event, cudaStream_t stream) {
  FZG_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), stream));
}
void event_wait(void* event) { FZG_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event))); }

uint64_t device_free_bytes() {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return 0;
  return free_bytes;
}

bool device_present() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

}  // namespace fzg
