// fzg as an HDF5 filter plugin (libh5z_fzg.so, found through HDF5_PLUGIN_PATH), over the C
// API. Filter id 305, in HDF5's range for unregistered filters (256-511) until The HDF Group
// assigns one.
//
// The user's cd_values: { mode, bound's low 32 bits, bound's high 32 bits [, config name] }
// with mode 1 abs, 2 rel, 3 psnr, 4 lossless (fzg.h's fzg_mode), the bound an IEEE double,
// and the config name (a shipped config: "ratio", "cusz", ...; default "fz") packed four
// bytes a value, little-endian, zero-padded. At dataset creation set_local adds the type and
// the chunk's shape, which the filter callback is not given, and the dataset's fill value
// when the user defined one (NetCDF-4 defines its _FillValue so): points equal to it are
// missing values, kept bit for bit and left out of the range and the bound:
//   { magic 0x465A4702, mode, low, high, dtype, rank, dim fastest, ..., dim slowest,
//     fill count (0 or 1), fill value's low and high 32 bits..., name... }
// (magic 0x465A4701, written before fill values, has no fill count and fill values.)
// A chunk decompresses from its own bytes (an .fzg file), needing no cd_values at all.
#include <H5PLextern.h>
#include <hdf5.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "capi/fzg.h"

namespace {

constexpr H5Z_filter_t filter_id = 305;
constexpr unsigned magic = 0x465A4702u;             // "FZG" 2: the layout set_local writes
constexpr unsigned magic_without_fill = 0x465A4701u;  // "FZG" 1: the same without fill values
constexpr size_t fixed_values = 6;                    // magic, mode, low, high, dtype, rank

double double_of(unsigned low, unsigned high) {
  double value;
  const uint64_t bits = uint64_t(low) | uint64_t(high) << 32;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// Where set_local's values hold the fill values and the config name, and the fill values;
// false when they are not set_local's.
struct LocalLayout {
  unsigned rank = 0;
  size_t name_from = 0;
  std::vector<double> fills;
};
bool layout_of(size_t count, const unsigned* values, LocalLayout* layout) {
  if (count < fixed_values || (values[0] != magic && values[0] != magic_without_fill)) return false;
  layout->rank = values[5];
  if (layout->rank < 1 || layout->rank > 3 || count < fixed_values + layout->rank) return false;
  layout->name_from = fixed_values + layout->rank;
  layout->fills.clear();
  if (values[0] == magic) {
    if (count <= layout->name_from) return false;
    const size_t fills = values[layout->name_from++];
    if (fills > 1 || count < layout->name_from + 2 * fills) return false;
    for (size_t f = 0; f < fills; ++f, layout->name_from += 2)
      layout->fills.push_back(double_of(values[layout->name_from], values[layout->name_from + 1]));
  }
  return true;
}

// The dataset's element type as fzg's, or 0 when fzg cannot take it.
fzg_dtype dtype_of(hid_t type) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  if (cls == H5T_FLOAT) return size == 4 ? FZG_F32 : size == 8 ? FZG_F64 : fzg_dtype(0);
  if (cls == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
    if (size == 1 && !is_signed) return FZG_U8;
    if (size == 2 && !is_signed) return FZG_U16;
    if (size == 4) return is_signed ? FZG_I32 : FZG_U32;
  }
  return fzg_dtype(0);
}

// The config name packed in values [from, count).
std::string config_name(size_t count, const unsigned* values, size_t from) {
  std::string name;
  for (size_t i = from; i < count; ++i)
    for (int b = 0; b < 4; ++b)
      if (const char c = char((values[i] >> (8 * b)) & 0xff)) name += c;
  return name;
}

// The shipped config `name`: built in ("fz"), or NAME.json in $FZG_CONFIG_DIR or in the
// installed configs.
fzg_status use_config(fzg_context* ctx, const std::string& name) {
  if (name.empty() || name == "fz") return fzg_set_config_file(ctx, nullptr);
  if (name.find('/') != std::string::npos) return FZG_ERROR_INVALID_ARGUMENT;
  const char* dir = std::getenv("FZG_CONFIG_DIR");
  return fzg_set_config_file(ctx, ((dir ? std::string(dir) : std::string(FZG_INSTALLED_CONFIGS)) + "/" + name + ".json").c_str());
}

// Sets ctx's bound and config from set_local's values; false when fzg refuses them.
bool configure(fzg_context* ctx, size_t count, const unsigned* values) {
  LocalLayout layout;
  if (!layout_of(count, values, &layout)) return false;
  return fzg_set_bound(ctx, fzg_mode(values[1]), double_of(values[2], values[3])) == FZG_OK &&
         fzg_set_fill_values(ctx, layout.fills.data(), layout.fills.size()) == FZG_OK &&
         use_config(ctx, config_name(count, values, layout.name_from)) == FZG_OK;
}

bool settings_usable(const std::vector<unsigned>& values) {
  fzg_context* ctx = fzg_create();
  const bool ok = ctx && configure(ctx, values.size(), values.data());
  fzg_destroy(ctx);
  return ok;
}

htri_t can_apply(hid_t, hid_t type, hid_t) {
  if (dtype_of(type) == 0) return 0;
  // A big-endian dataset would reach the filter as big-endian bytes: fzg reads little-endian.
  return H5Tget_order(type) == H5T_ORDER_LE || H5Tget_size(type) == 1 ? 1 : 0;
}

herr_t set_local(hid_t dcpl, hid_t type, hid_t) {
  unsigned flags = 0;
  size_t count = 32;
  unsigned values[32] = {};
  if (H5Pget_filter_by_id2(dcpl, filter_id, &flags, &count, values, 0, nullptr, nullptr) < 0) return -1;
  if (count > 32) return -1;
  std::vector<unsigned> user;
  if (count > 0 && (values[0] == magic || values[0] == magic_without_fill)) {
    // Already set (a copied property list): keep its mode, bound and name.
    LocalLayout layout;
    if (!layout_of(count, values, &layout)) return -1;
    user.assign(values + 1, values + 4);
    user.insert(user.end(), values + layout.name_from, values + count);
  } else {
    if (count < 3) return -1;  // mode and bound are required
    user.assign(values, values + count);
  }
  int rank = H5Pget_chunk(dcpl, 0, nullptr);
  if (rank < 1 || rank > 3) return -1;  // fzg fields have 1 to 3 dimensions
  hsize_t chunk[3] = {1, 1, 1};
  H5Pget_chunk(dcpl, rank, chunk);
  const fzg_dtype dtype = dtype_of(type);
  std::vector<unsigned> local = {magic, user[0], user[1], user[2], unsigned(dtype), unsigned(rank)};
  for (int d = rank - 1; d >= 0; --d) local.push_back(unsigned(chunk[d]));  // HDF5 lists the slowest first
  // The dataset's own fill value, when the user defined one, marks missing points of a lossy
  // float dataset (in the dataset's type: HDF5 converts it to a double exactly).
  H5D_fill_value_t fill_status = H5D_FILL_VALUE_UNDEFINED;
  double fill = 0;
  const bool has_fill = (dtype == FZG_F32 || dtype == FZG_F64) && user[0] != FZG_LOSSLESS &&
                        H5Pfill_value_defined(dcpl, &fill_status) >= 0 &&
                        fill_status == H5D_FILL_VALUE_USER_DEFINED &&
                        H5Pget_fill_value(dcpl, H5T_NATIVE_DOUBLE, &fill) >= 0;
  local.push_back(has_fill ? 1u : 0u);
  if (has_fill) {
    uint64_t bits;
    std::memcpy(&bits, &fill, sizeof bits);
    local.push_back(unsigned(bits & 0xffffffffu));
    local.push_back(unsigned(bits >> 32));
  }
  local.insert(local.end(), user.begin() + 3, user.end());
  // A bound or config the filter could not use fails the dataset's creation, not a later
  // write of its chunks (which h5py's optional filters would store unfiltered, silently):
  // fzg compresses integers exactly only.
  const bool lossy_integers = user[0] != FZG_LOSSLESS && dtype != FZG_F32 && dtype != FZG_F64;
  if (dtype == 0 || lossy_integers || !settings_usable(local)) return -1;
  return H5Pmodify_filter(dcpl, filter_id, flags, local.size(), local.data());
}

// A filter's result: `result` (malloc'ed, `size` bytes) replaces HDF5's buffer; size 0 is a
// failure, which leaves the buffer as it was and frees `result`.
size_t hand_over(void* result, size_t size, size_t* buffer_size, void** buffer) {
  if (size == 0) {
    std::free(result);
    return 0;
  }
  std::free(*buffer);
  *buffer = result, *buffer_size = size;
  return size;
}

size_t compress_chunk(size_t count, const unsigned* values, size_t bytes, size_t* buffer_size, void** buffer) {
  fzg_context* ctx = fzg_create();
  if (!ctx) return 0;
  size_t written = 0;
  void* file = nullptr;
  if (configure(ctx, count, values)) {
    const unsigned rank = values[5];
    size_t dims[3] = {1, 1, 1};
    for (unsigned d = 0; d < rank; ++d) dims[d] = values[fixed_values + d];
    const fzg_dtype dtype = fzg_dtype(values[4]);
    const size_t capacity = fzg_max_compressed_size(ctx, dtype, dims, int(rank));
    file = capacity ? std::malloc(capacity) : nullptr;
    size_t expected = dims[0] * dims[1] * dims[2];
    expected *= (dtype == FZG_F64 ? 8 : dtype == FZG_U8 ? 1 : dtype == FZG_U16 ? 2 : 4);
    if (file && bytes == expected &&
        fzg_compress(ctx, *buffer, dtype, dims, int(rank), file, capacity, &written) != FZG_OK)
      written = 0;
  }
  fzg_destroy(ctx);
  return hand_over(file, written, buffer_size, buffer);
}

size_t decompress_chunk(size_t bytes, size_t* buffer_size, void** buffer) {
  fzg_context* ctx = fzg_create();
  if (!ctx) return 0;
  fzg_file_info info;
  void* field = nullptr;
  size_t size = 0;
  if (fzg_file_info_of(ctx, *buffer, bytes, &info) == FZG_OK && (field = std::malloc(info.original_bytes)) &&
      fzg_decompress(ctx, *buffer, bytes, field, info.original_bytes) == FZG_OK)
    size = info.original_bytes;
  fzg_destroy(ctx);
  return hand_over(field, size, buffer_size, buffer);
}

size_t filter(unsigned flags, size_t count, const unsigned values[], size_t bytes, size_t* buffer_size, void** buffer) {
  return (flags & H5Z_FLAG_REVERSE) ? decompress_chunk(bytes, buffer_size, buffer)
                                    : compress_chunk(count, values, bytes, buffer_size, buffer);
}

const H5Z_class2_t filter_class = {
    H5Z_CLASS_T_VERS, filter_id, 1, 1, "fzg: error-bounded lossy compression", can_apply,
    set_local, filter};

}  // namespace

extern "C" {
H5PL_type_t H5PLget_plugin_type(void) { return H5PL_TYPE_FILTER; }
const void* H5PLget_plugin_info(void) { return &filter_class; }
}
