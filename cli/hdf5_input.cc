// HDF5 datasets as fields ("file.h5:/group/dataset"; NetCDF-4 files are HDF5 files): type and
// shape from the dataset, values converted to the machine's order by HDF5 itself, and the
// _FillValue / missing_value attributes that CF conventions use for missing points. Built
// when CMake finds HDF5.
#include <hdf5.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "cli/described_input.hh"

namespace fzg::cli {

namespace {

// An HDF5 handle closed on every path out.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

struct Kind {
  DType dtype;
  hid_t memory_type;
};

Kind kind_of(hid_t type, const std::string& spec) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  if (cls == H5T_FLOAT && size == 4) return {DType::f32, H5T_NATIVE_FLOAT};
  if (cls == H5T_FLOAT && size == 8) return {DType::f64, H5T_NATIVE_DOUBLE};
  if (cls == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
    if (!is_signed && size == 1) return {DType::u8, H5T_NATIVE_UINT8};
    if (!is_signed && size == 2) return {DType::u16, H5T_NATIVE_UINT16};
    if (!is_signed && size == 4) return {DType::u32, H5T_NATIVE_UINT32};
    if (is_signed && size == 4) return {DType::i32, H5T_NATIVE_INT32};
  }
  fail(ErrorCode::unsupported, "the dataset '" + spec + "' holds values of a type fzg does not read (" +
                                   std::to_string(size) + "-byte " + (cls == H5T_FLOAT ? "floats" : "non-floats") +
                                   "); fzg reads f32, f64, u8, u16, u32 and i32");
}

// "_FillValue -999" when the dataset has the attribute and it is one number.
void note_fill_value(hid_t dataset, const char* name, std::vector<std::string>& notes, std::vector<double>& values) {
  if (H5Aexists(dataset, name) <= 0) return;
  Handle attribute(H5Aopen(dataset, name, H5P_DEFAULT), H5Aclose);
  if (!attribute.ok()) return;
  Handle space(H5Aget_space(attribute.get()), H5Sclose);
  if (!space.ok() || H5Sget_simple_extent_npoints(space.get()) != 1) return;
  Handle type(H5Aget_type(attribute.get()), H5Tclose);
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls != H5T_FLOAT && cls != H5T_INTEGER) return;
  double value = 0;
  if (H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, &value) < 0) return;
  char text[64];
  std::snprintf(text, sizeof text, "%s %.9g", name, value);
  notes.push_back(text);
  if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
}

}  // namespace

DescribedInput read_hdf5_dataset(const std::string& spec) {
  const size_t at = spec.find(":/");
  const std::string file_name = spec.substr(0, at), dataset_name = spec.substr(at + 1);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // fzg says what failed, in one line
  if (H5Fis_hdf5(file_name.c_str()) <= 0)
    fail(ErrorCode::invalid_argument, "'" + file_name + "' is not an HDF5 (or NetCDF-4) file");
  Handle file(H5Fopen(file_name.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) fail(ErrorCode::io, "cannot open the HDF5 file '" + file_name + "'");
  Handle dataset(H5Dopen2(file.get(), dataset_name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dataset.ok()) fail(ErrorCode::invalid_argument, "'" + file_name + "' has no dataset '" + dataset_name + "'");
  Handle type(H5Dget_type(dataset.get()), H5Tclose);
  const Kind kind = kind_of(type.get(), spec);
  Handle space(H5Dget_space(dataset.get()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0 || rank > 3)
    fail(ErrorCode::invalid_argument, "the dataset '" + spec + "' has " + std::to_string(rank) +
                                          " dimensions; fzg fields have 1 to 3");
  std::vector<hsize_t> extent(size_t(std::max(rank, 1)), 1);
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), extent.data(), nullptr);
  DescribedInput in;
  in.dtype = kind.dtype;
  in.dims.assign(extent.rbegin(), extent.rend());  // HDF5 lists the slowest first
  const Dims dims = Dims::make(in.dims);
  in.bytes = Buffer::host(dims.count() * dtype_size(in.dtype));
  if (H5Dread(dataset.get(), kind.memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, in.bytes.data()) < 0)
    fail(ErrorCode::io, "cannot read the dataset '" + spec + "' (a filter this HDF5 lacks, or a damaged file)");
  note_fill_value(dataset.get(), "_FillValue", in.fill_values, in.missing_values);
  note_fill_value(dataset.get(), "missing_value", in.fill_values, in.missing_values);
  return in;
}

}  // namespace fzg::cli
