// Owned byte buffers on the host or the device. Device memory comes from the stream-ordered
// pool in device_memory.cu; nothing else in fzg calls cudaMalloc.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

struct CUstream_st;
using cudaStream_t = CUstream_st*;  // the CUDA runtime's own definition, without its headers

namespace fzg {

enum class Location { host, device };

class Buffer {
 public:
  Buffer() = default;
  static Buffer host(size_t size_bytes);
  // Stream-ordered: usable by work on `stream` at once; freed in that stream's order, so it
  // must go before its stream is destroyed (as with cudaFreeAsync).
  static Buffer device(size_t size_bytes, cudaStream_t stream);
  // A view of memory owned elsewhere; the caller keeps it alive.
  static Buffer view(void* data, size_t size_bytes, Location where);

  // A buffer made later by `make`, when its bytes, size or place are first asked for (once
  // for all its copies): a device output whose size a read-back gives, queued so that other
  // work (the next stage's, or the making of outputs whose read-backs land sooner) is queued
  // before the host waits for the size. Copies
  // may be made on several threads; one Buffer object, like any, is used by one at a time.
  static Buffer deferred(std::function<Buffer()> make);

  uint8_t* data() {
    settle();
    return data_;
  }
  const uint8_t* data() const {
    settle();
    return data_;
  }
  template <typename T> T* as() { return reinterpret_cast<T*>(data()); }
  template <typename T> const T* as() const { return reinterpret_cast<const T*>(data()); }
  size_t size() const {
    settle();
    return size_;
  }
  Location location() const {
    settle();
    return location_;
  }
  bool on_device() const { return location() == Location::device; }
  // Bytes of memory this buffer keeps alive: its allocation's, which a slice keeps whole (0
  // for a view).
  size_t held_bytes() const {
    settle();
    return held_;
  }

  // Shortens the logical size after an encoder wrote less than its bound; keeps the memory.
  void shrink(size_t size_bytes);
  // Bytes [offset, offset + size_bytes) of this buffer, keeping the whole allocation alive:
  // an encoder that assembled its output inside a larger scratch returns it without a copy.
  Buffer slice(size_t offset, size_t size_bytes) const;

 private:
  struct Deferred;
  void settle() const {
    if (deferred_) make_deferred();
  }
  void make_deferred() const;

  // Mutable so that a const deferred buffer can become what it stands for.
  mutable std::shared_ptr<Deferred> deferred_;
  mutable std::shared_ptr<uint8_t> owner_;
  mutable uint8_t* data_ = nullptr;
  mutable size_t size_ = 0;
  mutable size_t held_ = 0;
  mutable Location location_ = Location::host;
};

// Copies between any two locations (synchronous with respect to the host on return).
void copy_bytes(void* dst, Location dst_where, const void* src, Location src_where, size_t size_bytes,
                cudaStream_t stream);
// The same without waiting where the device is involved: the caller synchronizes the stream
// before reading the destination or freeing the source.
void copy_bytes_async(void* dst, Location dst_where, const void* src, Location src_where, size_t size_bytes,
                      cudaStream_t stream);
void synchronize(cudaStream_t stream);
// Sets the bytes to zero: queued on `stream` where they are on the device.
void zero_bytes(void* dst, Location where, size_t size_bytes, cudaStream_t stream);

// Up to 64 KiB of device bytes copied to the host once the work queued before it on `stream`
// is done, read later: wait() returns them when they have landed, which costs no wait when
// the host has waited for that stream since. The copy goes to page-locked memory, so the
// host queues more work meanwhile (into pageable memory the copy itself would wait). Without
// CUDA, making one fails.
class QueuedReadBack {
 public:
  QueuedReadBack(const void* device_src, size_t size_bytes, cudaStream_t stream);
  ~QueuedReadBack();  // waits for a copy still in flight
  QueuedReadBack(const QueuedReadBack&) = delete;
  QueuedReadBack& operator=(const QueuedReadBack&) = delete;
  const void* wait();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Copies host memory to the device in consecutive pieces, calling after_piece(offset, bytes)
// once each piece's copy is queued on `stream`: work ordered after that copy can run beside
// the copies of the next pieces. Large pageable ranges go through the page-locked staging and
// the call returns once the host memory is read; other ranges are queued (pageable memory of
// under 32 MB is read before each piece's copy returns, as cudaMemcpyAsync does).
void upload_in_pieces(void* device_dst, const void* host_src, size_t size_bytes, cudaStream_t stream,
                      const std::function<void(size_t offset, size_t bytes)>& after_piece);

// Copies from the device to pageable host memory, range after range, through the page-locked
// staging buffers that large copies use: one chunk stays in flight across ranges, so that
// the DMA engine never waits for the host between them. A range is copied after the work
// queued on the stream before add(); add() returns once the range's device bytes are read
// (the source may be rewritten), possibly before its last chunk reaches the host.
class StagedDownload {
 public:
  explicit StagedDownload(cudaStream_t stream);
  ~StagedDownload();  // waits for the copy in flight (an exception may be unwinding)
  StagedDownload(const StagedDownload&) = delete;
  StagedDownload& operator=(const StagedDownload&) = delete;
  void add(void* host_dst, const void* device_src, size_t size_bytes);
  // Every byte added is on the host.
  void finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

Buffer to_host(const Buffer& source, cudaStream_t stream);
Buffer to_device(const Buffer& source, cudaStream_t stream);

// Device-memory accounting: bytes held now and the high-water mark since the last reset.
struct DeviceMemoryStats {
  size_t current_bytes = 0;
  size_t peak_bytes = 0;
};
DeviceMemoryStats device_memory_stats();
void reset_device_memory_peak();

bool cuda_available();
// Free memory on the current device (0 without CUDA).
uint64_t device_free_bytes();
// The current device's memory, asked once per device (0 without CUDA).
uint64_t device_total_bytes();

}  // namespace fzg
