#include "cupy_arrays.hh"

#include <Python.h>

namespace fzg_python {
namespace {

py::object attribute(py::handle object, py::handle name) {
  PyObject* value = PyObject_GetAttr(object.ptr(), name.ptr());
  if (!value) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(value);
}

py::object attribute(py::handle object, const char* name) { return attribute(object, py::str(name)); }

// A name made once: the attributes read on every call look no string up.
py::object interned(const char* name) { return py::reinterpret_steal<py::object>(PyUnicode_InternFromString(name)); }

uintptr_t as_address(py::handle value) {
  const unsigned long long v = PyLong_AsUnsignedLongLong(value.ptr());
  if (PyErr_Occurred()) throw py::error_already_set();
  return uintptr_t(v);
}

}  // namespace

CupyArrays::Names::Names()
    : dtype(interned("dtype")), shape(interned("shape")), flags(interned("flags")),
      c_contiguous(interned("c_contiguous")), data(interned("data")), ptr(interned("ptr")) {}

CupyArrays::CupyArrays(py::handle cupy) {
  ndarray_ = attribute(cupy, "ndarray");
  py::object cuda = attribute(cupy, "cuda");
  unowned_memory_ = attribute(cuda, "UnownedMemory");
  memory_pointer_ = attribute(cuda, "MemoryPointer");
  current_stream_ = attribute(cuda, "get_current_stream");
  current_device_ = attribute(attribute(cuda, "runtime"), "getDevice");
  py::object dtype = py::module_::import("numpy").attr("dtype");
  const char* names[7] = {nullptr, "float32", "float64", "uint8", "uint16", "uint32", "int32"};
  for (int code = 1; code < 7; ++code) dtypes_[code] = dtype(names[code]);
}

const CupyArrays* CupyArrays::loaded() {
  // Leaked on purpose: Python objects must not be released after the interpreter is gone.
  static const CupyArrays* arrays = nullptr;
  if (!arrays) {
    PyObject* cupy = PyImport_GetModule(py::str("cupy").ptr());  // imported already, or null
    if (!cupy) {
      if (PyErr_Occurred()) throw py::error_already_set();
      return nullptr;
    }
    arrays = new CupyArrays(py::reinterpret_steal<py::object>(cupy));
  }
  return arrays;
}

bool CupyArrays::read(py::handle object, DeviceArray& out) const {
  if (Py_TYPE(object.ptr()) != reinterpret_cast<PyTypeObject*>(ndarray_.ptr())) return false;
  // Native builtin dtypes are numpy singletons: identity decides (a swapped one never matches).
  const py::object dtype = attribute(object, names_.dtype);
  out.dtype = 0;
  for (int code = 1; code < 7; ++code)
    if (dtype.ptr() == dtypes_[code].ptr()) out.dtype = code;
  if (out.dtype == 0) return false;
  const py::object shape = attribute(object, names_.shape);
  const Py_ssize_t rank = PyTuple_Size(shape.ptr());
  if (rank < 1 || rank > 3) return false;
  out.dims.assign(size_t(rank), 0);
  size_t count = 1;
  for (Py_ssize_t axis = 0; axis < rank; ++axis) {
    const size_t extent = PyLong_AsSize_t(PyTuple_GET_ITEM(shape.ptr(), axis));
    if (PyErr_Occurred()) throw py::error_already_set();
    if (extent == 0) return false;
    out.dims[size_t(rank - 1 - axis)] = extent;
    count *= extent;
  }
  if (!attribute(attribute(object, names_.flags), names_.c_contiguous).cast<bool>()) return false;
  out.address = as_address(attribute(attribute(object, names_.data), names_.ptr));
  static constexpr size_t item_bytes[7] = {0, 4, 8, 1, 2, 4, 4};
  out.bytes = count * item_bytes[out.dtype];
  return true;
}

bool CupyArrays::stream_of(py::handle stream, uintptr_t& handle) const {
  if (stream.is_none()) {
    handle = as_address(attribute(current_stream_(), names_.ptr));
    if (handle == 0) handle = 1;  // cudaStreamLegacy
    return true;
  }
  if (PyLong_Check(stream.ptr())) {
    handle = as_address(stream);
    return true;
  }
  for (const char* name : {"ptr", "cuda_stream"}) {
    if (PyObject_HasAttrString(stream.ptr(), name)) {
      handle = as_address(attribute(stream, name));
      return true;
    }
  }
  return false;
}

py::object CupyArrays::wrap(py::object owner, uintptr_t address, size_t bytes, int dtype, py::tuple shape) const {
  // fzg allocated it on this thread's current device: naming the device spares cupy a
  // context check and a cudaPointerGetAttributes.
  py::object memory = unowned_memory_(address, bytes, owner, current_device_());
  return ndarray_(shape, dtypes_[dtype], memory_pointer_(memory, 0));
}

}  // namespace fzg_python
