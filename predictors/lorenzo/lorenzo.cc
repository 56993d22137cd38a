// The Lorenzo stage: parameters, ports, the outlier-stream layout, and backend dispatch.
#include "predictors/lorenzo/lorenzo.hh"

#include <algorithm>
#include <cstring>

#include "pipeline/error.hh"

namespace fzg {
namespace lorenzo {

TileShape tile_shape(int rank) {
  switch (rank) {
    case 1: return {2048, 1, 1};
    case 2: return {32, 32, 1};
    default: return {32, 8, 8};
  }
}

TileGrid::TileGrid(const Dims& d) : dims(d), tile(tile_shape(d.rank)) {
  tiles_x = (d.x + tile.x - 1) / tile.x;
  tiles_y = (d.y + tile.y - 1) / tile.y;
  tiles_z = (d.z + tile.z - 1) / tile.z;
}

uint64_t outlier_stream_size(OutlierCounts counts, DType type) {
  return 16 + 8 * counts.escapes + 8 * counts.exacts + dtype_size(type) * counts.exacts + 4 * counts.escapes;
}

OutlierView outlier_layout(OutlierCounts counts, const uint8_t* stream, uint64_t size_bytes, DType type) {
  // Each entry costs at least 12 bytes: counts beyond size/12 cannot be honest (and could overflow).
  require_data(counts.escapes <= size_bytes / 12 && counts.exacts <= size_bytes / 12, "outlier counts");
  require_data(outlier_stream_size(counts, type) == size_bytes, "outlier stream size");
  OutlierView v;
  v.counts = counts;
  const uint8_t* p = stream + 16;
  v.escape_keys = reinterpret_cast<const uint64_t*>(p);
  p += 8 * counts.escapes;
  v.exact_keys = reinterpret_cast<const uint64_t*>(p);
  p += 8 * counts.exacts;
  v.exact_values = p;
  p += dtype_size(type) * counts.exacts;
  v.escape_deltas = reinterpret_cast<const int32_t*>(p);
  return v;
}

OutlierView parse_outliers(const uint8_t* stream, uint64_t size_bytes, DType type) {
  require_data(size_bytes >= 16, "outlier stream shorter than its counts");
  OutlierCounts counts;
  std::memcpy(&counts.escapes, stream, 8);
  std::memcpy(&counts.exacts, stream + 8, 8);
  return outlier_layout(counts, stream, size_bytes, type);
}

static void validate_keys(const uint64_t* keys, uint64_t count, const TileGrid& grid, const char* what) {
  const uint64_t volume = grid.tile.volume();
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t key = keys[i];
    require_data(i == 0 || key > keys[i - 1], what);
    const uint64_t tile = key / volume, local = key % volume;
    require_data(tile < grid.tile_count(), what);
    const uint64_t tx = tile % grid.tiles_x, ty = (tile / grid.tiles_x) % grid.tiles_y,
                   tz = tile / (grid.tiles_x * grid.tiles_y);
    const uint64_t x = tx * grid.tile.x + local % grid.tile.x;
    const uint64_t y = ty * grid.tile.y + (local / grid.tile.x) % grid.tile.y;
    const uint64_t z = tz * grid.tile.z + local / (grid.tile.x * grid.tile.y);
    require_data(x < grid.dims.x && y < grid.dims.y && z < grid.dims.z, what);
  }
}

void validate_outlier_keys(const OutlierView& view, const TileGrid& grid) {
  validate_keys(view.escape_keys, view.counts.escapes, grid, "escape outlier keys");
  validate_keys(view.exact_keys, view.counts.exacts, grid, "exact outlier keys");
}

}  // namespace lorenzo

namespace {

class LorenzoStage final : public Stage {
 public:
  explicit LorenzoStage(const nlohmann::json& params) {
    StageParams reader("lorenzo", params);
    reader.finish();
  }

  const StageSpec& spec() const override {
    static const StageSpec s{"lorenzo",
                             {{"field", PortType::field}},
                             {{"codes", PortType::codes_u16}, {"outliers", PortType::bytes}},
                             true};
    return s;
  }

  nlohmann::json params() const override { return nlohmann::json::object(); }

  std::vector<uint64_t> max_output_sizes(const StageContext& ctx, const std::vector<uint64_t>&) const override {
    const uint64_t n = ctx.dims.count();
    return {2 * n, lorenzo::outlier_stream_size({n, n}, ctx.dtype)};
  }

  std::vector<Buffer> encode(const StageContext& ctx, const std::vector<Buffer>& inputs) const override {
    check_field(ctx);
    const uint64_t n = ctx.dims.count();
    if (inputs.at(0).size() != n * dtype_size(ctx.dtype))
      fail(ErrorCode::invalid_argument, "lorenzo: input size does not match the field's dims and type");
    if (ctx.device == Device::cuda) {
#ifdef FZG_HAVE_CUDA
      Buffer codes = Buffer::device(2 * n, ctx.stream);
      Buffer outliers = lorenzo::encode_cuda(inputs[0].data(), ctx.dtype, ctx.dims, ctx.quant, codes.as<uint16_t>(),
                                             ctx.stream);
      return {codes, outliers};
#endif
    }
    Buffer codes = Buffer::host(2 * n);
    Buffer outliers = lorenzo::encode_cpu(inputs[0].data(), ctx.dtype, ctx.dims, ctx.quant, codes.as<uint16_t>());
    return {codes, outliers};
  }

  std::vector<Buffer> decode(const StageContext& ctx, const std::vector<Buffer>& outputs,
                             const std::vector<uint64_t>&) const override {
    check_field(ctx);
    const uint64_t n = ctx.dims.count();
    require_data(outputs.at(0).size() == 2 * n, "lorenzo codes size");
    const Buffer& outliers = outputs.at(1);
    if (ctx.device == Device::cuda) {
#ifdef FZG_HAVE_CUDA
      Buffer field = Buffer::device(n * dtype_size(ctx.dtype), ctx.stream);
      lorenzo::decode_cuda(outputs[0].as<uint16_t>(), outliers.data(), outliers.size(), ctx.dtype, ctx.dims,
                           ctx.quant, field.data(), ctx.stream);
      return {field};
#endif
    }
    Buffer field = Buffer::host(n * dtype_size(ctx.dtype));
    lorenzo::decode_cpu(outputs[0].as<uint16_t>(), outliers.data(), outliers.size(), ctx.dtype, ctx.dims, ctx.quant,
                        field.data());
    return {field};
  }

 private:
  static void check_field(const StageContext& ctx) {
    if (!is_float(ctx.dtype))
      fail(ErrorCode::invalid_argument, "lorenzo predicts f32 or f64 fields; use -m lossless for " + to_string(ctx.dtype));
  }
};

}  // namespace

std::unique_ptr<Stage> make_lorenzo_stage(const nlohmann::json& params) { return std::make_unique<LorenzoStage>(params); }

}  // namespace fzg
