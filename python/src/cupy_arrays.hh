// cupy arrays read and made in C++: the package's path for them on the GPU.
//
// Why here and not in Python: on a 100 M-value field a call on the GPU takes ~1 ms, and the
// target for Python's overhead is 5 % of it. Reading a cupy array in Python (its dtype,
// shape, address, contiguity, the current stream) and building one around fzg's memory took
// ~20 us of interpreter time per call in a tight loop and 50-70 us between real calls (a cold
// interpreter); the same attribute reads and constructor calls from C++ skip the bytecode.
// Anything this path does not take (not a cupy.ndarray, strided, a dtype or rank fzg refuses)
// goes through the package's general path, which checks and explains.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fzg_python {

namespace py = pybind11;

// A cupy array as the C API takes it.
struct DeviceArray {
  uintptr_t address = 0;
  int dtype = 0;              // fzg_dtype
  std::vector<size_t> dims;   // fzg's order: fastest first
  size_t bytes = 0;
};

class CupyArrays {
 public:
  // cupy's pieces, once cupy has been imported by the caller; null before (then no object
  // can be a cupy array, and nothing is imported here).
  static const CupyArrays* loaded();

  // Fills `out` for a C-contiguous cupy.ndarray of 1-3 non-empty dims and a native dtype fzg
  // takes; false for anything else.
  bool read(py::handle object, DeviceArray& out) const;

  // The stream a call on the GPU runs on: the caller's (None: cupy's current stream, whose
  // null stream is the legacy default stream, handle 1, as its __cuda_array_interface__ says;
  // an int; an object with `ptr` (cupy) or `cuda_stream` (torch)). False for anything else.
  bool stream_of(py::handle stream, uintptr_t& handle) const;

  // A cupy array of `dtype` (fzg_dtype) and C-order `shape` over device memory at `address`
  // on the current device, kept alive by `owner`.
  py::object wrap(py::object owner, uintptr_t address, size_t bytes, int dtype, py::tuple shape) const;

 private:
  explicit CupyArrays(py::handle cupy);

  struct Names {  // the attributes read on every call, as interned strings
    Names();
    py::object dtype, shape, flags, c_contiguous, data, ptr;
  };

  Names names_;

  py::object ndarray_, unowned_memory_, memory_pointer_, current_stream_, current_device_;
  py::object dtypes_[7];  // numpy dtypes by fzg_dtype code (1-6)
};

}  // namespace fzg_python
