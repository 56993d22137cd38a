// Inputs that carry their own type and shape: NumPy's .npy files and HDF5 datasets (which
// NetCDF-4 files are), named "file.h5:/group/dataset". The CLI reads them wherever it reads a
// raw field; -l, when given, must agree with the file.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/fzg.hh"

namespace fzg::cli {

struct DescribedInput {
  Buffer bytes;                          // the values, host memory, fastest dimension first
  DType dtype = DType::f32;
  std::vector<uint64_t> dims;            // fastest first
  std::vector<std::string> fill_values;  // "_FillValue -999": what the file says marks missing points
  std::vector<double> missing_values;    // those values (each once)
};

bool is_npy(const std::string& path);
// "file.h5:/dataset": the part before ":/" is an existing file (a path that itself exists is
// a raw file, whatever its name).
bool is_hdf5_dataset(const std::string& spec);

DescribedInput read_npy(const std::string& path);
// Fails clearly (unsupported) in a build without HDF5.
DescribedInput read_hdf5_dataset(const std::string& spec);

}  // namespace fzg::cli
