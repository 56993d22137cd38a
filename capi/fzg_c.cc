// The C API (fzg.h) over the C++ one (core/fzg.hh): settings in a context, every exception
// turned into a status and the context's message, C's integers checked before they become
// enums.
#include "capi/fzg.h"

#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "core/fzg.hh"

struct fzg_context {
  fzg::Graph graph = fzg::Graph::default_fz();
  fzg::ErrorBound bound{fzg::ErrorMode::rel, 1e-3};
  std::vector<double> fill_values;
  fzg_device device = FZG_DEVICE_AUTO;
  cudaStream_t stream = nullptr;
  fzg::Location data_where = fzg::Location::host, file_where = fzg::Location::host;
  std::string error;
};

struct fzg_buffer {
  fzg::Buffer file;
};

namespace {

using namespace fzg;

fzg_status status_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument: return FZG_ERROR_INVALID_ARGUMENT;
    case ErrorCode::invalid_config: return FZG_ERROR_INVALID_CONFIG;
    case ErrorCode::corrupt_data: return FZG_ERROR_CORRUPT_DATA;
    case ErrorCode::unsupported: return FZG_ERROR_UNSUPPORTED;
    case ErrorCode::io: return FZG_ERROR_IO;
    case ErrorCode::cuda: return FZG_ERROR_CUDA;
  }
  return FZG_ERROR_INVALID_ARGUMENT;
}

// Runs `work` for a call on ctx: FZG_OK and no message, or the error's status and message.
template <typename Work>
fzg_status guarded(fzg_context* ctx, Work work) {
  if (!ctx) return FZG_ERROR_INVALID_ARGUMENT;
  try {
    work();
    ctx->error.clear();
    return FZG_OK;
  } catch (const Error& e) {
    ctx->error = e.what();
    return status_of(e.code());
  } catch (const std::bad_alloc&) {
    ctx->error = "out of memory";
    return FZG_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    ctx->error = e.what();
    return FZG_ERROR_INVALID_ARGUMENT;
  }
}

void require(bool ok, const std::string& what) {
  if (!ok) fail(ErrorCode::invalid_argument, what);
}

DType dtype_of(fzg_dtype d) {
  require(d >= FZG_F32 && d <= FZG_I32, "unknown dtype " + std::to_string(int(d)));
  return DType(d);
}

Dims dims_of(const size_t* dims, int rank) {
  require(dims != nullptr, "dims is NULL");
  require(rank >= 1 && rank <= 3, "rank " + std::to_string(rank) + " is not 1, 2 or 3");
  Dims made = Dims::make(std::vector<uint64_t>(dims, dims + rank));
  // The caller's rank, not the extents' own: a 1 x 500 field stays 2D in the file (which
  // records a rank at or above the extents'), so a shape with unit axes comes back as given.
  made.rank = rank;
  return made;
}

Device device_of(const fzg_context* ctx) {
  return ctx->device == FZG_DEVICE_AUTO ? default_device() : ctx->device == FZG_DEVICE_CUDA ? Device::cuda : Device::cpu;
}

Location location_of(fzg_memory m) {
  require(m == FZG_HOST_MEMORY || m == FZG_DEVICE_MEMORY, "unknown memory kind " + std::to_string(int(m)));
  return m == FZG_DEVICE_MEMORY ? Location::device : Location::host;
}

// The file of ctx's settings for a field, in memory fzg allocated.
Buffer compress_with(const fzg_context* ctx, const void* data, fzg_dtype dtype, const size_t* dims, int rank) {
  const FieldRef field{data, ctx->data_where, dtype_of(dtype), dims_of(dims, rank)};
  CompressOptions options;
  options.bound = ctx->bound;
  options.device = device_of(ctx);
  options.stream = ctx->stream;
  options.output = ctx->file_where;
  options.fill_values = ctx->fill_values;
  return compress(ctx->graph, field, options);
}

DecompressOptions options_of(const fzg_context* ctx) {
  DecompressOptions options;
  options.device = device_of(ctx);
  options.stream = ctx->stream;
  options.output = ctx->data_where;
  return options;
}

fzg_file_info info_of(const Header& h) {
  fzg_file_info info{};
  info.dtype = fzg_dtype(h.dtype);
  info.rank = h.dims.rank;
  info.dims[0] = h.dims.x, info.dims[1] = h.dims.y, info.dims[2] = h.dims.z;
  info.original_bytes = h.dims.count() * dtype_size(h.dtype);
  info.mode = fzg_mode(h.mode);
  info.requested_bound = h.requested_bound;
  info.absolute_bound = h.quant.error_bound;
  info.format_version = h.version;
  return info;
}

}  // namespace

extern "C" {

fzg_context* fzg_create(void) {
  try {
    return new fzg_context;
  } catch (...) {
    return nullptr;
  }
}

void fzg_destroy(fzg_context* ctx) { delete ctx; }

const char* fzg_last_error(const fzg_context* ctx) { return ctx ? ctx->error.c_str() : "no context (NULL)"; }

const char* fzg_error_string(fzg_status status) {
  switch (status) {
    case FZG_OK: return "ok";
    case FZG_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case FZG_ERROR_INVALID_CONFIG: return "invalid config";
    case FZG_ERROR_CORRUPT_DATA: return "corrupt data";
    case FZG_ERROR_UNSUPPORTED: return "unsupported";
    case FZG_ERROR_IO: return "input/output error";
    case FZG_ERROR_CUDA: return "CUDA error";
    case FZG_ERROR_OUT_OF_MEMORY: return "out of memory";
  }
  return "unknown status";
}

fzg_status fzg_set_config_file(fzg_context* ctx, const char* path) {
  return guarded(ctx, [&] { ctx->graph = path ? Graph::from_file(path) : Graph::default_fz(); });
}

fzg_status fzg_set_config_json(fzg_context* ctx, const char* json) {
  return guarded(ctx, [&] { ctx->graph = json ? Graph::from_text(json) : Graph::default_fz(); });
}

fzg_status fzg_set_bound(fzg_context* ctx, fzg_mode mode, double bound) {
  return guarded(ctx, [&] {
    require(mode >= FZG_ABS && mode <= FZG_LOSSLESS, "unknown mode " + std::to_string(int(mode)));
    if (mode != FZG_LOSSLESS) require(bound > 0 && bound < 1e300, "the bound must be a positive finite number");
    if (mode == FZG_REL) require(bound < 1, "a rel bound is a fraction of the value range, below 1");
    ctx->bound = {ErrorMode(mode), mode == FZG_LOSSLESS ? 0 : bound};
  });
}

fzg_status fzg_set_fill_values(fzg_context* ctx, const double* values, size_t count) {
  return guarded(ctx, [&] {
    require(values || count == 0, "no fill values given (values is NULL)");
    std::vector<double> fills(values, values + count);
    missing_values_of(fills, DType::f64);  // at most 15, none repeated
    ctx->fill_values = std::move(fills);
  });
}

fzg_status fzg_set_device(fzg_context* ctx, fzg_device device) {
  return guarded(ctx, [&] {
    require(device >= FZG_DEVICE_AUTO && device <= FZG_DEVICE_CUDA, "unknown device " + std::to_string(int(device)));
    if (device == FZG_DEVICE_CUDA && default_device() != Device::cuda)
      fail(ErrorCode::unsupported, "no CUDA device (or this fzg was built without CUDA)");
    ctx->device = device;
  });
}

fzg_status fzg_set_stream(fzg_context* ctx, void* cuda_stream) {
  return guarded(ctx, [&] { ctx->stream = static_cast<cudaStream_t>(cuda_stream); });
}

fzg_status fzg_set_locations(fzg_context* ctx, fzg_memory data, fzg_memory file) {
  return guarded(ctx, [&] {
    const Location d = location_of(data), f = location_of(file);
    if ((d == Location::device || f == Location::device) && default_device() != Device::cuda)
      fail(ErrorCode::unsupported, "device memory needs a CUDA device (or this fzg was built without CUDA)");
    ctx->data_where = d, ctx->file_where = f;
  });
}

int fzg_cuda_available(void) {
  try {
    return default_device() == Device::cuda;
  } catch (...) {
    return 0;
  }
}

size_t fzg_max_compressed_size(fzg_context* ctx, fzg_dtype dtype, const size_t* dims, int rank) {
  size_t size = 0;
  guarded(ctx, [&] {
    const Graph graph = ctx->graph.with_fill_values_for(ctx->fill_values, ctx->bound.mode);  // with its mask
    size = max_compressed_size(graph, dtype_of(dtype), dims_of(dims, rank), ctx->bound.mode);
  });
  return size;
}

fzg_status fzg_compress(fzg_context* ctx, const void* data, fzg_dtype dtype, const size_t* dims, int rank, void* file,
                        size_t capacity, size_t* file_size) {
  return guarded(ctx, [&] {
    require(data && file && file_size, "data, file and file_size must not be NULL");
    const Buffer written = compress_with(ctx, data, dtype, dims, rank);
    require(written.size() <= capacity, "the file needs " + std::to_string(written.size()) + " bytes; capacity is " +
                                            std::to_string(capacity) + " (fzg_max_compressed_size gives enough)");
    copy_bytes(file, ctx->file_where, written.data(), written.location(), written.size(), ctx->stream);
    *file_size = written.size();
  });
}

fzg_status fzg_compress_to_buffer(fzg_context* ctx, const void* data, fzg_dtype dtype, const size_t* dims, int rank,
                                  fzg_buffer** file) {
  return guarded(ctx, [&] {
    require(data && file, "data and file must not be NULL");
    *file = nullptr;
    *file = new fzg_buffer{compress_with(ctx, data, dtype, dims, rank)};
  });
}

const void* fzg_buffer_data(const fzg_buffer* file) { return file ? file->file.data() : nullptr; }

size_t fzg_buffer_size(const fzg_buffer* file) { return file ? file->file.size() : 0; }

void fzg_buffer_free(fzg_buffer* file) { delete file; }

fzg_status fzg_file_info_of(fzg_context* ctx, const void* file, size_t file_size, fzg_file_info* info) {
  return guarded(ctx, [&] {
    require(file && info, "file and info must not be NULL");
    *info = info_of(inspect(Buffer::view(const_cast<void*>(file), file_size, ctx->file_where), ctx->stream).header);
  });
}

fzg_status fzg_decompress_to_buffer(fzg_context* ctx, const void* file, size_t file_size, fzg_buffer** field,
                                    fzg_file_info* info) {
  return guarded(ctx, [&] {
    require(file && field, "file and field must not be NULL");
    *field = nullptr;
    Decompressed out = decompress(Buffer::view(const_cast<void*>(file), file_size, ctx->file_where), options_of(ctx));
    if (info) *info = info_of(out.header);
    *field = new fzg_buffer{std::move(out.data)};
  });
}

fzg_status fzg_decompress(fzg_context* ctx, const void* file, size_t file_size, void* output, size_t capacity) {
  return guarded(ctx, [&] {
    require(file && output, "file and output must not be NULL");
    decompress_into(Buffer::view(const_cast<void*>(file), file_size, ctx->file_where), output, capacity,
                    options_of(ctx));
  });
}

fzg_status fzg_decompress_as(fzg_context* ctx, const void* file, size_t file_size, fzg_dtype dtype,
                             const size_t* dims, int rank, void* output, fzg_file_info* info) {
  if (info) *info = fzg_file_info{};
  return guarded(ctx, [&] {
    require(file && output && dims, "file, output and dims must not be NULL");
    require(rank >= 1 && rank <= 3, "rank " + std::to_string(rank) + " is not 1, 2 or 3");
    const DType expected = dtype_of(dtype);
    // The caller's extents as given (a zero or an overflowing product simply never matches).
    uint64_t extents[3] = {1, 1, 1}, count = 1;
    for (int i = 0; i < rank; ++i) extents[i] = dims[i], count *= dims[i];
    DecompressOptions options = options_of(ctx);
    options.check_header = [&](const Header& h) {
      if (info) *info = info_of(h);
      const bool same = h.dtype == expected && h.dims.rank == rank && h.dims.x == extents[0] &&
                        h.dims.y == extents[1] && h.dims.z == extents[2];
      if (!same)
        fail(ErrorCode::invalid_argument, "the file holds " + h.dims.to_string() + " " + to_string(h.dtype) +
                                              " values; the output is for " +
                                              Dims{extents[0], extents[1], extents[2], rank}.to_string() + " " +
                                              to_string(expected) + " values");
    };
    decompress_into(Buffer::view(const_cast<void*>(file), file_size, ctx->file_where), output,
                    count * dtype_size(expected), options);
  });
}

}  // extern "C"
