#include "runtime/buffer.hh"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>

#include "core/error.hh"
#include "runtime/timer.hh"

namespace fzg {

#ifdef FZG_HAVE_CUDA
// Defined in device_memory.cu.
uint8_t* device_allocate(size_t size_bytes, cudaStream_t stream, void (**release)(uint8_t*, size_t, cudaStream_t));
void device_copy(void* dst, Location dst_where, const void* src, Location src_where, size_t size_bytes,
                 cudaStream_t stream, bool wait);
void device_synchronize(cudaStream_t stream);
bool device_present();
bool host_memory_is_pinned(const void* p);
void staging_buffers(size_t chunk_bytes, uint8_t** buffers, void** events);
void copy_async(void* dst, const void* src, size_t size_bytes, cudaStream_t stream);
void device_zero(void* dst, size_t size_bytes, cudaStream_t stream);
void event_record(void* event, cudaStream_t stream);
void event_wait(void* event);
#endif

namespace {

// Bytes from `address` to the next multiple of `alignment` (a power of two) past it, at most
// `limit`: a whole `alignment` from an address on a boundary.
size_t to_boundary(const void* address, size_t alignment, size_t limit) {
  const size_t past = reinterpret_cast<uintptr_t>(address) & (alignment - 1);
  return std::min(limit, alignment - past);
}

// Copies host memory with all cores: page faults on fresh buffers and the copy itself spread
// out. Pieces end on 1 MiB boundaries of the destination, so that a 2 MiB huge page is
// faulted in by the two threads that fill its halves and no more (a 400 MB download in four
// parts at unaligned offsets measured ~20 % slower into fresh memory than in one).
void parallel_memcpy(void* dst, const void* src, size_t size_bytes) {
  constexpr size_t piece = size_t(1) << 20;
  auto* to = static_cast<uint8_t*>(dst);
  const auto* from = static_cast<const uint8_t*>(src);
  const size_t head = reinterpret_cast<uintptr_t>(to) % piece ? to_boundary(to, piece, size_bytes) : 0;
  std::memcpy(to, from, head);
  const int64_t pieces = int64_t((size_bytes - head + piece - 1) / piece);
#pragma omp parallel for schedule(static) if (pieces > 4)
  for (int64_t i = 0; i < pieces; ++i) {
    const size_t at = head + size_t(i) * piece;
    std::memcpy(to + at, from + at, std::min(piece, size_bytes - at));
  }
}

#ifdef FZG_HAVE_CUDA
// Large copies between pageable host memory and the device go through two page-locked bounce
// buffers in chunks: the CPU fills (or drains) one while the DMA engine moves the other.
constexpr size_t staging_chunk = size_t(16) << 20;

// The staging buffers serve one copy at a time.
std::mutex staging_in_use;

using PieceHook = std::function<void(size_t, size_t)>;

// Pageable host memory to the device, a staging chunk at a time: the CPU fills one bounce
// buffer while the DMA engine moves the other. after_piece(offset, bytes) follows each
// chunk's copy on the stream. Synchronous: the host memory may go on return.
void staged_upload(uint8_t* to, const uint8_t* from, size_t size_bytes, cudaStream_t stream,
                   const PieceHook& after_piece) {
  std::lock_guard<std::mutex> lock(staging_in_use);
  uint8_t* bounce[2];
  void* moved[2];
  staging_buffers(staging_chunk, bounce, moved);
  const size_t chunks = (size_bytes + staging_chunk - 1) / staging_chunk;
  for (size_t i = 0; i < chunks; ++i) {
    const size_t at = i * staging_chunk, length = std::min(staging_chunk, size_bytes - at);
    event_wait(moved[i % 2]);  // the DMA that last read this buffer is done
    parallel_memcpy(bounce[i % 2], from + at, length);
    copy_async(to + at, bounce[i % 2], length, stream);
    event_record(moved[i % 2], stream);
    if (after_piece) after_piece(at, length);
  }
  device_synchronize(stream);
}

bool staged_copy(void* dst, Location dst_where, const void* src, Location src_where, size_t size_bytes,
                 cudaStream_t stream) {
  const bool upload = src_where == Location::host && dst_where == Location::device;
  const bool download = src_where == Location::device && dst_where == Location::host;
  if (!(upload || download) || size_bytes < 2 * staging_chunk) return false;
  if (host_memory_is_pinned(upload ? src : dst)) return false;
  auto* to = static_cast<uint8_t*>(dst);
  const auto* from = static_cast<const uint8_t*>(src);
  if (upload) {
    staged_upload(to, from, size_bytes, stream, nullptr);
    return true;
  }
  StagedDownload staged(stream);
  staged.add(to, from, size_bytes);
  staged.finish();
  return true;
}
#endif

}  // namespace


namespace {

// Large host buffers are 2 MiB aligned and asked to be backed by huge pages: a fresh buffer is
// first touched by the copy that fills it (a decompressed field coming off the device), and
// with 4 KiB pages that copy is bound by page faults (one per 4 KiB) rather than memory.
constexpr size_t huge_page = size_t(2) << 20;

uint8_t* allocate_host(size_t size_bytes, void (**release)(uint8_t*)) {
  if (size_bytes < 4 * huge_page) {
    *release = [](uint8_t* p) { delete[] p; };
    return new uint8_t[size_bytes ? size_bytes : 1];
  }
  const size_t rounded = (size_bytes + huge_page - 1) / huge_page * huge_page;
  void* p = nullptr;
  if (posix_memalign(&p, huge_page, rounded) != 0) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  madvise(p, rounded, MADV_HUGEPAGE);  // advice only: without huge pages it is a plain buffer
#endif
  *release = [](uint8_t* q) { std::free(q); };
  return static_cast<uint8_t*>(p);
}

}  // namespace

Buffer Buffer::host(size_t size_bytes) {
  Buffer b;
  // Uninitialized on purpose: encoders write every byte they report.
  void (*release)(uint8_t*) = nullptr;
  uint8_t* p = allocate_host(size_bytes, &release);  // sets `release` before it is passed on
  b.owner_.reset(p, release);
  b.data_ = b.owner_.get();
  b.size_ = b.held_ = size_bytes;
  b.location_ = Location::host;
  return b;
}

Buffer Buffer::device(size_t size_bytes, cudaStream_t stream) {
#ifdef FZG_HAVE_CUDA
  void (*release)(uint8_t*, size_t, cudaStream_t) = nullptr;
  uint8_t* p = device_allocate(size_bytes, stream, &release);
  Buffer b;
  b.owner_.reset(p, [release, size_bytes, stream](uint8_t* q) { release(q, size_bytes, stream); });
  b.data_ = p;
  b.size_ = b.held_ = size_bytes;
  b.location_ = Location::device;
  return b;
#else
  (void)size_bytes, (void)stream;
  fail(ErrorCode::unsupported, "this build of fzg has no CUDA backend");
#endif
}

Buffer Buffer::view(void* data, size_t size_bytes, Location where) {
  Buffer b;
  b.data_ = static_cast<uint8_t*>(data);
  b.size_ = size_bytes;
  b.location_ = where;
  return b;
}

struct Buffer::Deferred {
  std::function<Buffer()> make;
  std::once_flag made;  // copies on several threads make it once (a throw leaves it unmade)
  Buffer buffer;
};

Buffer Buffer::deferred(std::function<Buffer()> make) {
  Buffer b;
  b.deferred_ = std::make_shared<Deferred>();
  b.deferred_->make = std::move(make);
  return b;
}

void Buffer::make_deferred() const {
  const std::shared_ptr<Deferred> d = deferred_;  // kept if `make` throws: then nothing changes
  std::call_once(d->made, [&d] {
    Buffer made = d->make();
    made.settle();
    d->buffer = made;
    d->make = nullptr;  // what it held (the encoder's state) goes now
  });
  deferred_.reset();
  owner_ = d->buffer.owner_;
  data_ = d->buffer.data_;
  size_ = d->buffer.size_;
  held_ = d->buffer.held_;
  location_ = d->buffer.location_;
}

void Buffer::shrink(size_t size_bytes) {
  settle();
  if (size_bytes > size_) fail(ErrorCode::invalid_argument, "Buffer::shrink cannot grow a buffer");
  size_ = size_bytes;
}

Buffer Buffer::slice(size_t offset, size_t size_bytes) const {
  settle();
  if (offset > size_ || size_bytes > size_ - offset) fail(ErrorCode::invalid_argument, "Buffer::slice past the end");
  Buffer b = *this;
  b.data_ += offset;
  b.size_ = size_bytes;
  return b;
}

namespace {
void copy_between(void* dst, Location dst_where, const void* src, Location src_where, size_t size_bytes,
                  cudaStream_t stream, bool wait) {
  if (size_bytes == 0) return;
  if (dst_where == Location::host && src_where == Location::host) {
    parallel_memcpy(dst, src, size_bytes);
    return;
  }
#ifdef FZG_HAVE_CUDA
  if (staged_copy(dst, dst_where, src, src_where, size_bytes, stream)) return;  // always synchronous
  device_copy(dst, dst_where, src, src_where, size_bytes, stream, wait);
#else
  (void)stream, (void)wait;
  fail(ErrorCode::unsupported, "this build of fzg has no CUDA backend");
#endif
}
}  // namespace

void copy_bytes(void* dst, Location dst_where, const void* src, Location src_where, size_t size_bytes,
                cudaStream_t stream) {
  copy_between(dst, dst_where, src, src_where, size_bytes, stream, true);
}

void copy_bytes_async(void* dst, Location dst_where, const void* src, Location src_where, size_t size_bytes,
                      cudaStream_t stream) {
  copy_between(dst, dst_where, src, src_where, size_bytes, stream, false);
}

void zero_bytes(void* dst, Location where, size_t size_bytes, cudaStream_t stream) {
  if (size_bytes == 0) return;
  if (where == Location::host) {
    std::memset(dst, 0, size_bytes);
    return;
  }
#ifdef FZG_HAVE_CUDA
  device_zero(dst, size_bytes, stream);
#else
  (void)stream;
  fail(ErrorCode::unsupported, "this build of fzg has no CUDA backend");
#endif
}

void upload_in_pieces(void* device_dst, const void* host_src, size_t size_bytes, cudaStream_t stream,
                      const std::function<void(size_t, size_t)>& after_piece) {
#ifdef FZG_HAVE_CUDA
  auto* to = static_cast<uint8_t*>(device_dst);
  const auto* from = static_cast<const uint8_t*>(host_src);
  if (size_bytes >= 2 * staging_chunk && !host_memory_is_pinned(host_src))
    return staged_upload(to, from, size_bytes, stream, after_piece);
  for (size_t at = 0; at < size_bytes; at += staging_chunk) {
    const size_t length = std::min(staging_chunk, size_bytes - at);
    copy_async(to + at, from + at, length, stream);
    after_piece(at, length);
  }
#else
  (void)device_dst, (void)host_src, (void)size_bytes, (void)stream, (void)after_piece;
  fail(ErrorCode::unsupported, "this build of fzg has no CUDA backend");
#endif
}

#ifdef FZG_HAVE_CUDA
struct StagedDownload::State {
  cudaStream_t stream;
  std::unique_lock<std::mutex> lock{staging_in_use};
  uint8_t* bounce[2];
  void* moved[2];
  int next = 0;             // the bounce buffer the next chunk goes to
  uint8_t* waiting = nullptr;  // the chunk in flight, in the other one: its destination and size
  size_t waiting_bytes = 0;

  explicit State(cudaStream_t s) : stream(s) { staging_buffers(staging_chunk, bounce, moved); }
  // The chunk in flight, onto the host.
  void drain() {
    if (!waiting) return;
    event_wait(moved[1 - next]);
    parallel_memcpy(waiting, bounce[1 - next], waiting_bytes);
    waiting = nullptr;
  }
};

StagedDownload::StagedDownload(cudaStream_t stream) : state_(std::make_unique<State>(stream)) {}

StagedDownload::~StagedDownload() {
  if (!state_->waiting) return;
  try {
    event_wait(state_->moved[1 - state_->next]);
  } catch (...) {  // a failing device has nothing in flight left to wait for
  }
}

void StagedDownload::add(void* host_dst, const void* device_src, size_t size_bytes) {
  State& s = *state_;
  if (host_memory_is_pinned(host_dst)) {
    copy_async(host_dst, device_src, size_bytes, s.stream);
    device_synchronize(s.stream);
    return;
  }
  trace::mark("staged download: range added");
  // Chunks end on staging_chunk boundaries of the destination, whatever the range's offset.
  for (size_t at = 0, bytes = 0; at < size_bytes; at += bytes) {
    bytes = to_boundary(static_cast<uint8_t*>(host_dst) + at, staging_chunk, size_bytes - at);
    copy_async(s.bounce[s.next], static_cast<const uint8_t*>(device_src) + at, bytes, s.stream);
    event_record(s.moved[s.next], s.stream);
    s.drain();  // the chunk before this one, in the other buffer, while this one moves
    s.waiting = static_cast<uint8_t*>(host_dst) + at;
    s.waiting_bytes = bytes;
    s.next = 1 - s.next;
  }
  trace::mark("staged download: all but the last chunk on the host");
  // The range's last chunk has left the device once its event fires.
  if (s.waiting) event_wait(s.moved[1 - s.next]);
  trace::mark("staged download: range read");
}

void StagedDownload::finish() { state_->drain(); }
#else
struct StagedDownload::State {};
StagedDownload::StagedDownload(cudaStream_t) {}
StagedDownload::~StagedDownload() = default;
void StagedDownload::add(void*, const void*, size_t) {
  fail(ErrorCode::unsupported, "this build of fzg has no CUDA backend");
}
void StagedDownload::finish() {}

// QueuedReadBack is device_memory.cu's; without CUDA there is nothing to read back.
struct QueuedReadBack::State {};
QueuedReadBack::QueuedReadBack(const void*, size_t, cudaStream_t) {
  fail(ErrorCode::unsupported, "this build of fzg has no CUDA backend");
}
QueuedReadBack::~QueuedReadBack() = default;
const void* QueuedReadBack::wait() { return nullptr; }
#endif

void synchronize(cudaStream_t stream) {
#ifdef FZG_HAVE_CUDA
  if (cuda_available()) device_synchronize(stream);
#else
  (void)stream;
#endif
}

Buffer to_host(const Buffer& source, cudaStream_t stream) {
  if (!source.on_device()) return source;
  Buffer out = Buffer::host(source.size());
  copy_bytes(out.data(), Location::host, source.data(), Location::device, source.size(), stream);
  return out;
}

Buffer to_device(const Buffer& source, cudaStream_t stream) {
  if (source.on_device()) return source;
  Buffer out = Buffer::device(source.size(), stream);
  copy_bytes(out.data(), Location::device, source.data(), Location::host, source.size(), stream);
  return out;
}

bool cuda_available() {
#ifdef FZG_HAVE_CUDA
  static const bool present = device_present();
  return present;
#else
  return false;
#endif
}

#ifndef FZG_HAVE_CUDA
uint64_t device_free_bytes() { return 0; }
uint64_t device_total_bytes() { return 0; }
DeviceMemoryStats device_memory_stats() { return {}; }
void reset_device_memory_peak() {}
#endif

}  // namespace fzg
