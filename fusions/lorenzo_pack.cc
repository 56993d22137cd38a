#include "fusions/lorenzo_pack.hh"

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "bitshuffle/bitshuffle.hh"
#include "lossless/zeroblock/shuffle_pack.hh"
#include "pipeline/error.hh"
#ifdef FZG_HAVE_CUDA
#include "pipeline/cuda_check.cuh"
#include "pipeline/launch.cuh"
#endif
#include "pipeline/timer.hh"
#include "predictors/lorenzo/lorenzo.hh"

namespace fzg {

namespace {

// Slabs of at most 32 M values (two 64 MB codes windows at most). Each slab costs a few
// microseconds of launch ramp and tail: at 100 M values, 8 M-value slabs ran 10-13 % slower
// than the stages in turn, 16 M 4-7 %, 32 M 0-3 % (one host round trip fewer than the stages
// makes up for most of it).
constexpr uint64_t default_slab_values = uint64_t(1) << 25;

#ifdef FZG_HAVE_CUDA
constexpr bool cuda_built = true;
#else
constexpr bool cuda_built = false;
#endif

bool reads(const GraphNode& node, int from, const char* port) {
  return node.inputs.size() == 1 && node.inputs[0].node == from && (from < 0 || node.inputs[0].port == port);
}

// A chain with nothing to do: the stages run (an empty field).
class Declined final : public PreparedChain {
 public:
  std::vector<Buffer> encode(const StageContext&) override { return {}; }
};

class LorenzoPack final : public ChainFusion {
 public:
  size_t length() const override { return 3; }

  bool matches(const Graph& graph, size_t first, Device device) const override {
    if (!cuda_built || device != Device::cuda || first + 3 > graph.nodes().size()) return false;
    const auto& n = graph.nodes();
    return n[first].type == "lorenzo" && reads(n[first], -1, "") && n[first + 1].type == "bitshuffle" &&
           reads(n[first + 1], int(first), "codes") && n[first + 2].type == "zero-block" &&
           reads(n[first + 2], int(first + 1), "out") && n[first + 2].stage->params().value("block_words", 0) == 1;
  }

  std::vector<PortRef> outputs(size_t first) const override {
    return {PortRef{int(first), "outliers"}, PortRef{int(first + 2), "out"}};
  }

  std::vector<uint64_t> input_sizes(const StageContext& ctx) const override {
    const uint64_t values = ctx.dims.count();
    return {values * dtype_size(ctx.dtype), 2 * values, bitshuffle::shuffled_size(2 * values)};
  }

  std::unique_ptr<PreparedChain> prepare(const StageContext& ctx, const Buffer& field) const override;
  void decode(const StageContext& ctx, const std::vector<Buffer>& outputs, Buffer& field) const override;
};

#ifdef FZG_HAVE_CUDA

// Tile rows a slab takes: whole rows, at least one; by default the field in as few slabs of
// the default size as it takes, all of about the same size.
uint64_t rows_per_slab(const StageContext& ctx, const lorenzo::TileRows& rows) {
  if (ctx.slab_values) return std::max<uint64_t>(1, std::min(rows.count, ctx.slab_values / rows.values_per_row));
  const uint64_t slab_rows = std::max<uint64_t>(1, default_slab_values / rows.values_per_row);
  const uint64_t slabs = (rows.count + slab_rows - 1) / slab_rows;
  return (rows.count + slabs - 1) / slabs;
}

// The second window of a field that takes more than one slab (a field of one slab has one).
Buffer second_window(uint64_t slab_rows, const lorenzo::TileRows& rows, uint64_t bytes, cudaStream_t stream) {
  return slab_rows < rows.count ? Buffer::device(bytes, stream) : Buffer();
}

// A second stream for the packing: a slab's pack runs beside the next slab's Lorenzo, so that
// neither kernel's ramp and tail leave the GPU idle. Events order them (see encode). The
// streams and events are the calling thread's, made on the device current at its first call.
class SideStream {
 public:
  explicit SideStream(cudaStream_t main) : main_(main) {}
  cudaStream_t get() const { return thread_stream(0); }
  // A third stream, for copies off the device: they wait for no kernel but the one they copy from.
  cudaStream_t copies() const { return thread_stream(1); }
  // An event marking the work queued so far on `stream`. Events are the thread's, reused by
  // its later calls: re-recording one leaves the waits already queued on it unchanged.
  cudaEvent_t record(cudaStream_t stream) {
    static thread_local std::vector<cudaEvent_t> events;
    if (used_ == events.size()) {
      cudaEvent_t e = nullptr;
      FZG_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      events.push_back(e);
    }
    cudaEvent_t e = events[used_++];
    FZG_CUDA_CHECK(cudaEventRecord(e, stream));
    return e;
  }
  void wait(cudaStream_t stream, cudaEvent_t e) {
    if (e) FZG_CUDA_CHECK(cudaStreamWaitEvent(stream, e, 0));
  }
  // The main stream waits for everything queued on the side stream.
  void join() { wait(main_, record(get())); }

 private:
  cudaStream_t main_;
  size_t used_ = 0;
};

// Slab k's Lorenzo writes window k % 2 (after whatever the last slab left of an unfinished
// chunk); its pack, on the side stream, reads that window and copies what it leaves of an
// unfinished chunk to the front of the other window, which the next slab's Lorenzo fills from
// past that point at the same time. A window is rewritten only once the pack that read it is
// done; packs run in order (the look-back needs every earlier chunk placed).
//
// The blocks scratch is sized for a stream of an eighth of an f32 field (ratio 8 and up): a
// stream that outgrows it is coded again into a scratch of its exact size, now known. One
// that outgrows half the codes is rare and near the size at which zero-block stores its
// input raw: the chain declines and the stages run in turn decide that.
class Slabs final : public PreparedChain {
 public:
  Slabs(const StageContext& ctx, const Buffer& field, uint64_t capacity)
      : field_(field),
        values_(ctx.dims.count()),
        predict_(field.data(), ctx.dtype, ctx.dims, ctx.stream),
        pack_(std::in_place, 2 * values_, ctx.stream, capacity),
        rows_(lorenzo::tile_rows(ctx.dims)),
        slab_rows_(rows_per_slab(ctx, rows_)) {
    const uint64_t window_bytes = 2 * (std::min(values_, slab_rows_ * rows_.values_per_row) + chunk_values);
    windows_[0] = Buffer::device(window_bytes, ctx.stream);
    windows_[1] = second_window(slab_rows_, rows_, window_bytes, ctx.stream);
  }

  std::vector<Buffer> encode(const StageContext& ctx) override {
    const uint64_t most = shuffle_pack::DeviceEncoder::max_capacity(2 * values_);
    unsigned long long totals[4];
    Buffer stream = code(ctx, totals);
    if (stream.size() > 0) return {predict_.outliers(ctx.quant, {totals[0], totals[1]}), stream};
    const uint64_t blocks = shuffle_pack::DeviceEncoder::blocks(totals + 2);
    if (blocks > most) return {};
    pack_.reset();  // its scratch goes before the exact one is taken
    trace::mark("lorenzo-pack: blocks outgrew the scratch, coding again");
    return Slabs(ctx, field_, blocks).encode(ctx);
  }

 private:
  static constexpr uint64_t chunk_values = shuffle_pack::DeviceEncoder::chunk_bytes / 2;

  // Codes every slab; the stream, or none when its blocks outgrew the scratch.
  Buffer code(const StageContext& ctx, unsigned long long totals[4]) {
    SideStream side(ctx.stream);  // each pack first waits for the main stream (state zeroed there too)
    cudaEvent_t window_read[2] = {nullptr, nullptr};  // the last pack that read each window
    int current = 0;
    uint64_t window_first = 0, next_chunk = 0;  // the window holds codes from window_first on
    for (uint64_t row = 0; row < rows_.count; row += slab_rows_) {
      const uint64_t end_row = std::min(rows_.count, row + slab_rows_);
      const uint64_t end_value = std::min(values_, end_row * rows_.values_per_row);
      uint8_t* window = windows_[current].data();
      side.wait(ctx.stream, window_read[current]);
      predict_.encode_rows(ctx.quant, row, end_row, reinterpret_cast<uint16_t*>(window), window_first);
      const bool last = end_row == rows_.count;
      const uint64_t end_chunk = last ? pack_->chunks() : end_value / chunk_values;
      if (end_chunk == next_chunk) continue;  // no chunk complete yet: the next slab adds to this window
      side.wait(side.get(), side.record(ctx.stream));
      shuffle_pack::Carry carry;
      if (!last) {
        carry.from = 2 * (end_chunk * chunk_values - window_first);
        carry.bytes = 2 * (end_value - end_chunk * chunk_values);
        carry.to = windows_[1 - current].data();
      }
      pack_->encode_chunks(next_chunk, end_chunk, window, carry, side.get());
      window_read[current] = side.record(side.get());
      current = 1 - current;
      window_first = end_chunk * chunk_values;
      next_chunk = end_chunk;
    }
    side.join();
    trace::mark("lorenzo-pack: slabs queued");
    // Host work before the host waits, while the last packs run: the windows go back to the
    // pool (stream-ordered after the packs), the stream's head is assembled from the totals on
    // the device, and both stages' totals are gathered for one read.
    windows_[0] = windows_[1] = Buffer();
    pack_->assemble();
    Buffer device_totals = Buffer::device(4 * sizeof(uint64_t), ctx.stream);
    copy_bytes_async(device_totals.data(), Location::device, predict_.totals(), Location::device, 16, ctx.stream);
    copy_bytes_async(device_totals.data() + 16, Location::device, pack_->totals(), Location::device, 16, ctx.stream);
    copy_bytes(totals, Location::host, device_totals.data(), Location::device, 4 * sizeof(uint64_t), ctx.stream);
    trace::mark("lorenzo-pack: totals read");
    return pack_->finish(totals + 2);
  }

  Buffer field_;
  uint64_t values_;
  lorenzo::DeviceEncoder predict_;
  std::optional<shuffle_pack::DeviceEncoder> pack_;
  lorenzo::TileRows rows_;
  uint64_t slab_rows_;
  Buffer windows_[2];
};

std::unique_ptr<PreparedChain> LorenzoPack::prepare(const StageContext& ctx, const Buffer& field) const {
  if (ctx.dims.count() == 0) return std::make_unique<Declined>();
  return std::make_unique<Slabs>(ctx, field, shuffle_pack::DeviceEncoder::max_capacity(2 * ctx.dims.count()) / 2);
}

// Slab k's codes are expanded on the side stream into codes window k % 2 while the main
// stream reconstructs slab k - 1 from the other; a window is refilled once the slab that read
// it is reconstructed. For a field going to the host, slab k is reconstructed into output
// window k % 2 and copied to the host (through the page-locked staging, the host waiting)
// while the GPU reconstructs slab k + 1: the device holds two slabs of the field, never all.
void LorenzoPack::decode(const StageContext& ctx, const std::vector<Buffer>& outputs, Buffer& field) const {
  const uint64_t values = ctx.dims.count(), value_bytes = dtype_size(ctx.dtype);
  constexpr uint64_t tile_values = bitshuffle::tile_bytes / 2;
  const Buffer& outliers = outputs.at(0);
  const Buffer& stream = outputs.at(1);
  shuffle_pack::DeviceDecoder expand(stream.as<uint32_t>(), stream.size(), 2 * values, ctx.stream);
  const bool to_host = !field.on_device();
  const lorenzo::TileRows rows = lorenzo::tile_rows(ctx.dims);
  const uint64_t slab_rows = rows_per_slab(ctx, rows);
  const uint64_t slab_values = std::min(values, slab_rows * rows.values_per_row);
  // A slab's codes, from the shuffle tile its first value lies in.
  const uint64_t window_bytes = 2 * (slab_values + 2 * tile_values);
  Buffer windows[2] = {Buffer::device(window_bytes, ctx.stream),
                       second_window(slab_rows, rows, window_bytes, ctx.stream)};
  Buffer slabs_out[2];
  if (to_host)
    slabs_out[0] = Buffer::device(slab_values * value_bytes, ctx.stream),
    slabs_out[1] = second_window(slab_rows, rows, slab_values * value_bytes, ctx.stream);
  SideStream side(ctx.stream);
  side.wait(side.get(), side.record(ctx.stream));  // the plan is made on the main stream
  cudaEvent_t window_read[2] = {nullptr, nullptr}, expanded[2] = {nullptr, nullptr};
  const uint64_t slabs = (rows.count + slab_rows - 1) / slab_rows;
  auto first_value = [&](uint64_t k) { return std::min(values, k * slab_rows * rows.values_per_row); };
  auto expand_slab = [&](uint64_t k) {
    side.wait(side.get(), window_read[k % 2]);
    expand.decode_tiles(first_value(k) / tile_values, (first_value(k + 1) + tile_values - 1) / tile_values,
                        windows[k % 2].data(), side.get());
    expanded[k % 2] = side.record(side.get());
  };
  expand_slab(0);
  // Reading the outlier counts waits for the host: the first slab expands meanwhile.
  lorenzo::DeviceDecoder restore(outliers.data(), outliers.size(), ctx.dtype, ctx.dims, ctx.quant, ctx.stream);
  // Once slab k is reconstructed; its output window is free again on return.
  std::unique_ptr<StagedDownload> download;
  if (to_host) download = std::make_unique<StagedDownload>(side.copies());
  auto download_slab = [&](uint64_t k) {
    side.wait(side.copies(), window_read[k % 2]);
    download->add(field.data() + first_value(k) * value_bytes, slabs_out[k % 2].data(),
                  (first_value(k + 1) - first_value(k)) * value_bytes);
  };
  for (uint64_t k = 0; k < slabs; ++k) {
    if (k + 1 < slabs) expand_slab(k + 1);
    side.wait(ctx.stream, expanded[k % 2]);
    restore.decode_rows(k * slab_rows, std::min(rows.count, (k + 1) * slab_rows), windows[k % 2].as<uint16_t>(),
                        first_value(k) / tile_values * tile_values, to_host ? slabs_out[k % 2].data() : field.data(),
                        to_host ? first_value(k) : 0);
    window_read[k % 2] = side.record(ctx.stream);
    if (to_host && k > 0) download_slab(k - 1);
  }
  if (to_host) download_slab(slabs - 1), download->finish();
  trace::mark("lorenzo-pack: slabs decoded");
}

#else

std::unique_ptr<PreparedChain> LorenzoPack::prepare(const StageContext&, const Buffer&) const {
  fail(ErrorCode::unsupported, "the fused lorenzo chain needs CUDA");
}
void LorenzoPack::decode(const StageContext&, const std::vector<Buffer>&, Buffer&) const {
  fail(ErrorCode::unsupported, "the fused lorenzo chain needs CUDA");
}

#endif

}  // namespace

std::unique_ptr<ChainFusion> make_lorenzo_pack_chain() { return std::make_unique<LorenzoPack>(); }

}  // namespace fzg
