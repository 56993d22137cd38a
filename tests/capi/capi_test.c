/* The C API from C: round trips at each mode and type, the bound held, decompression into a
 * caller's array, file info, the shipped configs, and every error a caller can make turned
 * into a status and a message (never an abort). On the GPU too where one is present. Prints
 * each failed check and exits non-zero on any. */
#include <fzg.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"


static float* smooth_field(size_t n) {
  float* v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; ++i) v[i] = (float)(sin(0.01 * (double)i) * 100.0 + cos(0.003 * (double)i) * 7.0);
  v[17] = NAN;
  v[23] = INFINITY;
  return v;
}

/* Compress and decompress with ctx's settings; the largest error over finite points, or -1
 * when a NaN or Inf did not come back as it was. */
static double round_trip(fzg_context* ctx, const float* in, const size_t* dims, int rank, size_t n, double* ratio,
                         fzg_file_info* info) {
  const size_t cap = fzg_max_compressed_size(ctx, FZG_F32, dims, rank);
  CHECK(cap > 0);
  unsigned char* file = malloc(cap);
  size_t size = 0;
  fzg_status s = fzg_compress(ctx, in, FZG_F32, dims, rank, file, cap, &size);
  CHECK(s == FZG_OK);
  if (s != FZG_OK) fprintf(stderr, "  %s\n", fzg_last_error(ctx));
  CHECK(strcmp(fzg_last_error(ctx), "") == 0);
  CHECK(size > 0 && size <= cap);
  *ratio = (double)(n * sizeof(float)) / (double)size;
  CHECK(fzg_file_info_of(ctx, file, size, info) == FZG_OK);
  float* out = malloc(n * sizeof *out);
  CHECK(fzg_decompress(ctx, file, size, out, n * sizeof *out) == FZG_OK);
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    if (isnan(in[i]) || isinf(in[i])) {
      if (!(isnan(in[i]) ? isnan(out[i]) : out[i] == in[i])) worst = -1;
    } else if (worst >= 0 && fabs((double)out[i] - (double)in[i]) > worst) {
      worst = fabs((double)out[i] - (double)in[i]);
    }
  }
  free(out);
  free(file);
  return worst;
}

static void lossy_round_trips(fzg_context* ctx) {
  const size_t dims[3] = {50, 40, 30}, n = 50 * 40 * 30;
  float* in = smooth_field(n);
  double ratio = 0;
  fzg_file_info info;
  CHECK(fzg_set_bound(ctx, FZG_ABS, 0.01) == FZG_OK);
  const double worst = round_trip(ctx, in, dims, 3, n, &ratio, &info);
  CHECK(worst >= 0 && worst <= 0.01);
  CHECK(ratio > 2);
  CHECK(info.dtype == FZG_F32 && info.rank == 3 && info.dims[0] == 50 && info.dims[1] == 40 && info.dims[2] == 30);
  CHECK(info.original_bytes == n * sizeof(float) && info.mode == FZG_ABS && info.absolute_bound == 0.01);

  CHECK(fzg_set_bound(ctx, FZG_REL, 1e-3) == FZG_OK);
  const double rel_worst = round_trip(ctx, in, dims, 2, 50 * 40, &ratio, &info);
  CHECK(rel_worst >= 0 && rel_worst <= info.absolute_bound && info.absolute_bound > 0 && info.rank == 2);

  /* Unit slowest axes are the caller's: 2000 x 1 stays 2D and 2000 x 1 x 1 3D in the file. */
  const size_t flat[3] = {2000, 1, 1};
  for (int rank = 2; rank <= 3; ++rank) {
    const double w = round_trip(ctx, in, flat, rank, 2000, &ratio, &info);
    CHECK(w >= 0 && w <= info.absolute_bound && info.rank == rank && info.dims[0] == 2000 && info.dims[1] == 1);
  }

  static const char* configs[] = {"fz", "cusz", "ratio", "gpulz", "fz-gpulz"};
  for (size_t c = 0; c < sizeof configs / sizeof *configs; ++c) {
    char path[1024];
    snprintf(path, sizeof path, "%s/configs/%s.json", FZG_SOURCE_DIR, configs[c]);
    CHECK(fzg_set_config_file(ctx, path) == FZG_OK);
    const double w = round_trip(ctx, in, dims, 3, n, &ratio, &info);
    CHECK(w >= 0 && w <= info.absolute_bound);
  }
  CHECK(fzg_set_config_file(ctx, NULL) == FZG_OK);
  free(in);
}

/* A smooth field of n values (*in, malloc'd) compressed by fzg_compress at abs 0.01 with
 * ctx's other settings: the file (malloc'd), *size bytes. */
static unsigned char* compressed_smooth_field(fzg_context* ctx, const size_t* dims, int rank, size_t n, float** in,
                                              size_t* size) {
  *in = smooth_field(n);
  CHECK(fzg_set_bound(ctx, FZG_ABS, 0.01) == FZG_OK);
  const size_t cap = fzg_max_compressed_size(ctx, FZG_F32, dims, rank);
  unsigned char* file = malloc(cap);
  CHECK(fzg_compress(ctx, *in, FZG_F32, dims, rank, file, cap, size) == FZG_OK);
  return file;
}

/* A file fzg allocates holds the bytes fzg_compress writes, and decompresses. */
static void compress_to_buffer(fzg_context* ctx, int on_device) {
  const size_t dims[2] = {300, 200}, n = 300 * 200;
  float* in = NULL;
  size_t size = 0;
  unsigned char* expected = compressed_smooth_field(ctx, dims, 2, n, &in, &size);
  fzg_buffer* file = NULL;
  if (on_device) CHECK(fzg_set_locations(ctx, FZG_HOST_MEMORY, FZG_DEVICE_MEMORY) == FZG_OK);
  CHECK(fzg_compress_to_buffer(ctx, in, FZG_F32, dims, 2, &file) == FZG_OK && file != NULL);
  CHECK(fzg_buffer_size(file) == size && fzg_buffer_data(file) != NULL);
  float* out = malloc(n * sizeof *out);
  CHECK(fzg_decompress(ctx, fzg_buffer_data(file), fzg_buffer_size(file), out, n * sizeof *out) == FZG_OK);
  for (size_t i = 0; i < n; ++i)
    if (!isnan(in[i]) && !isinf(in[i])) CHECK(fabs((double)out[i] - (double)in[i]) <= 0.01);
  if (!on_device) CHECK(memcmp(fzg_buffer_data(file), expected, size) == 0);
  fzg_buffer* field = NULL;
  fzg_file_info info, expected_info;
  CHECK(fzg_decompress_to_buffer(ctx, fzg_buffer_data(file), fzg_buffer_size(file), &field, &info) == FZG_OK);
  CHECK(fzg_buffer_size(field) == n * sizeof(float) && info.rank == 2 && info.dims[0] == 300 && info.dims[1] == 200);
  CHECK(info.mode == FZG_ABS && info.absolute_bound == 0.01 && info.dtype == FZG_F32);
  if (!on_device) {  /* the same values and info as the calls into caller memory */
    CHECK(memcmp(fzg_buffer_data(field), out, n * sizeof(float)) == 0);
    CHECK(fzg_file_info_of(ctx, expected, size, &expected_info) == FZG_OK);
    CHECK(expected_info.rank == info.rank && expected_info.dims[0] == info.dims[0] &&
          expected_info.absolute_bound == info.absolute_bound && expected_info.requested_bound == info.requested_bound &&
          expected_info.original_bytes == info.original_bytes && expected_info.format_version == info.format_version);
  }
  fzg_buffer_free(field);
  fzg_buffer_free(file);
  CHECK(fzg_set_locations(ctx, FZG_HOST_MEMORY, FZG_HOST_MEMORY) == FZG_OK);
  CHECK(fzg_decompress_to_buffer(ctx, "not a file", 10, &field, NULL) == FZG_ERROR_CORRUPT_DATA && field == NULL);
  CHECK(fzg_compress_to_buffer(ctx, in, FZG_F32, dims, 4, &file) == FZG_ERROR_INVALID_ARGUMENT && file == NULL);
  free(out);
  free(expected);
  free(in);
}

/* fzg_decompress_as writes the field fzg_decompress writes when the file holds the field it
 * names, and otherwise nothing, reporting the file's info for the caller's message. */
static void decompress_as(fzg_context* ctx) {
  const size_t dims[3] = {40, 30, 20}, n = 40 * 30 * 20;
  float* in = NULL;
  size_t size = 0;
  unsigned char* file = compressed_smooth_field(ctx, dims, 3, n, &in, &size);
  float* expected = malloc(n * sizeof *expected);
  float* out = malloc(n * sizeof *out);
  CHECK(fzg_decompress(ctx, file, size, expected, n * sizeof *expected) == FZG_OK);
  fzg_file_info info;
  CHECK(fzg_decompress_as(ctx, file, size, FZG_F32, dims, 3, out, &info) == FZG_OK);
  CHECK(memcmp(out, expected, n * sizeof *out) == 0);
  CHECK(info.rank == 3 && info.dims[0] == 40 && info.dims[2] == 20 && info.dtype == FZG_F32 && info.mode == FZG_ABS);
  CHECK(info.original_bytes == n * sizeof(float) && info.absolute_bound == 0.01);
  CHECK(fzg_decompress_as(ctx, file, size, FZG_F32, dims, 3, out, NULL) == FZG_OK);

  /* Another field: refused before anything is written, with the file's info. */
  const size_t swapped[3] = {20, 30, 40}, flat[2] = {1200, 20}, zero[3] = {40, 0, 20};
  const struct { fzg_dtype dtype; const size_t* dims; int rank; } others[] = {
      {FZG_I32, dims, 3}, {FZG_F32, swapped, 3}, {FZG_F32, flat, 2}, {FZG_F32, zero, 3}};
  for (size_t k = 0; k < sizeof others / sizeof others[0]; ++k) {
    memset(out, 0x5a, n * sizeof *out);
    CHECK(fzg_decompress_as(ctx, file, size, others[k].dtype, others[k].dims, others[k].rank, out, &info) ==
          FZG_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(fzg_last_error(ctx), "the file holds 40x30x20 f32 values") != NULL);
    CHECK(info.rank == 3 && info.dims[0] == 40 && info.dims[1] == 30 && info.dtype == FZG_F32);
    int untouched = 1;
    for (size_t i = 0; i < n * sizeof *out; ++i) untouched &= ((unsigned char*)out)[i] == 0x5a;
    CHECK(untouched);
  }
  /* Errors before the metadata is read leave info->rank 0. */
  CHECK(fzg_decompress_as(ctx, file, size / 2, FZG_F32, dims, 3, out, &info) == FZG_ERROR_CORRUPT_DATA && info.rank == 0);
  CHECK(fzg_decompress_as(ctx, file, size, FZG_F32, dims, 4, out, &info) == FZG_ERROR_INVALID_ARGUMENT && info.rank == 0);
  CHECK(fzg_decompress_as(ctx, file, size, FZG_F32, dims, 3, NULL, &info) == FZG_ERROR_INVALID_ARGUMENT && info.rank == 0);
  CHECK(fzg_decompress_as(ctx, file, size, (fzg_dtype)0, dims, 3, out, &info) == FZG_ERROR_INVALID_ARGUMENT);
  free(out);
  free(expected);
  free(file);
  free(in);
}

/* Fill values: land at 1e20 stays exact and out of the range, so a rel bound is a fraction of
 * the sea's range; bad fill values are statuses. */
static void fill_values(fzg_context* ctx) {
  const size_t dims[2] = {120, 90}, n = 120 * 90;
  float* in = smooth_field(n);
  for (size_t i = 0; i < n; ++i)
    if (i % 120 > 80) in[i] = 1e20f;
  const double fills[2] = {1e20, NAN};
  CHECK(fzg_set_bound(ctx, FZG_REL, 1e-3) == FZG_OK);
  CHECK(fzg_set_fill_values(ctx, fills, 2) == FZG_OK);
  double ratio = 0;
  fzg_file_info info;
  const double worst = round_trip(ctx, in, dims, 2, n, &ratio, &info);
  CHECK(worst >= 0 && worst <= info.absolute_bound);  /* 1e20 came back exactly: no error of 1e17 */
  CHECK(info.absolute_bound > 0 && info.absolute_bound < 1);  /* a fraction of ~200, not of 1e20 */
  CHECK(ratio > 2);
  const double repeated[2] = {5, 5};
  CHECK(fzg_set_fill_values(ctx, repeated, 2) == FZG_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(fzg_last_error(ctx), "the same") != NULL);
  CHECK(fzg_set_fill_values(ctx, NULL, 3) == FZG_ERROR_INVALID_ARGUMENT);
  CHECK(fzg_set_fill_values(ctx, NULL, 0) == FZG_OK);  /* none again */
  free(in);
}

static void lossless_bytes(fzg_context* ctx) {
  const size_t dims[1] = {1001};
  unsigned short in[1001], out[1001];
  for (int i = 0; i < 1001; ++i) in[i] = (unsigned short)(i * 37 % 251);
  CHECK(fzg_set_bound(ctx, FZG_LOSSLESS, 0) == FZG_OK);
  const size_t cap = fzg_max_compressed_size(ctx, FZG_U16, dims, 1);
  unsigned char* file = malloc(cap);
  size_t size = 0;
  CHECK(fzg_compress(ctx, in, FZG_U16, dims, 1, file, cap, &size) == FZG_OK);
  CHECK(fzg_decompress(ctx, file, size, out, sizeof out) == FZG_OK);
  CHECK(memcmp(in, out, sizeof in) == 0);
  fzg_file_info info;
  CHECK(fzg_file_info_of(ctx, file, size, &info) == FZG_OK && info.mode == FZG_LOSSLESS && info.dtype == FZG_U16);
  free(file);
}

static void errors_are_statuses(fzg_context* ctx) {
  const size_t dims[3] = {20, 10, 5}, bad_dims[2] = {20, 0};
  float in[1000];
  for (int i = 0; i < 1000; ++i) in[i] = (float)i;
  unsigned char file[16384];
  size_t size = 0;
  CHECK(fzg_set_bound(ctx, FZG_REL, 1e-3) == FZG_OK);
  CHECK(fzg_compress(ctx, in, FZG_F32, dims, 3, file, sizeof file, &size) == FZG_OK);

  CHECK(fzg_set_bound(ctx, FZG_REL, 2.0) == FZG_ERROR_INVALID_ARGUMENT && strlen(fzg_last_error(ctx)) > 0);
  CHECK(fzg_set_bound(ctx, (fzg_mode)9, 1e-3) == FZG_ERROR_INVALID_ARGUMENT);
  CHECK(fzg_set_bound(ctx, FZG_ABS, -1) == FZG_ERROR_INVALID_ARGUMENT);
  CHECK(fzg_set_config_json(ctx, "{\"stages\": 3}") == FZG_ERROR_INVALID_CONFIG);
  CHECK(fzg_set_config_file(ctx, "/nonexistent/config.json") != FZG_OK && strlen(fzg_last_error(ctx)) > 0);
  CHECK(fzg_set_device(ctx, (fzg_device)7) == FZG_ERROR_INVALID_ARGUMENT);
  CHECK(fzg_set_locations(ctx, (fzg_memory)3, FZG_HOST_MEMORY) == FZG_ERROR_INVALID_ARGUMENT);
  if (!fzg_cuda_available()) {
    CHECK(fzg_set_device(ctx, FZG_DEVICE_CUDA) == FZG_ERROR_UNSUPPORTED);
    CHECK(fzg_set_locations(ctx, FZG_DEVICE_MEMORY, FZG_HOST_MEMORY) == FZG_ERROR_UNSUPPORTED);
  }
  size_t other = 0;
  CHECK(fzg_compress(ctx, in, FZG_F32, bad_dims, 2, file, sizeof file, &other) == FZG_ERROR_INVALID_ARGUMENT);
  CHECK(fzg_compress(ctx, in, FZG_F32, dims, 4, file, sizeof file, &other) == FZG_ERROR_INVALID_ARGUMENT);
  CHECK(fzg_compress(ctx, in, (fzg_dtype)0, dims, 3, file, sizeof file, &other) == FZG_ERROR_INVALID_ARGUMENT);
  CHECK(fzg_compress(ctx, NULL, FZG_F32, dims, 3, file, sizeof file, &other) == FZG_ERROR_INVALID_ARGUMENT);
  CHECK(fzg_compress(ctx, in, FZG_F32, dims, 3, file, 10, &other) == FZG_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(fzg_last_error(ctx), "capacity") != NULL);
  CHECK(fzg_max_compressed_size(ctx, FZG_F32, bad_dims, 2) == 0 && strlen(fzg_last_error(ctx)) > 0);

  float out[1000];
  CHECK(fzg_decompress(ctx, file, size, out, 10) == FZG_ERROR_INVALID_ARGUMENT);
  CHECK(fzg_decompress(ctx, file, size / 2, out, sizeof out) == FZG_ERROR_CORRUPT_DATA);
  unsigned char damaged[16384];
  memcpy(damaged, file, size);
  damaged[size - 3] ^= 0x40;
  CHECK(fzg_decompress(ctx, damaged, size, out, sizeof out) == FZG_ERROR_CORRUPT_DATA);
  CHECK(strlen(fzg_last_error(ctx)) > 0);
  fzg_file_info info;
  CHECK(fzg_file_info_of(ctx, "not a file at all", 17, &info) == FZG_ERROR_CORRUPT_DATA);
  CHECK(fzg_decompress(ctx, file, size, out, sizeof out) == FZG_OK && strcmp(fzg_last_error(ctx), "") == 0);

  CHECK(fzg_compress(NULL, in, FZG_F32, dims, 3, file, sizeof file, &other) == FZG_ERROR_INVALID_ARGUMENT);
  CHECK(strcmp(fzg_error_string(FZG_ERROR_CORRUPT_DATA), "corrupt data") == 0);
}

int main(void) {
  fzg_context* ctx = fzg_create();
  CHECK(ctx != NULL);
  CHECK(fzg_set_device(ctx, FZG_DEVICE_CPU) == FZG_OK);
  lossy_round_trips(ctx);
  fill_values(ctx);
  compress_to_buffer(ctx, 0);
  decompress_as(ctx);
  lossless_bytes(ctx);
  errors_are_statuses(ctx);
  if (fzg_cuda_available()) {
    CHECK(fzg_set_device(ctx, FZG_DEVICE_CUDA) == FZG_OK);
    lossy_round_trips(ctx);
    compress_to_buffer(ctx, 1);
    decompress_as(ctx);
    lossless_bytes(ctx);
    printf("C API: CPU and CUDA checked\n");
  } else {
    printf("C API: CPU checked (no CUDA device here)\n");
  }
  fzg_destroy(ctx);
  if (failures) fprintf(stderr, "%d checks failed\n", failures);
  return failures ? 1 : 0;
}
