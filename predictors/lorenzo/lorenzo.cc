// The Lorenzo stage: parameters, ports, the outlier-stream layout, and backend dispatch.
#include "predictors/lorenzo/lorenzo.hh"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.hh"
#include "predictors/lorenzo/mask.hh"
#include "predictors/lorenzo/quantization.hh"

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

std::vector<uint8_t> write_header(const Quantization& quant, const MissingValues& missing) {
  std::vector<uint8_t> header = write_quantization(quant);
  if (missing.empty()) return header;
  const uint64_t count = missing.count, data_only = 1;
  header.resize(quantization_header_bytes + 8 * (2 + count));
  std::memcpy(header.data() + quantization_header_bytes, &count, 8);
  std::memcpy(header.data() + quantization_header_bytes + 8, missing.bits, 8 * count);
  std::memcpy(header.data() + quantization_header_bytes + 8 * (1 + count), &data_only, 8);
  return header;
}

void read_header(const std::vector<uint8_t>& header, Quantization* quant, MissingValues* missing, bool* data_only) {
  require_data(header.size() >= quantization_header_bytes, "lorenzo header size");
  *quant = read_quantization(std::vector<uint8_t>(header.begin(), header.begin() + quantization_header_bytes));
  *missing = MissingValues{};
  if (data_only) *data_only = false;
  if (header.size() == quantization_header_bytes) return;
  uint64_t count = 0;
  require_data(header.size() >= quantization_header_bytes + 8, "lorenzo header size");
  std::memcpy(&count, header.data() + quantization_header_bytes, 8);
  const uint64_t fills_end = quantization_header_bytes + 8 * (1 + count);
  require_data(count >= 1 && count <= MissingValues::capacity &&
                   (header.size() == fills_end || header.size() == fills_end + 8),
               "lorenzo fill values");
  missing->count = uint32_t(count);
  std::memcpy(missing->bits, header.data() + quantization_header_bytes + 8, 8 * count);
  if (header.size() == fills_end) return;  // the first form: every point's code, in field order
  uint64_t order = 0;
  std::memcpy(&order, header.data() + fills_end, 8);
  require_data(order == 1, "lorenzo code order");
  if (data_only) *data_only = true;
}

}  // namespace lorenzo

namespace {

class LorenzoStage final : public Stage {
 public:
  explicit LorenzoStage(const nlohmann::json& params) {
    StageParams reader("lorenzo", params);
    fill_ = reader.fill_values("fill");
    span_ = reader.choice("span", "tile", {"tile", "chunk"}) == "chunk" ? lorenzo::Span::chunk : lorenzo::Span::tile;
    reader.finish();
    missing_values_of(fill_, DType::f64);  // rejects repeated values
    spec_ = {"lorenzo",
             {{"field", field_port}},
             {{"codes", symbols_port(2)}, {"outliers", bytes_port}},
             /*predictor=*/true,
             /*stores_raw_when_larger=*/false,
             /*needs_value_range=*/true};
    if (!fill_.empty()) spec_.outputs.push_back({"mask", bytes_port});
  }

  const StageSpec& spec() const override { return spec_; }

  // Without fill values the parameters are empty, so files from before fill values exist
  // store the same graph.
  // (and "span" only when it is "chunk").
  nlohmann::json params() const override {
    nlohmann::json params = nlohmann::json::object();
    if (span_ == lorenzo::Span::chunk) params["span"] = "chunk";
    if (fill_.empty()) return params;
    nlohmann::json fill = nlohmann::json::array();
    for (double v : fill_) {
      if (std::isfinite(v)) fill.push_back(v);
      else fill.push_back(fill_value_text(v));
    }
    params["fill"] = fill;
    return params;
  }

  MissingValues missing_values(DType type) const override {
    return fill_.empty() || !is_float(type) ? MissingValues{} : missing_values_of(fill_, type);
  }

  // The lossy step: the request and the whole field's value range (of its points with data)
  // give the bound and step every chunk quantizes with.
  std::vector<uint8_t> make_header(const StageContext& ctx, const FieldSummary& summary) const override {
    check_field(ctx);
    return lorenzo::write_header(lorenzo::resolve_quantization(summary.bound, ctx.dtype, summary.min, summary.max),
                                 missing_values(ctx.dtype));
  }

  nlohmann::json describe_header(const StageContext& ctx, const std::vector<uint8_t>& header) const override {
    const Setup setup = read(ctx, header);
    const Quantization& q = setup.quant;
    nlohmann::json description = {{"absolute_bound", q.error_bound}, {"step", q.step}, {"min", q.min}, {"max", q.max}};
    if (!setup.missing.empty()) {
      nlohmann::json fill = nlohmann::json::array();
      for (uint32_t s = 1; s <= setup.missing.count; ++s)
        fill.push_back(fill_value_text(ctx.dtype == DType::f32 ? double(setup.missing.value_of<float>(s))
                                                                : setup.missing.value_of<double>(s)));
      description["fill_values"] = fill;
      description["codes"] = setup.data_only ? "points with data" : "every point";
    }
    return description;
  }

  Quantization quantization(const std::vector<uint8_t>& header) const override {
    Quantization quant;
    MissingValues missing;
    lorenzo::read_header(header, &quant, &missing);
    return quant;
  }

  // Chunks are whole tile rows, so that every tile lies in one chunk and codes the same there.
  uint64_t chunk_rows(const Dims& dims) const override {
    const lorenzo::TileShape tile = lorenzo::tile_shape(dims.rank);
    return dims.rank == 1 ? tile.x : dims.rank == 2 ? tile.y : tile.z;
  }

  std::vector<uint64_t> max_output_sizes(const StageContext& ctx, const std::vector<uint64_t>&) const override {
    const uint64_t n = ctx.dims.count();
    std::vector<uint64_t> sizes{2 * n, lorenzo::outlier_stream_size({n, n}, ctx.dtype)};
    if (!fill_.empty()) {
      const lorenzo::TileGrid grid(ctx.dims);
      sizes.push_back(lorenzo::mask_stream_size(grid.tile_count() * grid.tile.volume()));
    }
    return sizes;
  }

  std::vector<Buffer> encode(const StageContext& ctx, const std::vector<Buffer>& inputs) const override {
    check_field(ctx);
    const uint64_t n = ctx.dims.count();
    if (inputs.at(0).size() != n * dtype_size(ctx.dtype))
      fail(ErrorCode::invalid_argument, "lorenzo: input size does not match the field's dims and type");
    const Setup setup = read(ctx, *ctx.header);
    const bool masked = !setup.missing.empty();
    Buffer mask;
    uint64_t code_count = n;
    std::vector<Buffer> outputs = on_backend(
        ctx,
        [&] {
          Buffer codes = Buffer::host(2 * n);
          Buffer outliers = lorenzo::encode_cpu(inputs[0].data(), ctx.dtype, ctx.dims, setup.quant,
                                                codes.as<uint16_t>(), &code_count, setup.missing,
                                                masked ? &mask : nullptr, span_);
          return std::vector<Buffer>{codes, outliers};
        },
        [&] {
          Buffer codes = Buffer::device(2 * n, ctx.stream), data_codes;
          Buffer outliers = lorenzo::encode_cuda(inputs[0].data(), ctx.dtype, ctx.dims, setup.quant,
                                                 codes.as<uint16_t>(), &code_count, ctx.stream, setup.missing,
                                                 masked ? &mask : nullptr, &data_codes, span_);
          return std::vector<Buffer>{masked ? data_codes : codes, outliers};
        });
    outputs[0].shrink(2 * code_count);
    if (masked) outputs.push_back(mask);
    return outputs;
  }

  void decode(const StageContext& ctx, const std::vector<Buffer>& outputs, std::vector<Buffer>& inputs) const override {
    check_field(ctx);
    const uint64_t n = ctx.dims.count();
    require_data(outputs.at(0).size() % 2 == 0 && outputs.at(0).size() <= 2 * n, "lorenzo codes size");
    require_data(inputs.at(0).size() == n * dtype_size(ctx.dtype), "lorenzo field size");
    const Setup setup = read(ctx, *ctx.header);
    const Buffer& outliers = outputs.at(1);
    const Buffer mask = setup.missing.empty() ? Buffer() : outputs.at(2);
    on_backend(
        ctx,
        [&] {
          lorenzo::decode_cpu(outputs[0].as<uint16_t>(), outputs[0].size() / 2, outliers.data(), outliers.size(),
                              ctx.dtype, ctx.dims, setup.quant, inputs[0].data(), mask.data(), mask.size(),
                              setup.missing, setup.data_only, span_);
        },
        [&] {
          lorenzo::decode_cuda(outputs[0].as<uint16_t>(), outputs[0].size() / 2, outliers.data(), outliers.size(),
                               ctx.dtype, ctx.dims, setup.quant, inputs[0].data(), ctx.stream, mask.data(),
                               mask.size(), setup.missing, setup.data_only, span_);
        });
  }

 private:
  struct Setup {
    Quantization quant;
    MissingValues missing;
    bool data_only = false;  // with fill values: codes of the points with data only (lorenzo.hh)
  };
  // The header, checked against the parameters: the fill values it holds are the ones the
  // parameters give, in the field's type (the ports depend on them).
  Setup read(const StageContext& ctx, const std::vector<uint8_t>& header) const {
    Setup setup;
    lorenzo::read_header(header, &setup.quant, &setup.missing, &setup.data_only);
    const MissingValues expected = missing_values(ctx.dtype);
    require_data(setup.missing.count == expected.count &&
                     std::equal(expected.bits, expected.bits + expected.count, setup.missing.bits),
                 "lorenzo fill values differ from the stage's parameters");
    return setup;
  }

  static void check_field(const StageContext& ctx) {
    if (!is_float(ctx.dtype))
      fail(ErrorCode::invalid_argument, "lorenzo predicts f32 or f64 fields; use -m lossless for " + to_string(ctx.dtype));
  }

  std::vector<double> fill_;
  lorenzo::Span span_ = lorenzo::Span::tile;
  StageSpec spec_;
};

}  // namespace

std::unique_ptr<Stage> make_lorenzo_stage(const nlohmann::json& params) { return std::make_unique<LorenzoStage>(params); }

}  // namespace fzg
