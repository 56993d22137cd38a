/* An LD_PRELOAD library for test_cuda.py: counts the bytes a process copies from GPU memory
 * to host memory through cudaMemcpy and cudaMemcpyAsync of the CUDA runtime fzg links (every
 * copy fzg makes; cupy reaches its runtime through dlsym, past this library), and writes
 * the total to $FZG_COPY_COUNT_FILE at exit. It proves a call does not bring a device field
 * to the host, whichever code path it takes. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static _Atomic unsigned long long device_to_host_bytes;

static int on_device(const void* pointer) {
  struct cudaPointerAttributes attributes;
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError(); /* a plain host pointer: clear the error it leaves */
    return 0;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

static void count(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind kind) {
  if (kind == cudaMemcpyDeviceToHost || (kind == cudaMemcpyDefault && !on_device(dst) && on_device(src)))
    atomic_fetch_add(&device_to_host_bytes, bytes);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind kind) {
  static cudaError_t (*real)(void*, const void*, size_t, enum cudaMemcpyKind);
  if (!real) *(void**)&real = dlsym(RTLD_NEXT, "cudaMemcpy");
  count(dst, src, bytes, kind);
  return real(dst, src, bytes, kind);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind kind, cudaStream_t stream) {
  static cudaError_t (*real)(void*, const void*, size_t, enum cudaMemcpyKind, cudaStream_t);
  if (!real) *(void**)&real = dlsym(RTLD_NEXT, "cudaMemcpyAsync");
  count(dst, src, bytes, kind);
  return real(dst, src, bytes, kind, stream);
}

__attribute__((destructor)) static void report(void) {
  const char* path = getenv("FZG_COPY_COUNT_FILE");
  FILE* out = path ? fopen(path, "w") : NULL;
  if (!out) return;
  fprintf(out, "%llu\n", (unsigned long long)atomic_load(&device_to_host_bytes));
  fclose(out);
}
