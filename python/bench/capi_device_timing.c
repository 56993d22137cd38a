/* The C API's own time for one call on a field resident on the GPU: the baseline the Python
 * package's overhead is measured against (python/bench/device_overhead.py). Loads a raw f32
 * field, copies it to the device once, then times fzg_compress (device field -> device file)
 * (and fzg_compress_to_buffer, the call the package makes) and fzg_decompress (device file ->
 * device field; and fzg_decompress_to_buffer, the package's call without out=) with CUDA
 * events on one stream: warm-up,
 * then the median of REPEAT calls each. Prints one JSON line. Never decides pass or fail.
 *   fzg_capi_device_timing FIELD.f32 NX NY NZ REL_BOUND [REPEAT] */
#include <cuda_runtime_api.h>
#include <fzg.h>
#include <stdio.h>
#include <stdlib.h>

#define CUDA_OR_DIE(call)                                                             \
  do {                                                                                \
    cudaError_t e = (call);                                                           \
    if (e != cudaSuccess) {                                                           \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e)); \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

static void fzg_or_die(fzg_context* ctx, fzg_status status, const char* what) {
  if (status != FZG_OK) {
    fprintf(stderr, "%s: %s\n", what, fzg_last_error(ctx));
    exit(1);
  }
}

static int by_value(const void* a, const void* b) {
  const float x = *(const float*)a, y = *(const float*)b;
  return (x > y) - (x < y);
}

static float median(float* ms, int n) {
  qsort(ms, (size_t)n, sizeof *ms, by_value);
  return n % 2 ? ms[n / 2] : 0.5f * (ms[n / 2 - 1] + ms[n / 2]);
}

int main(int argc, char** argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: %s FIELD.f32 NX NY NZ REL_BOUND [REPEAT]\n", argv[0]);
    return 2;
  }
  const size_t dims[3] = {strtoull(argv[2], 0, 10), strtoull(argv[3], 0, 10), strtoull(argv[4], 0, 10)};
  const size_t count = dims[0] * dims[1] * dims[2], bytes = count * sizeof(float);
  const double bound = atof(argv[5]);
  const int repeat = argc > 6 ? atoi(argv[6]) : 20, warm_up = 3;
  float* host = malloc(bytes);
  FILE* in = fopen(argv[1], "rb");
  if (!host || !in || fread(host, 1, bytes, in) != bytes) {
    fprintf(stderr, "cannot read %zu bytes of %s\n", bytes, argv[1]);
    return 1;
  }
  fclose(in);

  fzg_context* ctx = fzg_create();
  fzg_or_die(ctx, fzg_set_device(ctx, FZG_DEVICE_CUDA), "device");
  fzg_or_die(ctx, fzg_set_bound(ctx, FZG_REL, bound), "bound");
  fzg_or_die(ctx, fzg_set_locations(ctx, FZG_DEVICE_MEMORY, FZG_DEVICE_MEMORY), "locations");
  cudaStream_t stream;
  CUDA_OR_DIE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));  /* as the Python side's */
  fzg_or_die(ctx, fzg_set_stream(ctx, stream), "stream");
  const size_t capacity = fzg_max_compressed_size(ctx, FZG_F32, dims, 3);
  void *field, *file, *back;
  CUDA_OR_DIE(cudaMalloc(&field, bytes));
  CUDA_OR_DIE(cudaMalloc(&back, bytes));
  CUDA_OR_DIE(cudaMalloc(&file, capacity));
  CUDA_OR_DIE(cudaMemcpy(field, host, bytes, cudaMemcpyHostToDevice));
  cudaEvent_t start, stop;
  CUDA_OR_DIE(cudaEventCreate(&start));
  CUDA_OR_DIE(cudaEventCreate(&stop));

  float* compress_ms = malloc(sizeof(float) * (size_t)repeat);
  float* decompress_ms = malloc(sizeof(float) * (size_t)repeat);
  size_t size = 0;
  for (int i = 0; i < warm_up + repeat; ++i) {
    CUDA_OR_DIE(cudaEventRecord(start, stream));
    fzg_or_die(ctx, fzg_compress(ctx, field, FZG_F32, dims, 3, file, capacity, &size), "compress");
    CUDA_OR_DIE(cudaEventRecord(stop, stream));
    CUDA_OR_DIE(cudaEventSynchronize(stop));
    if (i >= warm_up) CUDA_OR_DIE(cudaEventElapsedTime(&compress_ms[i - warm_up], start, stop));
  }
  float* owned_ms = malloc(sizeof(float) * (size_t)repeat);  /* fzg_compress_to_buffer: no copy */
  for (int i = 0; i < warm_up + repeat; ++i) {
    fzg_buffer* owned = NULL;
    CUDA_OR_DIE(cudaEventRecord(start, stream));
    fzg_or_die(ctx, fzg_compress_to_buffer(ctx, field, FZG_F32, dims, 3, &owned), "compress_to_buffer");
    CUDA_OR_DIE(cudaEventRecord(stop, stream));
    CUDA_OR_DIE(cudaEventSynchronize(stop));
    fzg_buffer_free(owned);
    if (i >= warm_up) CUDA_OR_DIE(cudaEventElapsedTime(&owned_ms[i - warm_up], start, stop));
  }
  for (int i = 0; i < warm_up + repeat; ++i) {
    CUDA_OR_DIE(cudaEventRecord(start, stream));
    fzg_or_die(ctx, fzg_decompress(ctx, file, size, back, bytes), "decompress");
    CUDA_OR_DIE(cudaEventRecord(stop, stream));
    CUDA_OR_DIE(cudaEventSynchronize(stop));
    if (i >= warm_up) CUDA_OR_DIE(cudaEventElapsedTime(&decompress_ms[i - warm_up], start, stop));
  }
  float* field_ms = malloc(sizeof(float) * (size_t)repeat);  /* fzg_decompress_to_buffer: the package's call */
  for (int i = 0; i < warm_up + repeat; ++i) {
    fzg_buffer* owned = NULL;
    fzg_file_info info;
    CUDA_OR_DIE(cudaEventRecord(start, stream));
    fzg_or_die(ctx, fzg_decompress_to_buffer(ctx, file, size, &owned, &info), "decompress_to_buffer");
    CUDA_OR_DIE(cudaEventRecord(stop, stream));
    CUDA_OR_DIE(cudaEventSynchronize(stop));
    fzg_buffer_free(owned);
    if (i >= warm_up) CUDA_OR_DIE(cudaEventElapsedTime(&field_ms[i - warm_up], start, stop));
  }
  printf("{\"values\": %zu, \"file_bytes\": %zu, \"repeat\": %d, \"compress_ms\": %.4f, "
         "\"compress_to_buffer_ms\": %.4f, \"decompress_ms\": %.4f, \"decompress_to_buffer_ms\": %.4f}\n",
         count, size, repeat, median(compress_ms, repeat), median(owned_ms, repeat), median(decompress_ms, repeat),
         median(field_ms, repeat));
  fzg_destroy(ctx);
  return 0;
}
