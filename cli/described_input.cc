// .npy files (NumPy's format, versions 1-3: a magic string, a header length, a Python dict
// literal with descr, fortran_order and shape, then the data) and the HDF5 dispatch.
#include "cli/described_input.hh"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <regex>

#include "cli/commands.hh"

namespace fzg::cli {

namespace {

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

DType npy_dtype(const std::string& descr, const std::string& path) {
  // Little-endian, or byte-sized ('|'); '=' is the machine's order, little-endian here.
  const char order = descr.empty() ? '?' : descr[0];
  const std::string kind = descr.size() > 1 ? descr.substr(1) : "";
  if (order == '>' && kind != "u1" && kind != "i1")
    fail(ErrorCode::unsupported, "'" + path + "' holds big-endian values (" + descr + "): convert with astype('<" + kind + "')");
  if (kind == "f4") return DType::f32;
  if (kind == "f8") return DType::f64;
  if (kind == "u1") return DType::u8;
  if (kind == "u2") return DType::u16;
  if (kind == "u4") return DType::u32;
  if (kind == "i4") return DType::i32;
  fail(ErrorCode::unsupported, "'" + path + "' holds '" + descr + "' values; fzg reads f32, f64, u8, u16, u32 and i32");
}

}  // namespace

bool is_npy(const std::string& path) { return path.size() > 4 && path.compare(path.size() - 4, 4, ".npy") == 0; }

bool is_hdf5_dataset(const std::string& spec) {
  const size_t at = spec.find(":/");
  return at != std::string::npos && at > 0 && !is_regular_file(spec) && is_regular_file(spec.substr(0, at));
}

DescribedInput read_npy(const std::string& path) {
  Buffer file = read_file(path);
  auto bad = [&](const std::string& why) { fail(ErrorCode::invalid_argument, "'" + path + "' is not a .npy file: " + why); };
  const uint8_t* p = file.data();
  if (file.size() < 10 || std::memcmp(p, "\x93NUMPY", 6) != 0) bad("no NumPy magic string");
  const int major = p[6];
  if (major < 1 || major > 3) bad("version " + std::to_string(major) + " is not 1, 2 or 3");
  const uint64_t length_bytes = major == 1 ? 2 : 4;
  if (file.size() < 8 + length_bytes) bad("truncated header");
  uint64_t header_length = 0;
  for (uint64_t i = 0; i < length_bytes; ++i) header_length |= uint64_t(p[8 + i]) << (8 * i);
  const uint64_t data_at = 8 + length_bytes + header_length;
  if (data_at > file.size()) bad("truncated header");
  const std::string header(reinterpret_cast<const char*>(p + 8 + length_bytes), header_length);
  std::smatch descr, fortran, shape;
  if (!std::regex_search(header, descr, std::regex(R"('descr'\s*:\s*'([^']*)')")) ||
      !std::regex_search(header, fortran, std::regex(R"('fortran_order'\s*:\s*(True|False))")) ||
      !std::regex_search(header, shape, std::regex(R"('shape'\s*:\s*\(([^)]*)\))")))
    bad("its header lacks descr, fortran_order or shape");
  DescribedInput in;
  in.dtype = npy_dtype(descr[1], path);
  std::vector<uint64_t> numpy_shape;
  const std::string axes = shape[1];
  const std::regex number("[0-9]+");
  for (std::sregex_iterator it(axes.begin(), axes.end(), number), end; it != end; ++it)
    numpy_shape.push_back(std::stoull(it->str()));
  if (numpy_shape.empty()) numpy_shape.push_back(1);  // a 0-d array: one value
  if (numpy_shape.size() > 3)
    fail(ErrorCode::invalid_argument, "'" + path + "' has " + std::to_string(numpy_shape.size()) +
                                          " dimensions; fzg fields have 1 to 3");
  // C order: NumPy's last axis is the fastest; Fortran order: its first.
  in.dims = numpy_shape;
  if (fortran[1] == "False") std::reverse(in.dims.begin(), in.dims.end());
  const std::string dims_text = Dims::make(in.dims).to_string();
  const std::optional<FieldSize> size = field_size(dims_text, in.dtype);
  if (!size || size->overflows || size->bytes != file.size() - data_at)
    bad("its data is " + std::to_string(file.size() - data_at) + " bytes, not the " + dims_text + " " +
        to_string(in.dtype) + " its header describes");
  in.bytes = file.slice(data_at, size->bytes);
  return in;
}

#ifndef FZG_HAVE_HDF5
DescribedInput read_hdf5_dataset(const std::string& spec) {
  fail(ErrorCode::unsupported, "'" + spec + "' names an HDF5 dataset, and this fzg was built without HDF5 "
                               "(install libhdf5-dev and rebuild)");
}
#endif

}  // namespace fzg::cli
