#include "pipeline/buffer.hh"

#include <cstring>

#include "pipeline/error.hh"

namespace fzg {

#ifdef FZG_HAVE_CUDA
// Defined in device_memory.cu.
uint8_t* device_allocate(size_t size_bytes, cudaStream_t stream, void (**release)(uint8_t*, cudaStream_t));
uint8_t* pinned_allocate(size_t size_bytes);
void pinned_release(uint8_t* p);
void device_copy(void* dst, Location dst_where, const void* src, Location src_where, size_t size_bytes,
                 cudaStream_t stream, bool wait);
void device_synchronize(cudaStream_t stream);
bool device_present();
#endif

Buffer Buffer::host(size_t size_bytes) {
  Buffer b;
  // Uninitialized on purpose: encoders write every byte they report.
  b.owner_.reset(new uint8_t[size_bytes ? size_bytes : 1], std::default_delete<uint8_t[]>());
  b.data_ = b.owner_.get();
  b.size_ = size_bytes;
  b.location_ = Location::host;
  return b;
}

Buffer Buffer::pinned(size_t size_bytes) {
#ifdef FZG_HAVE_CUDA
  if (cuda_available()) {
    Buffer b;
    b.owner_.reset(pinned_allocate(size_bytes ? size_bytes : 1), pinned_release);
    b.data_ = b.owner_.get();
    b.size_ = size_bytes;
    b.location_ = Location::host;
    return b;
  }
#endif
  return host(size_bytes);
}

Buffer Buffer::device(size_t size_bytes, cudaStream_t stream) {
#ifdef FZG_HAVE_CUDA
  void (*release)(uint8_t*, cudaStream_t) = nullptr;
  uint8_t* p = device_allocate(size_bytes, stream, &release);
  Buffer b;
  b.owner_.reset(p, [release, stream](uint8_t* q) { release(q, stream); });
  b.data_ = p;
  b.size_ = size_bytes;
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

void Buffer::shrink(size_t size_bytes) {
  if (size_bytes > size_) fail(ErrorCode::invalid_argument, "Buffer::shrink cannot grow a buffer");
  size_ = size_bytes;
}

void copy_bytes(void* dst, Location dst_where, const void* src, Location src_where, size_t size_bytes,
                cudaStream_t stream) {
  if (size_bytes == 0) return;
  if (dst_where == Location::host && src_where == Location::host) {
    std::memcpy(dst, src, size_bytes);
    return;
  }
#ifdef FZG_HAVE_CUDA
  device_copy(dst, dst_where, src, src_where, size_bytes, stream, true);
#else
  (void)stream;
  fail(ErrorCode::unsupported, "this build of fzg has no CUDA backend");
#endif
}

void copy_bytes_async(void* dst, Location dst_where, const void* src, Location src_where, size_t size_bytes,
                      cudaStream_t stream) {
  if (size_bytes == 0) return;
  if (dst_where == Location::host && src_where == Location::host) {
    std::memcpy(dst, src, size_bytes);
    return;
  }
#ifdef FZG_HAVE_CUDA
  device_copy(dst, dst_where, src, src_where, size_bytes, stream, false);
#else
  (void)stream;
  fail(ErrorCode::unsupported, "this build of fzg has no CUDA backend");
#endif
}

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
DeviceMemoryStats device_memory_stats() { return {}; }
void reset_device_memory_peak() {}
#endif

}  // namespace fzg
