// fzg._fzg: the C API (capi/fzg.h) for the Python package, one method per C call. Buffers
// arrive as addresses (integers): the package (fzg/_arrays.py) turns numpy, cupy,
// __cuda_array_interface__ and DLPack arrays into an address, a memory kind and a stream.
// The one exception is the cupy path (cupy_arrays.hh): a plain cupy array in, a cupy array
// out, in one call, the package's time per call on the GPU. Compression and decompression
// run without the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "capi/fzg.h"
#include "cupy_arrays.hh"

namespace py = pybind11;

namespace {

using fzg_python::CupyArrays;
using fzg_python::DeviceArray;

// A failed C call: its status and the context's one-line message, raised in Python as
// fzg.FzgError (the class the package hands over through set_error_class).
struct StatusError {
  fzg_status status;
  std::string message;
};

py::object& error_class() {
  static py::object* cls = new py::object(py::reinterpret_borrow<py::object>(PyExc_RuntimeError));
  return *cls;
}

const void* address(uintptr_t value) { return reinterpret_cast<const void*>(value); }

// A file or field fzg allocated (fzg_compress_to_buffer, fzg_decompress_to_buffer), freed with
// the last Python reference: the package wraps device memory in a cupy array (attaching the
// stream it must not outlive) and host memory in a numpy array.
class OwnedFile {
 public:
  OwnedFile(fzg_buffer* file, bool on_device) : file_(file), on_device_(on_device) {}
  ~OwnedFile() { fzg_buffer_free(file_); }
  OwnedFile(const OwnedFile&) = delete;
  OwnedFile& operator=(const OwnedFile&) = delete;
  uintptr_t address() const { return reinterpret_cast<uintptr_t>(fzg_buffer_data(file_)); }
  size_t size() const { return fzg_buffer_size(file_); }
  // Host memory is seen through the buffer protocol (numpy.frombuffer), device memory never.
  py::buffer_info buffer() const {
    if (on_device_) throw py::buffer_error("device memory has no buffer protocol; wrap its address");
    return py::buffer_info(const_cast<void*>(fzg_buffer_data(file_)), 1, "B", py::ssize_t(size()), false);
  }

 private:
  fzg_buffer* file_;
  bool on_device_;
};

py::dict info_dict(const fzg_file_info& info) {
  py::dict out;
  out["dtype_code"] = int(info.dtype);
  out["dims"] = std::vector<size_t>(info.dims, info.dims + info.rank);
  out["original_bytes"] = info.original_bytes;
  out["mode_code"] = int(info.mode);
  out["requested_bound"] = info.requested_bound;
  out["absolute_bound"] = info.absolute_bound;
  out["format_version"] = int(info.format_version);
  return out;
}

class Context {
 public:
  Context() : ctx_(fzg_create()) {
    if (!ctx_) throw std::bad_alloc();
  }
  ~Context() { fzg_destroy(ctx_); }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  void set_config_file(const std::string& path) { check(fzg_set_config_file(ctx_, path.c_str())); }
  void set_config_json(const std::string& json) { check(fzg_set_config_json(ctx_, json.c_str())); }
  void set_default_config() { check(fzg_set_config_file(ctx_, nullptr)); }
  void set_bound(int mode, double bound) { check(fzg_set_bound(ctx_, fzg_mode(mode), bound)); }
  void set_fill_values(const std::vector<double>& values) {
    check(fzg_set_fill_values(ctx_, values.data(), values.size()));
  }
  void set_device(int device) { check(fzg_set_device(ctx_, fzg_device(device))); }
  void set_stream(uintptr_t stream) { check(fzg_set_stream(ctx_, reinterpret_cast<void*>(stream))); }
  void set_locations(int data, int file) { check(fzg_set_locations(ctx_, fzg_memory(data), fzg_memory(file))); }
  // The settings of one call in one crossing from Python (each crossing costs the package's
  // time per call on the GPU more than its C work): where it runs, on which stream, where
  // field and file live; and, for compress, the bound and the fill values.
  void set_placement(int device, uintptr_t stream, int data, int file) {
    set_device(device);
    set_stream(stream);
    set_locations(data, file);
  }
  void set_target(int mode, double bound, const std::vector<double>& fill_values) {
    set_bound(mode, bound);
    set_fill_values(fill_values);
  }

  size_t max_compressed_size(int dtype, const std::vector<size_t>& dims) {
    const size_t size = fzg_max_compressed_size(ctx_, fzg_dtype(dtype), dims.data(), int(dims.size()));
    if (size == 0) check(FZG_ERROR_INVALID_ARGUMENT);
    return size;
  }

  // Into caller memory (host or device, as set_locations says); returns the bytes written.
  size_t compress(uintptr_t data, int dtype, const std::vector<size_t>& dims, uintptr_t file, size_t capacity) {
    size_t written = 0;
    fzg_status status;
    {
      py::gil_scoped_release unlocked;
      status = fzg_compress(ctx_, address(data), fzg_dtype(dtype), dims.data(), int(dims.size()),
                            const_cast<void*>(address(file)), capacity, &written);
    }
    check(status);
    return written;
  }

  // Into a file fzg allocates where set_locations says: exactly its size, no copy.
  // (The package asks for it with device memory only.)
  std::unique_ptr<OwnedFile> compress_to_buffer(uintptr_t data, int dtype, const std::vector<size_t>& dims) {
    fzg_buffer* file = nullptr;
    fzg_status status;
    {
      py::gil_scoped_release unlocked;
      status = fzg_compress_to_buffer(ctx_, address(data), fzg_dtype(dtype), dims.data(), int(dims.size()), &file);
    }
    check(status);
    return std::make_unique<OwnedFile>(file, true);
  }

  // A host field into a bytes object: written in place, then shrunk to the file's size.
  py::bytes compress_to_bytes(uintptr_t data, int dtype, const std::vector<size_t>& dims) {
    const size_t capacity = max_compressed_size(dtype, dims);
    PyObject* bytes = PyBytes_FromStringAndSize(nullptr, Py_ssize_t(capacity));
    if (!bytes) throw py::error_already_set();
    py::object owner = py::reinterpret_steal<py::object>(bytes);
    const size_t written =
        compress(data, dtype, dims, reinterpret_cast<uintptr_t>(PyBytes_AS_STRING(bytes)), capacity);
    owner.release();
    if (_PyBytes_Resize(&bytes, Py_ssize_t(written)) != 0) throw py::error_already_set();
    return py::reinterpret_steal<py::bytes>(bytes);
  }

  py::dict info(uintptr_t file, size_t size) {
    fzg_file_info info;
    check(fzg_file_info_of(ctx_, address(file), size, &info));
    return info_dict(info);
  }

  // Into a field fzg allocates where set_locations says (on_device: device memory): one C
  // call, the file's metadata read once. Returns (field, dtype code, C-order shape), what the
  // package's array needs and no more (building the info dict cost microseconds per call).
  py::tuple decompress_to_buffer(uintptr_t file, size_t size, bool on_device) {
    fzg_buffer* field = nullptr;
    fzg_file_info info;
    fzg_status status;
    {
      py::gil_scoped_release unlocked;
      status = fzg_decompress_to_buffer(ctx_, address(file), size, &field, &info);
    }
    check(status);
    py::tuple shape(info.rank);
    for (int axis = 0; axis < info.rank; ++axis) shape[size_t(axis)] = info.dims[info.rank - 1 - axis];
    return py::make_tuple(std::make_unique<OwnedFile>(field, on_device), int(info.dtype), std::move(shape));
  }

  // Into caller memory that holds a field of `dtype` and `dims` (fastest first), the file's
  // metadata read once: None once written; the file's info when it holds another field
  // (nothing written), for the package's own message. Other failures raise.
  py::object decompress_as(uintptr_t file, size_t size, int dtype, const std::vector<size_t>& dims, uintptr_t output) {
    fzg_file_info info;
    fzg_status status;
    {
      py::gil_scoped_release unlocked;
      status = fzg_decompress_as(ctx_, address(file), size, fzg_dtype(dtype), dims.data(), int(dims.size()),
                                 const_cast<void*>(address(output)), &info);
    }
    if (status == FZG_OK) return py::none();
    const bool other_field =
        info.rank != 0 && (int(info.dtype) != dtype || size_t(info.rank) != dims.size() ||
                           !std::equal(dims.begin(), dims.end(), info.dims));
    if (status == FZG_ERROR_INVALID_ARGUMENT && other_field) return info_dict(info);
    check(status);
    return py::none();
  }

  // The cupy path: a C-contiguous cupy array of a dtype `mode` takes, compressed on the GPU on
  // `stream` (as the package's stream=) into a cupy uint8 array of the file. None when the
  // array or stream is anything else: the package's general path takes those.
  py::object compress_cupy(py::handle array, int mode, double bound, const std::vector<double>& fill_values,
                           py::object stream) {
    const CupyArrays* cupy = CupyArrays::loaded();
    DeviceArray field;
    uintptr_t stream_handle = 0;
    if (!cupy || !cupy->read(array, field) || !cupy->stream_of(stream, stream_handle)) return py::none();
    const bool lossy = mode != FZG_LOSSLESS;
    if (lossy && field.dtype != FZG_F32 && field.dtype != FZG_F64) return py::none();
    set_target(mode, bound, fill_values);
    set_placement(FZG_DEVICE_CUDA, stream_handle, FZG_DEVICE_MEMORY, FZG_DEVICE_MEMORY);
    std::unique_ptr<OwnedFile> owned = compress_to_buffer(field.address, field.dtype, field.dims);
    py::tuple shape = py::make_tuple(owned->size());
    return on_stream(cupy, py::cast(std::move(owned)), FZG_U8, std::move(shape), stream);
  }

  // The cupy path of decompress: a C-contiguous cupy uint8 file into a new cupy array of the
  // field. None for anything else.
  py::object decompress_cupy(py::handle file, py::object stream) {
    const CupyArrays* cupy = CupyArrays::loaded();
    DeviceArray bytes;
    uintptr_t stream_handle = 0;
    if (!cupy || !cupy->read(file, bytes) || bytes.dtype != FZG_U8 || !cupy->stream_of(stream, stream_handle))
      return py::none();
    set_placement(FZG_DEVICE_CUDA, stream_handle, FZG_DEVICE_MEMORY, FZG_DEVICE_MEMORY);
    py::tuple field = decompress_to_buffer(bytes.address, bytes.bytes, true);
    return on_stream(cupy, field[0], field[1].cast<int>(), field[2], stream);
  }

  // The cupy path of decompress(out=): into a C-contiguous cupy array. None for anything else,
  // and when `out` is not the file's array (the general path then says why).
  py::object decompress_cupy_into(py::handle file, py::handle out, py::object stream) {
    const CupyArrays* cupy = CupyArrays::loaded();
    DeviceArray bytes, field;
    uintptr_t stream_handle = 0;
    if (!cupy || !cupy->read(file, bytes) || bytes.dtype != FZG_U8 || !cupy->read(out, field) ||
        !cupy->stream_of(stream, stream_handle))
      return py::none();
    set_placement(FZG_DEVICE_CUDA, stream_handle, FZG_DEVICE_MEMORY, FZG_DEVICE_MEMORY);
    if (!decompress_as(bytes.address, bytes.bytes, field.dtype, field.dims, field.address).is_none())
      return py::none();
    return py::reinterpret_borrow<py::object>(out);
  }

  void decompress(uintptr_t file, size_t size, uintptr_t output, size_t capacity) {
    fzg_status status;
    {
      py::gil_scoped_release unlocked;
      status = fzg_decompress(ctx_, address(file), size, const_cast<void*>(address(output)), capacity);
    }
    check(status);
  }

 private:
  void check(fzg_status status) const {
    if (status != FZG_OK) {
      const std::string message = fzg_last_error(ctx_);
      throw StatusError{status, message.empty() ? fzg_error_string(status) : message};
    }
  }

  // fzg's memory as a cupy array; a caller's stream object lives as long as it (the memory is
  // freed in that stream's order).
  static py::object on_stream(const CupyArrays* cupy, py::object owned, int dtype, py::tuple shape,
                              const py::object& stream) {
    if (!stream.is_none()) owned.attr("stream") = stream;
    const auto& memory = owned.cast<const OwnedFile&>();
    return cupy->wrap(owned, memory.address(), memory.size(), dtype, std::move(shape));
  }

  fzg_context* ctx_;
};

}  // namespace

PYBIND11_MODULE(_fzg, m) {
  m.doc() = "fzg's C API, called with addresses; use the fzg package's compress, decompress and info";
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const StatusError& e) {
      py::object error = error_class()(e.message, fzg_error_string(e.status));
      PyErr_SetObject(error.get_type().ptr(), error.ptr());
    }
  });
  m.def("set_error_class", [](py::object cls) { error_class() = std::move(cls); },
        "The exception class raised for a failed call: cls(message, status_name)");
  m.def("cuda_available", [] { return fzg_cuda_available() != 0; });
#ifdef FZG_HDF5_VERSION
  m.attr("hdf5_version") = FZG_HDF5_VERSION;  // the HDF5 the bundled filter plugin links
#else
  m.attr("hdf5_version") = py::none();
#endif
  py::class_<OwnedFile>(m, "OwnedFile", py::dynamic_attr(), py::buffer_protocol())
      .def_buffer(&OwnedFile::buffer)
      .def_property_readonly("address", &OwnedFile::address)
      .def_property_readonly("size", &OwnedFile::size);
  py::class_<Context>(m, "Context")
      .def(py::init<>())
      .def("set_config_file", &Context::set_config_file)
      .def("set_config_json", &Context::set_config_json)
      .def("set_default_config", &Context::set_default_config)
      .def("set_bound", &Context::set_bound)
      .def("set_fill_values", &Context::set_fill_values)
      .def("set_device", &Context::set_device)
      .def("set_stream", &Context::set_stream)
      .def("set_locations", &Context::set_locations)
      .def("set_placement", &Context::set_placement)
      .def("set_target", &Context::set_target)
      .def("max_compressed_size", &Context::max_compressed_size)
      .def("compress", &Context::compress)
      .def("compress_to_bytes", &Context::compress_to_bytes)
      .def("compress_to_buffer", &Context::compress_to_buffer)
      .def("info", &Context::info)
      .def("decompress", &Context::decompress)
      .def("decompress_as", &Context::decompress_as)
      .def("decompress_to_buffer", &Context::decompress_to_buffer)
      .def("compress_cupy", &Context::compress_cupy)
      .def("decompress_cupy", &Context::decompress_cupy)
      .def("decompress_cupy_into", &Context::decompress_cupy_into);
}
