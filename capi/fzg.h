/* fzg's C API: error-bounded compression of 1-3D fields into self-describing .fzg files, on
 * the CPU or an NVIDIA GPU, from C and any language with a C FFI (the HDF5 filter, Python).
 *
 *   fzg_context* ctx = fzg_create();
 *   fzg_set_bound(ctx, FZG_REL, 1e-3);
 *   size_t dims[3] = {500, 500, 100};                     // fastest first
 *   size_t cap = fzg_max_compressed_size(ctx, FZG_F32, dims, 3), size = 0;
 *   void* file = malloc(cap);
 *   if (fzg_compress(ctx, data, FZG_F32, dims, 3, file, cap, &size) != FZG_OK)
 *     fprintf(stderr, "%s\n", fzg_last_error(ctx));
 *   fzg_decompress(ctx, file, size, out, out_bytes);      // any thread, any machine
 *   fzg_destroy(ctx);
 *
 * A context holds settings (config, bound, device, stream, where buffers live) and the last
 * error's message; it is not shared between threads at once (make one per thread). Every
 * call returns FZG_OK or an error code, and never aborts the process. With the CUDA device,
 * data and file pointers may be device memory (fzg_set_locations) and work runs on the
 * context's stream; files are the same bytes on every backend.
 */
#ifndef FZG_H
#define FZG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  FZG_OK = 0,
  FZG_ERROR_INVALID_ARGUMENT = 1, /* a parameter out of range, a buffer too small, NULL */
  FZG_ERROR_INVALID_CONFIG = 2,   /* a graph config that does not validate */
  FZG_ERROR_CORRUPT_DATA = 3,     /* a file that is truncated, damaged or not an fzg file */
  FZG_ERROR_UNSUPPORTED = 4,      /* valid, but not in this build (no CUDA, a newer format) */
  FZG_ERROR_IO = 5,               /* the system refused a read (a config file) */
  FZG_ERROR_CUDA = 6,             /* a CUDA runtime call failed */
  FZG_ERROR_OUT_OF_MEMORY = 7
} fzg_status;

typedef enum { FZG_F32 = 1, FZG_F64 = 2, FZG_U8 = 3, FZG_U16 = 4, FZG_U32 = 5, FZG_I32 = 6 } fzg_dtype;

/* ABS: |x - x'| <= bound; REL: bound x the finite value range; PSNR: a target in dB;
 * LOSSLESS: the bytes back exactly (any type). */
typedef enum { FZG_ABS = 1, FZG_REL = 2, FZG_PSNR = 3, FZG_LOSSLESS = 4 } fzg_mode;

typedef enum { FZG_DEVICE_AUTO = 0, FZG_DEVICE_CPU = 1, FZG_DEVICE_CUDA = 2 } fzg_device;

typedef enum { FZG_HOST_MEMORY = 0, FZG_DEVICE_MEMORY = 1 } fzg_memory;

/* What a file holds, read from its header alone. */
typedef struct {
  fzg_dtype dtype;
  int rank;                 /* 1 to 3: the rank given to fzg_compress */
  size_t dims[3];           /* fastest first; 1 past the rank */
  size_t original_bytes;    /* the field's size: what fzg_decompress writes */
  fzg_mode mode;
  double requested_bound;   /* as given at compression (the PSNR target, the rel fraction...) */
  double absolute_bound;    /* what every point honours; 0 for lossless files */
  uint16_t format_version;
} fzg_file_info;

typedef struct fzg_context fzg_context;

/* NULL when out of memory. Defaults: the built-in config (configs/fz.json), rel 1e-3, the
 * AUTO device (CUDA when present), the default stream, host memory. */
fzg_context* fzg_create(void);
void fzg_destroy(fzg_context* ctx);

/* The message of the last call on ctx that failed, "" after a success; valid until the next
 * call on ctx. */
const char* fzg_last_error(const fzg_context* ctx);
/* A short description of a status ("corrupt data"), for calls without a context to ask. */
const char* fzg_error_string(fzg_status status);

/* A graph config: a file (configs/ratio.json) or JSON text; NULL restores the built-in one. */
fzg_status fzg_set_config_file(fzg_context* ctx, const char* path);
fzg_status fzg_set_config_json(fzg_context* ctx, const char* json);
fzg_status fzg_set_bound(fzg_context* ctx, fzg_mode mode, double bound);
/* Fill values marking missing points (1e20 on land, NaN, ...; at most 15, count 0 for none):
 * in lossy modes a point equal to one of them, bit for bit in the field's type (NaN: the
 * canonical quiet NaN), is left out of the value range and the bound and comes back exactly. */
fzg_status fzg_set_fill_values(fzg_context* ctx, const double* values, size_t count);
fzg_status fzg_set_device(fzg_context* ctx, fzg_device device);
/* A cudaStream_t (NULL: the default stream) for work on the GPU. */
fzg_status fzg_set_stream(fzg_context* ctx, void* cuda_stream);
/* Where the caller's buffers live: the field given to fzg_compress (data) and the file it
 * writes, and the file given to fzg_decompress and the field it writes (output). Device
 * memory requires the CUDA device. */
fzg_status fzg_set_locations(fzg_context* ctx, fzg_memory data, fzg_memory file);

/* Whether this build and machine can run on a GPU. */
int fzg_cuda_available(void);

/* The most bytes fzg_compress may write for such a field with ctx's config and mode (0 on
 * a bad argument: see fzg_last_error). */
size_t fzg_max_compressed_size(fzg_context* ctx, fzg_dtype dtype, const size_t* dims, int rank);

/* Compresses dims[0] x ... x dims[rank-1] values (fastest first) of `data` into `file`, of
 * `capacity` bytes (fzg_max_compressed_size always suffices); the size written goes to
 * *file_size. */
fzg_status fzg_compress(fzg_context* ctx, const void* data, fzg_dtype dtype, const size_t* dims, int rank,
                        void* file, size_t capacity, size_t* file_size);

/* A file or field fzg allocated, exactly its size, in the memory fzg_set_locations names. */
typedef struct fzg_buffer fzg_buffer;

/* Like fzg_compress, into a file fzg allocates: no worst-case buffer and no copy of the
 * file. Read it through fzg_buffer_data and fzg_buffer_size; give it back with
 * fzg_buffer_free. Device memory is freed in the order of the stream the context had at
 * compression: that stream must outlive the buffer. */
fzg_status fzg_compress_to_buffer(fzg_context* ctx, const void* data, fzg_dtype dtype, const size_t* dims, int rank,
                                  fzg_buffer** file);
const void* fzg_buffer_data(const fzg_buffer* file);
size_t fzg_buffer_size(const fzg_buffer* file);
void fzg_buffer_free(fzg_buffer* file);

/* Reads a file's header, the file where fzg_set_locations says files live (from device
 * memory only the metadata is copied to the host). */
fzg_status fzg_file_info_of(fzg_context* ctx, const void* file, size_t file_size, fzg_file_info* info);

/* Like fzg_decompress, into a field fzg allocates (exactly its size, where fzg_set_locations
 * says fields go), with the file's info when `info` is not NULL: one call where the caller does
 * not know the field's size beforehand. Freed with fzg_buffer_free, as above. */
fzg_status fzg_decompress_to_buffer(fzg_context* ctx, const void* file, size_t file_size, fzg_buffer** field,
                                    fzg_file_info* info);

/* Decompresses `file` into `output`, of `capacity` bytes (at least info.original_bytes). */
fzg_status fzg_decompress(fzg_context* ctx, const void* file, size_t file_size, void* output, size_t capacity);

/* Like fzg_decompress, into an `output` that holds a field of `dtype` and dims[0] x ... x
 * dims[rank-1] values (fastest first): a file that holds another field fails with
 * FZG_ERROR_INVALID_ARGUMENT before anything is written. `info`, when not NULL, gets the
 * file's info once its metadata is read (on success, and on such a mismatch); info->rank is
 * 0 when it was not read. The metadata is read once, where fzg_file_info_of then
 * fzg_decompress read it twice (from device memory: a copy and a synchronization each). */
fzg_status fzg_decompress_as(fzg_context* ctx, const void* file, size_t file_size, fzg_dtype dtype,
                             const size_t* dims, int rank, void* output, fzg_file_info* info);

#ifdef __cplusplus
}
#endif

#endif /* FZG_H */
