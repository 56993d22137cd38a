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

void check_code_order(const Prediction& prediction, const MissingValues& missing) {
  if (prediction.tile_order && (prediction.span != Span::tile || !missing.empty()))
    fail(ErrorCode::invalid_argument, "lorenzo: codes in tile order need span \"tile\" and no fill values");
}

// The messages of outlier_layout and validate_outlier_keys.
OutlierChecks outlier_checks(StepChecks& checks) {
  return {checks.word("outlier counts"), checks.word("outlier stream size"), checks.word("escape outlier keys"),
          checks.word("exact outlier keys")};
}

namespace {
constexpr uint64_t axes_tag = uint64_t(0x73657861) << 32;  // "axes" (lorenzo.hh)

void append_word(std::vector<uint8_t>& header, uint64_t word) {
  const size_t at = header.size();
  header.resize(at + 8);
  std::memcpy(header.data() + at, &word, 8);
}

uint64_t word_at(const std::vector<uint8_t>& header, size_t at) {
  uint64_t word = 0;
  std::memcpy(&word, header.data() + at, 8);
  return word;
}

constexpr uint64_t chunk_span_bit = 1u << 8, tile_order_bit = 1u << 9;

uint64_t prediction_record(const Prediction& p) {
  return axes_tag | p.axes | (p.span == Span::chunk ? chunk_span_bit : 0) | (p.tile_order ? tile_order_bit : 0);
}

Prediction read_prediction_record(uint64_t record) {
  const uint64_t axes = record & 7u;
  require_data((record & ~(7u | chunk_span_bit | tile_order_bit)) == axes_tag && axes >= 1 &&
                   !((record & chunk_span_bit) && (record & tile_order_bit)),
               "lorenzo prediction record");
  return {record & chunk_span_bit ? Span::chunk : Span::tile, Axes(axes), (record & tile_order_bit) != 0};
}
}  // namespace

std::vector<uint8_t> write_header(const Quantization& quant, const MissingValues& missing,
                                  const std::optional<Prediction>& record) {
  std::vector<uint8_t> header = write_quantization(quant);
  if (!missing.empty()) {
    append_word(header, missing.count);
    for (uint32_t i = 0; i < missing.count; ++i) append_word(header, missing.bits[i]);
    append_word(header, 1);  // data_only
  }
  if (record) append_word(header, prediction_record(*record));
  return header;
}

void read_header(const std::vector<uint8_t>& header, Quantization* quant, MissingValues* missing, bool* data_only,
                 std::optional<Prediction>* record) {
  require_data(header.size() >= quantization_header_bytes, "lorenzo header size");
  *quant = read_quantization(std::vector<uint8_t>(header.begin(), header.begin() + quantization_header_bytes));
  *missing = MissingValues{};
  if (data_only) *data_only = false;
  if (record) record->reset();
  if (header.size() == quantization_header_bytes) return;
  require_data(header.size() >= quantization_header_bytes + 8, "lorenzo header size");
  const uint64_t first = word_at(header, quantization_header_bytes);
  if ((first & ~uint64_t(0xffffffffu)) == axes_tag) {  // no fill values, then the record
    require_data(header.size() == quantization_header_bytes + 8, "lorenzo header size");
    const Prediction p = read_prediction_record(first);
    if (record) *record = p;
    return;
  }
  const uint64_t count = first;
  const uint64_t fills_end = quantization_header_bytes + 8 * (1 + count);
  require_data(count >= 1 && count <= MissingValues::capacity &&
                   (header.size() == fills_end || header.size() == fills_end + 8 || header.size() == fills_end + 16),
               "lorenzo fill values");
  missing->count = uint32_t(count);
  std::memcpy(missing->bits, header.data() + quantization_header_bytes + 8, 8 * count);
  if (header.size() == fills_end) return;  // the first form: every point's code, in field order
  require_data(word_at(header, fills_end) == 1, "lorenzo code order");
  if (data_only) *data_only = true;
  if (header.size() == fills_end + 16) {
    const Prediction p = read_prediction_record(word_at(header, fills_end + 8));
    if (record) *record = p;
  }
}

}  // namespace lorenzo

namespace {

class LorenzoStage final : public Stage {
 public:
  explicit LorenzoStage(const nlohmann::json& params) {
    StageParams reader("lorenzo", params);
    fill_ = reader.fill_values("fill");
    span_ = reader.choice("span", "tile", {"tile", "chunk", "auto"});
    axes_ = reader.choice("axes", "xyz", {"auto", "xyz", "xy", "xz", "yz", "x", "y", "z"});
    tile_order_ = reader.choice("code_order", "field", {"field", "tile"}) == "tile";
    reader.finish();
    if (tile_order_ && (span_ != "tile" || !fill_.empty()))
      fail(ErrorCode::invalid_config, std::string("lorenzo: \"code_order\": \"tile\" needs \"span\": \"tile\"") +
                                          (fill_.empty() ? "" : " and no fill values"));
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
  // (and "span" only when not "tile", "axes" only when not every axis).
  nlohmann::json params() const override {
    nlohmann::json params = nlohmann::json::object();
    if (span_ != "tile") params["span"] = span_;
    if (axes_ != "xyz") params["axes"] = axes_;
    if (tile_order_) params["code_order"] = "tile";
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
  // give the bound and step every chunk quantizes with; with "axes" other than every axis,
  // "span": "auto" or "code_order": "tile", the prediction record: the axes and span (with
  // "auto", chosen from a sample of the field: lorenzo.hh) and the codes' order.
  std::vector<uint8_t> make_header(const StageContext& ctx, const FieldSummary& summary) const override {
    check_field(ctx);
    if (summary.resolved) {  // after resolve_on_device: its quantization, the first header's record
      if (!ctx.header) fail(ErrorCode::invalid_argument, "lorenzo: a header remade without the first one");
      Quantization placeholder;
      MissingValues missing;
      std::optional<lorenzo::Prediction> record;
      lorenzo::read_header(*ctx.header, &placeholder, &missing, nullptr, &record);
      return lorenzo::write_header(resolved_quantization(summary.resolved), missing, record);
    }
    const Quantization quant = lorenzo::resolve_quantization(summary.bound, ctx.dtype, summary.min, summary.max);
    const MissingValues missing = missing_values(ctx.dtype);
    return lorenzo::write_header(quant, missing, header_prediction(ctx, summary, quant, missing));
  }

  // On the GPU the quantization is resolved where the range is (a kernel of one thread after the
  // reduction), unless the prediction is chosen from a sample: that codes the sample with the
  // quantization on the host's side first.
  Buffer resolve_on_device(const StageContext& ctx, const FieldSummary& summary) const override {
    if (!summary.device_range || chooses_from_sample(ctx.dtype)) return Buffer();
    check_field(ctx);
    const lorenzo::BoundTerms terms = lorenzo::bound_terms(summary.bound);
    return on_backend(
        ctx, [] { return Buffer(); },
        [&] { return lorenzo::resolve_quantization_cuda(terms, ctx.dtype, summary.device_range, ctx.stream); });
  }

  nlohmann::json describe_header(const StageContext& ctx, const std::vector<uint8_t>& header) const override {
    const Setup setup = read(ctx, header);
    const Quantization& q = setup.quant;
    nlohmann::json description = {{"absolute_bound", q.error_bound}, {"step", q.step}, {"min", q.min}, {"max", q.max}};
    description["axes"] = axes_text(setup.prediction.axes_of(ctx.field_dims));
    description["span"] = setup.prediction.span == lorenzo::Span::chunk ? "chunk" : "tile";
    description["code_order"] = setup.prediction.tile_order ? "tile" : "field";
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
                                                masked ? &mask : nullptr, setup.prediction);
          return std::vector<Buffer>{codes, outliers};
        },
        [&] {
          Buffer codes = Buffer::device(2 * n, ctx.stream);
          // The call's quantization where resolve_on_device made it (the header's is then a
          // placeholder until the chunks are done), else the header's, written to the device.
          const Buffer quantization =
              ctx.resolved ? Buffer::view(const_cast<void*>(ctx.resolved), sizeof(lorenzo::DeviceQuantization),
                                          Location::device)
                           : lorenzo::quantization_to_device(setup.quant, ctx.dtype, ctx.stream);
          Buffer outliers = lorenzo::encode_cuda(inputs[0].data(), ctx.dtype, ctx.dims, quantization,
                                                 codes.as<uint16_t>(), &code_count, ctx.stream, setup.missing,
                                                 masked ? &mask : nullptr, setup.prediction, chunk_data_bits(ctx));
          // Made later (Buffer::deferred) from the field's tiles with outliers: the field stays.
          outliers = Buffer::deferred([outliers, field = inputs[0]] { return outliers; });
          return std::vector<Buffer>{codes, outliers};
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
                              setup.missing, setup.data_only, setup.prediction);
        },
        [&] {
          StepChecks checks(ctx.checks, ctx.stream);
          lorenzo::decode_cuda(outputs[0].as<uint16_t>(), outputs[0].size() / 2, outliers.data(), outliers.size(),
                               ctx.dtype, ctx.dims, setup.quant, inputs[0].data(), lorenzo::outlier_checks(checks),
                               ctx.stream, mask.data(), mask.size(), setup.missing, setup.data_only,
                               setup.prediction);
          checks.finish();
        });
  }

 private:
  struct Setup {
    Quantization quant;
    MissingValues missing;
    bool data_only = false;  // with fill values: codes of the points with data only (lorenzo.hh)
    lorenzo::Prediction prediction;  // the header's record, else every axis and the parameter's span
  };
  // Whether make_header codes a sample of the field to choose the prediction (lorenzo.hh).
  bool chooses_from_sample(DType type) const {
    return axes_ == "auto" || (span_ == "auto" && missing_values(type).empty());
  }

  // The quantization in what resolve_on_device made (a host copy of a DeviceQuantization).
  static Quantization resolved_quantization(const void* resolved) {
    lorenzo::DeviceQuantization d;
    std::memcpy(&d, resolved, sizeof d);
    return d.quant;
  }

  // The span the parameters give (by tiles for "auto" until a record says otherwise).
  lorenzo::Span given_span() const { return span_ == "chunk" ? lorenzo::Span::chunk : lorenzo::Span::tile; }

  static std::string axes_text(lorenzo::Axes axes) {
    std::string text;
    for (int a = 0; a < 3; ++a)
      if (axes >> a & 1u) text += "xyz"[a];
    return text;
  }

  // The header's prediction record: none for every axis by a span given, else the axes given
  // and span, or for "auto" the candidates' that the sample codes smallest (lorenzo.hh).
  std::optional<lorenzo::Prediction> header_prediction(const StageContext& ctx, const FieldSummary& summary,
                                                       const Quantization& quant, const MissingValues& missing) const {
    const int rank = ctx.dims.rank;
    if (axes_ == "xyz" && span_ != "auto" && !tile_order_) return std::nullopt;
    std::vector<lorenzo::Axes> axes = lorenzo::axes_candidates(rank);
    if (axes_ == "xyz") {
      axes = {lorenzo::all_axes(rank)};
    } else if (axes_ != "auto") {
      lorenzo::Axes given = 0;
      for (char c : axes_) given |= lorenzo::Axes(1) << (c - 'x');
      if (!(given & lorenzo::all_axes(rank)))
        fail(ErrorCode::invalid_argument,
             "lorenzo: axes \"" + axes_ + "\" name no axis of a " + std::to_string(rank) + "D field");
      axes = {given & lorenzo::all_axes(rank)};
    }
    std::vector<lorenzo::Span> spans{given_span()};
    if (span_ == "auto" && missing.empty()) spans.push_back(lorenzo::Span::chunk);  // fill values: by tiles
    std::vector<lorenzo::Prediction> candidates;
    for (lorenzo::Span span : spans)
      for (lorenzo::Axes a : axes) candidates.push_back({span, a, tile_order_});
    if (candidates.size() == 1 || !summary.field || ctx.dims.count() == 0) return candidates.front();
    // Where the field is: a host field too large for the device is sampled on the host.
    StageContext where = ctx;
    where.device = summary.field->location() == Location::device ? Device::cuda : Device::cpu;
    const std::vector<uint64_t> counts = on_backend(
        where,
        [&] {
          return lorenzo::axes_histograms_cpu(summary.field->data(), ctx.dtype, ctx.dims, quant, missing, spans, axes);
        },
        [&] {
          return lorenzo::axes_histograms_cuda(summary.field->data(), ctx.dtype, ctx.dims, quant, missing, spans, axes,
                                               ctx.stream);
        });
    return lorenzo::choose_prediction(candidates, counts);
  }

  // The header, checked against the parameters: the fill values it holds are the ones the
  // parameters give, in the field's type (the ports depend on them).
  Setup read(const StageContext& ctx, const std::vector<uint8_t>& header) const {
    Setup setup;
    std::optional<lorenzo::Prediction> record;
    lorenzo::read_header(header, &setup.quant, &setup.missing, &setup.data_only, &record);
    // A writer records the prediction whenever the parameters ask for one, and only axes of
    // the field (a record naming none would decode differently on each backend).
    require_data(record || (span_ != "auto" && axes_ == "xyz" && !tile_order_),
                 "lorenzo header without its prediction record");
    require_data(!record || record->tile_order == tile_order_, "lorenzo code order differs from the stage's parameters");
    require_data(!record || (record->axes & ~lorenzo::all_axes(ctx.dims.rank)) == 0,
                 "lorenzo prediction record names an axis the field lacks");
    setup.prediction = record ? *record : lorenzo::Prediction{given_span(), 0};
    const MissingValues expected = missing_values(ctx.dtype);
    require_data(setup.missing.count == expected.count &&
                     std::equal(expected.bits, expected.bits + expected.count, setup.missing.bits),
                 "lorenzo fill values differ from the stage's parameters");
    return setup;
  }

  // The chunk's data bits within the field's, where the executor made them (a chunk is whole
  // rows, or in 1D starts at a multiple of the tile's 2048 points).
  static const uint32_t* chunk_data_bits(const StageContext& ctx) {
    if (!ctx.data_bits) return nullptr;
    const uint64_t first = ctx.chunk_first_value, nx = ctx.field_dims.x;
    return ctx.data_bits + DataBits(ctx.field_dims).word(first % nx, first / nx);
  }

  static void check_field(const StageContext& ctx) {
    if (!is_float(ctx.dtype))
      fail(ErrorCode::invalid_argument, "lorenzo predicts f32 or f64 fields; use -m lossless for " + to_string(ctx.dtype));
  }

  std::vector<double> fill_;
  std::string span_;  // "tile", "chunk" or "auto"
  std::string axes_;  // "xyz" (every axis of the field), a subset, or "auto"
  bool tile_order_ = false;  // "code_order": "tile" (lorenzo.hh)
  StageSpec spec_;
};

}  // namespace

std::unique_ptr<Stage> make_lorenzo_stage(const nlohmann::json& params) { return std::make_unique<LorenzoStage>(params); }

}  // namespace fzg
