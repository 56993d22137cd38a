// The one place fzg allocates device memory: the device's default stream-ordered pool
// (cudaMallocAsync), told to keep what it frees, behind a cache of freed blocks.
//
// Why the cache: on the H100 a cudaMallocAsync of tens of MB from a warm pool was measured at
// 90-130 us of host time (fzg bench --trace), and a compress call allocates its output right
// after a synchronization, with the device idle. Freed blocks are kept in size classes (at most
// 1/16 of slack) and handed to the next allocation of the same class, on any stream: the
// release records an event, and a reuse on another stream makes that stream wait on it, so
// stream order holds (on the releasing stream itself it holds already).
// Accounting (current and peak bytes) is fzg's own: bytes handed out and not yet released.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "core/error.hh"
#include "runtime/buffer.hh"
#include "runtime/cuda_check.cuh"

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

// The size class of a request: 256-byte steps up to 4 KiB, then 16 steps per power of two.
size_t size_class(size_t bytes) {
  if (bytes <= 4096) return std::max<size_t>(256, (bytes + 255) & ~size_t(255));
  const int top = 63 - __builtin_clzll(bytes);
  const size_t step = size_t(1) << (top - 4);
  return (bytes + step - 1) & ~(step - 1);
}

struct FreeBlock {
  void* data;
  size_t bytes;
  cudaEvent_t released;          // recorded on the stream that freed it
  unsigned long long stream_id;  // that stream's, or 0 when unknown
};

// A stream's id, unique for the process's life (a handle may name a newer stream once its
// stream is destroyed); 0 when the runtime cannot say.
unsigned long long stream_id_of(cudaStream_t stream) {
  unsigned long long id = 0;
  if (cudaStreamGetId(stream, &id) != cudaSuccess) {
    cudaGetLastError();  // not this call's error to report
    return 0;
  }
  return id;
}

class BlockCache {
 public:
  void* allocate(size_t bytes, cudaStream_t stream) {
    const size_t cls = size_class(bytes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (size_t i = free_.size(); i-- > 0;) {
        if (free_[i].bytes != cls) continue;
        const FreeBlock b = free_[i];
        free_.erase(free_.begin() + ptrdiff_t(i));
        cached_bytes_ -= cls;
        // No wait on the stream that freed it, known by its id (its handle may name a newer
        // stream): each wait cost ~1 us of host time, ~8 a small field's call on an H100.
        if (b.stream_id == 0 || b.stream_id != stream_id_of(stream))
          FZG_CUDA_CHECK(cudaStreamWaitEvent(stream, b.released, 0));
        events_.push_back(b.released);
        account(int64_t(cls));
        return b.data;
      }
    }
    keep_pool_memory();
    void* p = nullptr;
    cudaError_t status = cudaMallocAsync(&p, cls, stream);
    if (status == cudaErrorMemoryAllocation) {  // give the cached blocks back and try once more
      cudaGetLastError();
      trim(0);
      FZG_CUDA_CHECK(cudaDeviceSynchronize());
      status = cudaMallocAsync(&p, cls, stream);
    }
    FZG_CUDA_CHECK(status);
    std::lock_guard<std::mutex> lock(mutex_);
    account(int64_t(cls));
    return p;
  }

  void release(void* p, size_t bytes, cudaStream_t stream) {
    const size_t cls = size_class(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    account(-int64_t(cls));
    cudaEvent_t released = nullptr;
    if (!events_.empty()) {
      released = events_.back();
      events_.pop_back();
    } else if (cudaEventCreateWithFlags(&released, cudaEventDisableTiming) != cudaSuccess) {
      cudaFreeAsync(p, stream);  // never throws from a destructor; a failure surfaces on the next call
      return;
    }
    cudaEventRecord(released, stream);
    free_.push_back({p, cls, released, stream_id_of(stream)});
    cached_bytes_ += cls;
    trim_locked(cache_limit());
  }

  DeviceMemoryStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {size_t(current_), size_t(peak_)};
  }
  void reset_peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    peak_ = current_;
  }
  void trim(size_t keep_bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    trim_locked(keep_bytes);
  }

 private:
  void account(int64_t delta) {
    current_ += delta;
    peak_ = std::max(peak_, current_);
  }
  // Oldest blocks go back to the pool first, through the default stream (the stream a block
  // was freed on may be gone by now), after the work queued before their release.
  void trim_locked(size_t keep_bytes) {
    size_t n = 0;
    while (n < free_.size() && cached_bytes_ > keep_bytes) {
      cudaStreamWaitEvent(cudaStreamLegacy, free_[n].released, 0);
      cudaFreeAsync(free_[n].data, cudaStreamLegacy);
      events_.push_back(free_[n].released);
      cached_bytes_ -= free_[n].bytes;
      ++n;
    }
    free_.erase(free_.begin(), free_.begin() + ptrdiff_t(n));
  }
  // A quarter of the device: room for the blocks of a large field's call, not more.
  static size_t cache_limit() {
    static const size_t limit = [] {
      const uint64_t total = device_total_bytes();
      return total ? size_t(total / 4) : size_t(1) << 30;
    }();
    return limit;
  }

  std::mutex mutex_;
  std::vector<FreeBlock> free_;
  std::vector<cudaEvent_t> events_;
  size_t cached_bytes_ = 0;
  int64_t current_ = 0, peak_ = 0;

 public:
  size_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_bytes_;
  }
};

BlockCache& cache() {
  static BlockCache* c = new BlockCache;  // never destroyed: buffers may outlive static destructors
  return *c;
}

}  // namespace

uint8_t* device_allocate(size_t size_bytes, cudaStream_t stream, void (**release)(uint8_t*, size_t, cudaStream_t)) {
  *release = [](uint8_t* q, size_t bytes, cudaStream_t s) { cache().release(q, bytes, s); };
  return static_cast<uint8_t*>(cache().allocate(size_bytes, stream));
}

DeviceMemoryStats device_memory_stats() { return cache().stats(); }
void reset_device_memory_peak() { cache().reset_peak(); }

namespace {

// Read-backs the host waits for (sizes, counts, sums, a file's metadata) land in page-locked
// memory: into pageable memory the driver stages the copy itself, which cost ~10-15 us of
// each read-back on an H100 (fzg bench --trace; a call waits on three to five of them). The
// blocks are the process's, lent one per read-back and never freed: a thread of its own per
// caller would cost each short-lived thread (a Python or OpenMP pool's) a page-locked
// allocation and, at its exit, a free that waits for the device.
constexpr size_t read_back_bytes = size_t(64) << 10;

// A block and the event a queued read-back into it records (made with the block and kept: an
// event's creation and destruction were two more CUDA calls in every read-back).
struct ReadBackBlock {
  uint8_t* data = nullptr;
  cudaEvent_t landed = nullptr;
  int device = 0;  // the event's (an event is recorded only on its own device's streams)
};

class ReadBackBlocks {
 public:
  static ReadBackBlocks& get() {
    static ReadBackBlocks* blocks = new ReadBackBlocks();  // never destroyed, like its blocks
    return *blocks;
  }
  // A block, or none (null data) when no page-locked memory can be had (the caller copies as
  // before; after one refusal it is not asked again).
  ReadBackBlock take() {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) {
      cudaGetLastError();
      return {};
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (size_t i = free_.size(); i-- > 0;)
        if (free_[i].device == device) {
          const ReadBackBlock b = free_[i];
          free_.erase(free_.begin() + ptrdiff_t(i));
          return b;
        }
      if (refused_) return {};
    }
    void* p = nullptr;
    cudaEvent_t e = nullptr;
    if (cudaMallocHost(&p, read_back_bytes) != cudaSuccess ||
        cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
      cudaGetLastError();  // clear it: the copy goes on without the block
      if (p) cudaFreeHost(p);
      std::lock_guard<std::mutex> lock(mutex_);
      refused_ = true;
      return {};
    }
    std::lock_guard<std::mutex> lock(mutex_);
    free_.reserve(++lent_);  // so that give() never allocates
    return {static_cast<uint8_t*>(p), e, device};
  }
  void give(const ReadBackBlock& b) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(b);
  }

 private:
  std::mutex mutex_;
  std::vector<ReadBackBlock> free_;
  size_t lent_ = 0;  // blocks made
  bool refused_ = false;
};

}  // namespace

void device_copy(void* dst, Location dst_where, const void* src, Location src_where, size_t size_bytes,
                 cudaStream_t stream, bool wait) {
  ReadBackBlock bounce;
  if (wait && dst_where == Location::host && src_where == Location::device && size_bytes <= read_back_bytes &&
      (bounce = ReadBackBlocks::get().take()).data) {
    // A failed call throws and keeps the block out of the pool: a copy may still land in it.
    cuda_check(cudaMemcpyAsync(bounce.data, src, size_bytes, cudaMemcpyDeviceToHost, stream),
               "cudaMemcpyAsync (read-back)", __FILE__, __LINE__);
    cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (read-back)", __FILE__, __LINE__);
    std::memcpy(dst, bounce.data, size_bytes);
    ReadBackBlocks::get().give(bounce);
    return;
  }
  FZG_CUDA_CHECK(cudaMemcpyAsync(dst, src, size_bytes, cudaMemcpyDefault, stream));
  if (wait) FZG_CUDA_CHECK(cudaStreamSynchronize(stream));
}

struct QueuedReadBack::State {
  ReadBackBlock block;  // lent page-locked memory and its event, recorded after the copy; or
  std::vector<uint8_t> bytes;  // none: then this holds the copy
  bool waited = false;
};

QueuedReadBack::QueuedReadBack(const void* device_src, size_t size_bytes, cudaStream_t stream)
    : state_(std::make_unique<State>()) {
  if (size_bytes > read_back_bytes) fail(ErrorCode::invalid_argument, "a queued read-back of over 64 KiB");
  State& s = *state_;
  const ReadBackBlock block = ReadBackBlocks::get().take();
  if (!block.data) {  // no page-locked memory to be had: an ordinary read-back now
    s.bytes.resize(size_bytes);
    device_copy(s.bytes.data(), Location::host, device_src, Location::device, size_bytes, stream, true);
    s.waited = true;
    return;
  }
  // Until the copy has landed the block stays out of the pool (a failed call keeps it out).
  FZG_CUDA_CHECK(cudaMemcpyAsync(block.data, device_src, size_bytes, cudaMemcpyDeviceToHost, stream));
  FZG_CUDA_CHECK(cudaEventRecord(block.landed, stream));
  s.block = block;  // from here the destructor waits for the event before the block goes back
}

namespace {
// Whether the event has completed, asked first: most read-backs are read after the host waited
// for their stream, and on an H100's host a query of a completed event took well under the ~2
// us that its synchronization did.
cudaError_t landed_status(cudaEvent_t e) {
  const cudaError_t query = cudaEventQuery(e);
  if (query != cudaErrorNotReady) return query;
  return cudaEventSynchronize(e);
}
}  // namespace

QueuedReadBack::~QueuedReadBack() {
  State& s = *state_;
  if (!s.block.data) return;
  // A destructor reports nothing: a failure stays the runtime's last error for the next check.
  const bool landed = s.waited || landed_status(s.block.landed) == cudaSuccess;
  if (landed) ReadBackBlocks::get().give(s.block);  // else the copy may still land: kept out
}

const void* QueuedReadBack::wait() {
  State& s = *state_;
  if (!s.waited) {
    FZG_CUDA_CHECK(landed_status(s.block.landed));
    s.waited = true;
  }
  return s.block.data ? s.block.data : s.bytes.data();
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
void device_zero(void* dst, size_t size_bytes, cudaStream_t stream) {
  FZG_CUDA_CHECK(cudaMemsetAsync(dst, 0, size_bytes, stream));
}
void event_record(void* event, cudaStream_t stream) {
  FZG_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), stream));
}
void event_wait(void* event) { FZG_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event))); }

// What the driver reports free, plus what fzg holds for reuse: the pool keeps freed memory
// (release threshold: all) and the block cache keeps freed blocks, so a second large call
// would otherwise see less free than it can have.
uint64_t device_free_bytes() {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    cudaGetLastError();  // 0 means "nothing known"; the error must not surface at the next launch
    return 0;
  }
  int device = 0;
  cudaMemPool_t pool;
  uint64_t reserved = 0, used = 0;
  if (cudaGetDevice(&device) == cudaSuccess && cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess &&
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) == cudaSuccess &&
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess && reserved > used)
    free_bytes += reserved - used;
  return free_bytes + cache().cached_bytes();
}

// 0 when the device cannot say (the error cleared, so that the next launch check does not
// report it as its own).
uint64_t device_total_bytes() {
  static std::mutex mutex;
  static std::map<int, uint64_t> totals;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  std::lock_guard<std::mutex> lock(mutex);
  auto it = totals.find(device);
  if (it != totals.end()) return it->second;
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return totals[device] = total_bytes;
}

bool device_present() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

}  // namespace fzg
