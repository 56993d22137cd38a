// Runs a plan forwards (compress) and backwards (decompress), one chunk at a time, and
// assembles the container. The field's value range (for a predictor's header) is the one
// pass over the whole field; everything else happens per chunk, each chunk's outputs sized by
// its own counts.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <utility>

#include "core/checksum.hh"
#include "core/device_checks.hh"
#include "core/fzg.hh"
#include "core/plan.hh"
#include "runtime/lanes.hh"
#include "runtime/timer.hh"

namespace fzg {

namespace {

// Chunks a GPU call keeps in flight (see lanes.hh); stage timing and tracing run one lane.
constexpr unsigned chunk_lanes = 4;
unsigned lanes_for(const std::vector<StageTime>* times) { return times || trace::active() ? 1 : chunk_lanes; }

// Device bytes a chunk in flight may hold, from its field bytes: its input, the codes, their
// transform and the coded streams (each at most half an f32 chunk), with room to spare.
uint64_t chunk_need(uint64_t chunk_field_bytes) { return 3 * chunk_field_bytes; }

// Lanes that fit `available` device bytes at `per_chunk` each: at least one, or an error
// naming the budget when not even one chunk fits.
unsigned lanes_within(unsigned lanes, uint64_t per_chunk, uint64_t available) {
  if (per_chunk > available)
    fail(ErrorCode::invalid_argument, "the device memory budget leaves " + std::to_string(available) +
                                          " bytes, less than one chunk needs (" + std::to_string(per_chunk) +
                                          "); use a smaller chunk_values in the config");
  return unsigned(std::max<uint64_t>(1, std::min<uint64_t>(lanes, available / std::max<uint64_t>(1, per_chunk))));
}

// Device bytes a call may need without asking the device what is free: an eighth of its memory.
// Larger needs are checked against the free memory first, for a message that says what to do
// rather than an allocation's "out of memory".
bool small_beside_device(uint64_t bytes) { return bytes <= device_total_bytes() / 8; }

Location location_of(Device device) { return device == Device::cuda ? Location::device : Location::host; }

Buffer move_to(const Buffer& b, Location where, cudaStream_t stream) {
  if (b.location() == where) return b;
  return where == Location::device ? to_device(b, stream) : to_host(b, stream);
}

Buffer allocate(Location where, uint64_t bytes, cudaStream_t stream) {
  return where == Location::device ? Buffer::device(bytes, stream) : Buffer::host(bytes);
}

void check_device(Device device) {
  if (device == Device::cuda && !cuda_available())
    fail(ErrorCode::unsupported, "device cuda: this build or machine has no CUDA device");
}

uint64_t total_size(const std::vector<Buffer>& buffers) {
  uint64_t total = 0;
  for (const Buffer& b : buffers) total += b.size();
  return total;
}

// Stage times summed over the chunks, one entry per step (synchronizes per step when asked),
// each name behind `label` (the exact pass's steps: apart from the lossy pass's same stages).
class StepTimes {
 public:
  StepTimes(std::vector<StageTime>* times, Device device, cudaStream_t stream, std::string label = "")
      : times_(times), timer_(device, stream), label_(std::move(label)) {}
  void start() {
    if (times_) timer_.start();
  }
  bool active() const { return times_ != nullptr; }
  void stop(const std::string& step) {
    if (!times_) return;
    const double ms = timer_.stop_ms();
    const std::string name = label_ + step;
    for (auto& t : *times_)
      if (t.stage == name) {
        t.milliseconds += ms;
        return;
      }
    times_->push_back({name, ms});
  }

 private:
  std::vector<StageTime>* times_;
  RegionTimer timer_;
  std::string label_;
};

// A file in device memory from device streams: each stream is copied into place by a kernel
// that sums its checksum on the way (one read of the payload), then the metadata goes in and
// its checksums are completed on the device: the host queues it all and never waits.
// Returns an empty buffer when the file or a stream is not on the device.
Buffer assemble_on_device(Container& c, const std::vector<Buffer>& streams, Location output, cudaStream_t stream) {
  if (!cuda_built() || output != Location::device) return Buffer();
  for (const Buffer& s : streams)
    if (!s.on_device()) return Buffer();
#ifdef FZG_HAVE_CUDA
  const std::vector<uint8_t> metadata = write_metadata(c);  // checksums still zero: the device fills them in
  trace::mark("metadata written");
  std::vector<uint64_t> offsets;
  for (const auto& chunk : c.chunks) offsets.insert(offsets.end(), chunk.stream_offsets.begin(), chunk.stream_offsets.end());
  Buffer file = Buffer::device(c.total_bytes, stream);
  copy_streams_and_finish_device(metadata, streams, offsets, file.data(), stream);
  trace::mark("container queued");
  return file;
#else
  (void)c, (void)stream;
  return Buffer();
#endif
}

// The file on the host or the device from streams anywhere: checksums summed where each
// stream lives (one wait for all), then metadata and streams copied into place.
Buffer assemble(Container& c, const std::vector<Buffer>& streams, Location output, cudaStream_t stream) {
  Buffer file = assemble_on_device(c, streams, output, stream);
  if (file.size() > 0) return file;
  const std::vector<uint64_t> sums = checksums(streams, stream);
  trace::mark("checksums read");
  size_t s = 0;
  for (auto& chunk : c.chunks)
    for (auto& record : chunk.streams) record.checksum = sums[s++];
  const std::vector<uint8_t> metadata = write_metadata(c);
  file = allocate(output, c.total_bytes, stream);
  static const uint8_t zeros[8] = {};
  copy_bytes_async(file.data(), file.location(), metadata.data(), Location::host, metadata.size(), stream);
  s = 0;
  for (const auto& chunk : c.chunks)
    for (size_t k = 0; k < chunk.streams.size(); ++k, ++s) {
      const uint64_t at = chunk.stream_offsets[k], size = streams[s].size();
      copy_bytes_async(file.data() + at, file.location(), streams[s].data(), streams[s].location(), size, stream);
      copy_bytes_async(file.data() + at + size, file.location(), zeros, Location::host, padded8(size) - size, stream);
    }
  trace::mark("container copies queued");
  synchronize(stream);  // `metadata` and the streams are freed on return
  return file;
}

// A host field onto the device in pieces; with `range`, a float field's value range is
// reduced a piece at a time beside the copies of the next pieces (no pass of its own after
// the upload).
Buffer upload_with_range(const FieldRef& field, cudaStream_t stream, bool range, const MissingValues& missing,
                         double* min, double* max) {
#ifdef FZG_HAVE_CUDA
  Buffer input = Buffer::device(field.size_bytes(), stream);
  if (!range) {
    upload_in_pieces(input.data(), field.data, field.size_bytes(), stream, [](size_t, size_t) {});
    return input;
  }
  ArrivingRange arriving(field.dtype, stream, &missing);
  const uint64_t value_bytes = dtype_size(field.dtype);
  upload_in_pieces(input.data(), field.data, field.size_bytes(), stream,
                   [&](size_t at, size_t bytes) { arriving.add(input.data() + at, bytes / value_bytes); });
  arriving.result(min, max);
  return input;
#else
  (void)field, (void)stream, (void)range, (void)missing, (void)min, (void)max;
  fail(ErrorCode::unsupported, "this build of fzg has no CUDA backend");
#endif
}

// The field's finite range (of its points with data): a host field's into *min and *max; a
// device field's queued on `stream`, into `range` (min, max as two f64) for the host to read
// when it needs them or for a stage to resolve its quantization from on the device. A device
// field with fill values also gets its data bits in the same read, for the predictor
// (StageContext::data_bits).
struct FieldRange {
  Buffer range, data_bits;  // device memory, or empty
};
FieldRange value_range(const Buffer& field, DType dtype, const Dims& dims, cudaStream_t stream,
                       const MissingValues& missing, double* min, double* max) {
#ifdef FZG_HAVE_CUDA
  if (field.on_device() && !missing.empty()) {
    FieldRange r{Buffer::device(2 * sizeof(double), stream), Buffer::device(DataBits(dims).words() * sizeof(uint32_t), stream)};
    data_bits_device(field.data(), dtype, dims, missing, r.data_bits.as<uint32_t>(), stream, r.range.as<double>());
    return r;
  }
  if (field.on_device()) return {DeviceRange(field.data(), dtype, dims.count(), stream, &missing).reported(), Buffer()};
#endif
  (void)stream;
  finite_range(field.data(), dtype, dims.count(), min, max, &missing);
  return {};
}

// The lossy step resolved where the range is: each stage that needs the range resolves its
// quantization on the device (Stage::resolve_on_device), so that the chunks are queued with
// no host wait between the reduction and the encode; what each stage made is read back beside
// the chunks' own read-backs, for its header made again after the chunks. Where a stage
// cannot, the host waits for the range and nothing is resolved on the device.
struct ResolvedOnDevice {
  std::vector<Buffer> made;  // per node: what resolve_on_device returned (empty for the others)
  std::vector<std::unique_ptr<QueuedReadBack>> copies;  // per node, where `made` is not empty, once queued
  std::once_flag queued;
  explicit operator bool() const { return !copies.empty(); }
  // The read-backs, queued once, on a stream ordered after the resolution: by the first chunk
  // once its first step is queued, so that the copy and its event (~4 us of host time on an
  // H100) come after the encode's launch, not before it.
  void queue_copies(cudaStream_t stream) {
    if (copies.empty()) return;  // resolved on the host
    std::call_once(queued, [&] {
      for (size_t i = 0; i < made.size(); ++i)
        if (made[i].size()) copies[i] = std::make_unique<QueuedReadBack>(made[i].data(), made[i].size(), stream);
    });
  }
};
void resolve_on_device(const Graph& graph, const StageContext& base, const Buffer& range, FieldSummary& summary,
                       ResolvedOnDevice& r) {
  if (range.size() == 0) return;
  summary.device_range = range.as<double>();
  const size_t nodes = graph.nodes().size();
  r.made.resize(nodes);
  bool every = true;
  for (size_t i = 0; i < nodes && every; ++i) {
    const Stage& stage = *graph.nodes()[i].stage;
    if (!stage.spec().needs_value_range) continue;
    r.made[i] = stage.resolve_on_device(base, summary);
    every = r.made[i].size() > 0;
  }
  summary.device_range = nullptr;
  if (!every) {  // the host waits for the range
    r.made.clear();
    read_device_range(range.as<double>(), base.stream, &summary.min, &summary.max);
    return;
  }
  r.copies.resize(nodes);  // queued later (queue_copies)
}

// After the chunks: the headers of the stages that resolved on the device made again from
// what they resolved there (the header records what the encode used) and the header the
// chunks were coded with (its other choices).
void remake_headers(const Graph& graph, const StageContext& base, ResolvedOnDevice& resolved, FieldSummary summary,
                    std::vector<std::vector<uint8_t>>& headers) {
  resolved.queue_copies(base.stream);  // where no chunk has yet
  for (size_t i = 0; i < resolved.copies.size(); ++i) {
    if (!resolved.copies[i]) continue;
    summary.resolved = resolved.copies[i]->wait();
    StageContext ctx = base;
    const std::vector<uint8_t> first = headers[i];
    ctx.header = &first;
    headers[i] = graph.nodes()[i].stage->make_header(ctx, summary);
  }
}

bool needs_value_range(const Graph& graph) {
  for (const auto& node : graph.nodes())
    if (node.stage->spec().needs_value_range) return true;
  return false;
}

// Chunk k of the plan, computed on `lane`.
StageContext chunk_context(const StageContext& base, const Plan& plan, uint64_t k, cudaStream_t lane) {
  StageContext chunk = base;
  chunk.stream = lane;
  chunk.dims = plan.chunk_dims(k);
  chunk.chunk_first_value = plan.chunk_first_value(k);
  return chunk;
}

StageContext node_context(const StageContext& chunk, const std::vector<std::vector<uint8_t>>& headers, size_t node,
                          const std::vector<Buffer>* resolved = nullptr) {
  StageContext ctx = chunk;
  ctx.header = &headers.at(node);
  if (resolved && !resolved->empty() && resolved->at(node).size()) ctx.resolved = resolved->at(node).data();
  return ctx;
}

// A finished chunk's device stream waits for the file's assembly. A coder may return a slice
// of a larger scratch (shuffle-pack's has room for a block a word); where more chunks follow
// than run at once, such a stream is copied to memory of its own size, so that the streams
// held stay near the file's size rather than the codes'.
Buffer held_at_own_size(const Buffer& stream, cudaStream_t lane) {
  if (!stream.on_device() || stream.held_bytes() <= 2 * stream.size()) return stream;
  Buffer own = Buffer::device(stream.size(), lane);
  copy_bytes_async(own.data(), Location::device, stream.data(), Location::device, stream.size(), lane);
  return own;  // the scratch is freed in `lane`'s order, after the copy
}

// One chunk forwards: its stored streams (in store order), its stage records filled in.
// `resolved`: per node, what resolve_on_device made (or empty).
std::vector<Buffer> encode_chunk(const Plan& plan, const StageContext& chunk_ctx,
                                 const std::vector<std::vector<uint8_t>>& headers, const std::vector<Buffer>& resolved,
                                 const Buffer& field, ChunkRecord& record, StepTimes& times,
                                 const std::function<void()>& after_first_step = {}) {
  const Graph& graph = plan.graph;
  std::map<PortKey, Buffer> ports;
  ports[{-1, ""}] = field;
  record.stages.assign(graph.nodes().size(), {});
  for (const PlanStep& step : plan.steps) {
    const auto& node = graph.nodes()[step.first];
    const auto& spec = node.stage->spec();
    std::vector<Buffer> inputs;
    StageRecord& stage_record = record.stages[step.first];
    for (const auto& ref : node.inputs) {
      auto it = ports.find(key_of(ref));
      inputs.push_back(it->second);
      stage_record.input_sizes.push_back(it->second.size());
      ports.erase(it);  // consumed exactly once: free it as soon as the stage is done
    }
    const StageContext ctx = node_context(chunk_ctx, headers, step.first, &resolved);
    // Before a composite's raw decision waits for its output's size (read back after its
    // kernels), the outputs still pending from the steps before it (Buffer::deferred) are made:
    // their read-backs were queued first, so they land first, and the launches that making
    // them queues (an outlier placement, the mask runs) cost their host time while the GPU
    // still runs the composite, their GPU time following it at once, rather than both after
    // the wait. (The other coders wait for their sizes inside their encode: nothing to gain.)
    // The step's input is still held meanwhile, as it is for the raw fallback.
    auto make_pending = [&] {
      for (const auto& [key, buffer] : ports) (void)buffer.size();
    };
    times.start();
    if (step.composite) {
      // Two stages in one: recorded as if run in turn.
      const auto& next = graph.nodes()[step.first + 1];
      const auto& next_spec = next.stage->spec();
      StageRecord& next_record = record.stages[step.first + 1];
      next_record.input_sizes = {step.composite->intermediate_size(inputs[0].size())};
      Buffer fused = step.composite->encode(ctx, inputs[0]);
      make_pending();
      if (next_spec.stores_raw_when_larger && fused.size() >= next_record.input_sizes[0]) {
        fused = node.stage->encode(ctx, inputs).at(0);  // the intermediate itself is stored
        next_record.raw = true;
      }
      ports[{int(step.first + 1), next_spec.outputs[0].name}] = fused;
    } else {
      std::vector<Buffer> outputs = node.stage->encode(ctx, inputs);
      // A deferred output (Buffer::deferred) is made when first used: in its own step's time
      // where steps are timed, later otherwise (so that the next step is queued first).
      if (times.active())
        for (const Buffer& o : outputs) (void)o.size();
      if (spec.stores_raw_when_larger && total_size(outputs) >= total_size(inputs)) {
        for (size_t p = 0; p < outputs.size(); ++p) outputs[p] = p < inputs.size() ? inputs[p] : Buffer();
        stage_record.raw = true;
      }
      for (size_t p = 0; p < outputs.size(); ++p) ports[{int(step.first), spec.outputs[p].name}] = outputs[p];
    }
    times.stop(step.name + " encode");
    trace::mark("step encoded");
    if (after_first_step && &step == &plan.steps.front()) after_first_step();
  }
  std::vector<Buffer> streams;
  for (const auto& ref : graph.stored()) streams.push_back(ports.at(key_of(ref)));
  for (const Buffer& s : streams) record.streams.push_back({s.size(), 0});
  return streams;
}

// One chunk backwards from its stored streams into the chunk's bytes, where the plan computes,
// which `field()` gives when they are first needed: by then every stage after the one reading
// the field has decoded its claimed sizes, so a small file cannot make the caller allocate a
// huge field. Every size is checked against the plan's bounds and the stage's own
// check_outputs before anything is allocated from it.
template <typename FieldTarget>
void decode_chunk(const Plan& plan, const StageContext& chunk_ctx, const std::vector<std::vector<uint8_t>>& headers,
                  const ChunkRecord& record, const std::vector<Buffer>& streams, FieldTarget field_target,
                  StepTimes& times) {
  const uint64_t field_bytes = chunk_ctx.dims.count() * dtype_size(chunk_ctx.dtype);
  Buffer field;
  auto field_buffer = [&] {
    if (!field.data() && field_bytes) field = field_target();
    return field;
  };
  const Graph& graph = plan.graph;
  const Location where = location_of(plan.device);
  std::map<PortKey, Buffer> ports;
  for (size_t s = 0; s < streams.size(); ++s) {
    const PortKey key = key_of(graph.stored()[s]);
    require_data(streams[s].size() <= plan.bounds.at(key), "stream larger than its bound");
    ports[key] = streams[s];
  }
  // The input buffers of node i, at their recorded sizes; the graph input is `field`.
  auto allocate_inputs = [&](size_t i, const std::vector<Buffer>& outputs) {
    const auto& node = graph.nodes()[i];
    const StageRecord& r = record.stages[i];
    require_data(r.input_sizes.size() == node.inputs.size(), "stage input count");
    for (size_t p = 0; p < node.inputs.size(); ++p)
      require_data(r.input_sizes[p] <= plan.bounds.at(key_of(node.inputs[p])), "stage input size");
    if (!r.raw && !outputs.empty()) node.stage->check_outputs(node_context(chunk_ctx, headers, i), outputs, r.input_sizes);
    std::vector<Buffer> inputs;
    for (size_t p = 0; p < node.inputs.size(); ++p) {
      if (node.inputs[p].is_input()) {
        require_data(r.input_sizes[p] == field_bytes, "stage input size");
        inputs.push_back(field_buffer());
      } else {
        inputs.push_back(allocate(where, r.input_sizes[p], chunk_ctx.stream));
      }
    }
    return inputs;
  };
  auto take_outputs = [&](size_t i) {
    std::vector<Buffer> outputs;
    for (const auto& port : graph.nodes()[i].stage->spec().outputs) {
      auto it = ports.find({int(i), port.name});
      outputs.push_back(it->second);
      ports.erase(it);
    }
    return outputs;
  };
  auto publish_inputs = [&](size_t i, std::vector<Buffer>& inputs) {
    const auto& node = graph.nodes()[i];
    for (size_t p = 0; p < inputs.size(); ++p)
      if (!node.inputs[p].is_input()) ports[key_of(node.inputs[p])] = inputs[p];
  };
  for (size_t s = plan.steps.size(); s-- > 0;) {
    const PlanStep& step = plan.steps[s];
    const size_t last = step.first + step.length - 1;
    times.start();
    if (step.composite && !record.stages[last].raw) {
      const StageRecord& first_record = record.stages[step.first];
      require_data(!first_record.raw && first_record.input_sizes.size() == 1 &&
                       record.stages[last].input_sizes.size() == 1 &&
                       step.composite->intermediate_size(first_record.input_sizes[0]) ==
                           record.stages[last].input_sizes[0],
                   "fused stage sizes");
      std::vector<Buffer> outputs = take_outputs(last);
      graph.nodes()[last].stage->check_outputs(node_context(chunk_ctx, headers, last), outputs,
                                               record.stages[last].input_sizes);
      std::vector<Buffer> inputs = allocate_inputs(step.first, {});
      step.composite->decode(node_context(chunk_ctx, headers, step.first), outputs[0], inputs[0]);
      publish_inputs(step.first, inputs);
    } else {
      for (size_t i = last + 1; i-- > step.first;) {
        const auto& spec = graph.nodes()[i].stage->spec();
        const StageRecord& r = record.stages[i];
        std::vector<Buffer> outputs = take_outputs(i);
        std::vector<Buffer> inputs = allocate_inputs(i, outputs);
        if (r.raw) {
          require_data(spec.stores_raw_when_larger, "raw flag on a stage that never stores raw");
          for (size_t p = 0; p < outputs.size(); ++p) {
            if (p >= inputs.size()) {
              require_data(outputs[p].size() == 0, "raw stage with a non-empty extra output");
              continue;
            }
            require_data(outputs[p].size() == inputs[p].size(), "raw stage size");
            copy_bytes_async(inputs[p].data(), inputs[p].location(), outputs[p].data(), outputs[p].location(),
                             inputs[p].size(), chunk_ctx.stream);
          }
        } else {
          graph.nodes()[i].stage->decode(node_context(chunk_ctx, headers, i), outputs, inputs);
        }
        publish_inputs(i, inputs);
      }
    }
    times.stop(step.name + " decode");
    trace::mark("step decoded");
  }
  // A graph that stores its input: the stream is the field.
  auto it = ports.find({-1, ""});
  if (it != ports.end()) {
    require_data(it->second.size() == field_bytes, "decoded field size");
    field_buffer();
    copy_bytes_async(field.data(), field.location(), it->second.data(), it->second.location(), field_bytes,
                     chunk_ctx.stream);
  }
}

// The stages' headers for a file's graph: version 1 kept the predictor's in its fixed header.
std::vector<std::vector<uint8_t>> stage_headers_of(const Graph& graph, const Container& c) {
  std::vector<std::vector<uint8_t>> headers = c.stage_headers;
  require_data(headers.size() == graph.nodes().size(), "stage header count");
  if (c.header.version == 1)
    for (size_t i = 0; i < graph.nodes().size(); ++i)
      if (graph.nodes()[i].stage->spec().predictor) headers[i] = c.v1_predictor_header;
  return headers;
}

// Files of one session share a handful of graphs: each distinct stored graph is loaded once.
Graph stored_graph(const std::string& text) {
  static std::mutex mutex;
  static std::map<std::string, Graph> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = loaded.find(text);
  if (it != loaded.end()) return it->second;
  Graph graph;
  try {
    graph = Graph::from_text(text);
  } catch (const Error& e) {
    fail(ErrorCode::corrupt_data, std::string("corrupt data: the stored graph does not load: ") + e.what());
  }
  if (loaded.size() >= 64) loaded.clear();
  return loaded[text] = graph;
}

// With `exactly`, the graph's lossless stages code the field's bytes (its predictor left out)
// while the header still records the bound that was asked for.
Buffer compress_as_given(const Graph& graph_in, const FieldRef& field, const CompressOptions& options, bool exactly) {
  check_device(options.device);
  const bool lossless = options.bound.mode == ErrorMode::lossless;
  if (!lossless && !is_float(field.dtype))
    fail(ErrorCode::invalid_argument, "type " + to_string(field.dtype) + " is only compressed with -m lossless");
  if (!lossless && !(std::isfinite(options.bound.value) && options.bound.value >= 0))
    fail(ErrorCode::invalid_argument, "the error bound must be a finite non-negative number");
  if (!field.data) fail(ErrorCode::invalid_argument, "no field data");
  const Graph graph = lossless || exactly ? graph_in.without_predictor() : graph_in;
  const std::shared_ptr<const Plan> plan = make_plan(graph, options.device, field.dtype, field.dims);
  trace::mark("plan made");

  StageContext base;
  base.device = options.device;
  base.stream = options.stream;
  base.dtype = field.dtype;
  base.field_dims = field.dims;
  base.dims = field.dims;
  StepTimes times(options.stage_times, base.device, base.stream, exactly ? exact_pass_label : "");

  // The field where the plan computes, and its value range when a stage needs it.
  const bool range = needs_value_range(graph);
  const MissingValues missing = graph.missing_values(field.dtype);  // left out of the range
  FieldSummary summary;
  summary.bound = options.bound;
  Buffer input;
  FieldRange field_range;
  const uint64_t value_bytes = dtype_size(field.dtype);
  // A host field the device cannot hold beside its chunks' work stays on the host: its range
  // is reduced there, and each lane uploads its chunk and takes the chunk's streams back.
  const uint64_t per_chunk = chunk_need(plan->chunk_dims(0).count() * value_bytes);
  const bool host_field_on_gpu = field.where == Location::host && base.device == Device::cuda;
  // The device's free memory decides where a host field goes, how many chunks run at once and
  // whether a chunk's work fits; a device field of one chunk that is small beside the device
  // asks nothing (the query took ~20 us of a 2D field's ~190 us call on an H100).
  const bool ask = base.device == Device::cuda && (options.device_memory_budget || host_field_on_gpu ||
                                                   plan->chunks > 1 || !small_beside_device(per_chunk));
  const uint64_t budget = !ask ? 0 : options.device_memory_budget ? options.device_memory_budget : device_free_bytes();
  if (ask) trace::mark("device memory budget");
  const bool out_of_core = host_field_on_gpu && field.size_bytes() + chunk_lanes * per_chunk > budget;
  const bool uploads = host_field_on_gpu && !out_of_core;
  const unsigned lanes = !ask ? 1
                              : lanes_within(lanes_for(options.stage_times), per_chunk,
                                             uploads ? budget - std::min(budget, field.size_bytes()) : budget);
  times.start();
  if (out_of_core) {
    input = Buffer::view(const_cast<void*>(field.data), field.size_bytes(), field.where);
    if (range) value_range(input, field.dtype, field.dims, base.stream, missing, &summary.min, &summary.max);
    times.stop("value range");
  } else if (uploads) {
    input = upload_with_range(field, base.stream, range, missing, &summary.min, &summary.max);
    times.stop("upload");
  } else {
    input = Buffer::view(const_cast<void*>(field.data), field.size_bytes(), field.where);
    input = move_to(input, location_of(base.device), base.stream);
    if (field.where != input.location()) times.stop("upload");
    if (range) {
      times.start();
      field_range = value_range(input, field.dtype, field.dims, base.stream, missing, &summary.min, &summary.max);
      base.data_bits = field_range.data_bits.as<uint32_t>();
      times.stop("value range");
    }
  }
  trace::mark("value range");
  summary.field = &input;
  ResolvedOnDevice resolved;
  resolve_on_device(graph, base, field_range.range, summary, resolved);
  trace::mark(resolved ? "quantization resolved on the device" : "value range read");

  Container c;
  c.header = {field.dtype, options.bound.mode, field.dims, lossless ? 0.0 : options.bound.value};
  c.header.chunk_rows = plan->chunk_rows;
  c.graph_json = graph.canonical_text();
  for (size_t i = 0; i < graph.nodes().size(); ++i)
    c.stage_headers.push_back(graph.nodes()[i].stage->make_header(base, summary));
  trace::mark("headers made");

  c.chunks.resize(plan->chunks);
  std::vector<std::vector<Buffer>> chunk_streams(plan->chunks);
  run_in_lanes(base.device, base.stream, plan->chunks, lanes, [&](uint64_t k, cudaStream_t lane) {
    const StageContext chunk = chunk_context(base, *plan, k, lane);
    Buffer slice = input.slice(chunk.chunk_first_value * value_bytes, chunk.dims.count() * value_bytes);
    if (out_of_core) slice = to_device(slice, lane);
    chunk_streams[k] = encode_chunk(*plan, chunk, c.stage_headers, resolved.made, slice, c.chunks[k], times,
                                    [&] { resolved.queue_copies(lane); });
    if (out_of_core)
      for (Buffer& s : chunk_streams[k]) s = to_host(s, lane);
    else if (plan->chunks > lanes)
      for (Buffer& s : chunk_streams[k]) s = held_at_own_size(s, lane);
  });
  std::vector<Buffer> streams;
  for (const auto& s : chunk_streams) streams.insert(streams.end(), s.begin(), s.end());
  if (resolved) remake_headers(graph, base, resolved, summary, c.stage_headers);

  times.start();
  Buffer file = assemble(c, streams, options.output, base.stream);
  times.stop("container");
  lanes_wait_for(base.stream);  // the lanes' streams are read by the assembly until it is done
  return file;
}

}  // namespace

Device default_device() { return cuda_available() ? Device::cuda : Device::cpu; }

Buffer compress(const Graph& graph_in, const FieldRef& field, const CompressOptions& options) {
  const Graph graph = graph_in.with_fill_values_for(options.fill_values, options.bound.mode);
  Buffer file = compress_as_given(graph, field, options, false);
  // A bound so tight that the codes are mostly outliers (abs 1e-300) can make the lossy file
  // larger than the field. Below ratio 2 the field's bytes are also coded without the
  // predictor (exact, which meets any bound) and the smaller file is kept: the same choice on
  // every backend, as both files are. The header keeps the bound that was asked for.
  if (options.bound.mode == ErrorMode::lossless || 2 * file.size() <= field.size_bytes()) return file;
  Buffer exact_file = compress_as_given(graph, field, options, true);
  return exact_file.size() < file.size() ? exact_file : file;
}

namespace {

uint64_t little_endian_u64(const uint8_t* bytes) {
  uint64_t v = 0;
  for (int b = 7; b >= 0; --b) v = v << 8 | bytes[b];
  return v;
}

// The metadata alone, from a file on the host or the device.
Container read_container(const Buffer& file, cudaStream_t stream) {
  require_data(file.size() >= 8, "file shorter than its header");
  if (!file.on_device())
    return read_metadata(file.data(), std::min<uint64_t>(metadata_size_bound(file.data(), file.size()), file.size()),
                         file.size());
  // One read from the device covers the metadata of any usual graph; a larger one takes two
  // (and, past the first read, a read of 8 bytes a stage header for the metadata's limit).
  std::vector<uint8_t> metadata(std::min<uint64_t>(file.size(), 4096));
  copy_bytes(metadata.data(), Location::host, file.data(), file.location(), metadata.size(), stream);
  uint64_t available = std::min<uint64_t>(metadata_size_bound(metadata.data(), metadata.size()), file.size());
  if (available > metadata.size())
    available = metadata_bytes_to_read(metadata.data(), metadata.size(), file.size(), [&](uint64_t at) {
      uint8_t bytes[8];
      if (at + 8 <= metadata.size()) std::memcpy(bytes, metadata.data() + at, 8);
      else copy_bytes(bytes, Location::host, file.data() + at, file.location(), 8, stream);
      return little_endian_u64(bytes);
    });
  if (available > metadata.size()) {
    metadata.resize(available);
    copy_bytes(metadata.data(), Location::host, file.data(), file.location(), available, stream);
  }
  return read_metadata(metadata.data(), available, file.size());
}

// A file's graph, checked against its tables, with every stage header (version 1: the
// predictor's from the fixed header) checked and described; the predictor's quantization is
// put into the container's header.
struct CheckedGraph {
  Graph graph;
  std::vector<std::vector<uint8_t>> headers;  // one per node
  nlohmann::json described = nlohmann::json::object();  // node id -> its header, for the nodes that have one
};

CheckedGraph checked_graph(Container& c, bool describe = false) {
  CheckedGraph out;
  out.graph = stored_graph(c.graph_json);
  const Graph& graph = out.graph;
  require_data(graph.nodes().size() == c.stage_headers.size(), "stage table");
  for (const auto& chunk : c.chunks)
    require_data(chunk.stages.size() == graph.nodes().size() && chunk.streams.size() == graph.stored().size(),
                 "stage table");
  if (c.header.mode != ErrorMode::lossless) require_data(is_float(c.header.dtype), "lossy mode on an integer type");
  out.headers = stage_headers_of(graph, c);
  StageContext ctx;
  ctx.dtype = c.header.dtype;
  ctx.field_dims = ctx.dims = c.header.dims;
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Stage& stage = *graph.nodes()[i].stage;
    // Described for `fzg info` alone: decoding reads (and checks) every header itself, and the
    // JSON took ~13 us of a 2D field's GPU decompress call.
    if (describe && !out.headers[i].empty()) out.described[graph.nodes()[i].id] = stage.describe_header(ctx, out.headers[i]);
    if (stage.spec().predictor) c.header.quant = stage.quantization(out.headers[i]);
  }
  return out;
}

}  // namespace

Container inspect(const Buffer& file, cudaStream_t stream) {
  Container c = read_container(file, stream);
  checked_graph(c, true);
  return c;
}

nlohmann::json describe_stage_headers(const Container& c) {
  Container copy = c;
  return checked_graph(copy, true).described;
}

namespace {

// Decodes chunks [first, end) of a checked container into `destination` when it is given
// (caller memory at options.output holding those chunks' values), else into a buffer of its
// own. `source` holds the file's bytes from `source_offset` on (the whole file, or just those
// chunks' payload), 8-byte aligned.
Decompressed decode_chunks(Container& c, const CheckedGraph& checked, const Buffer& source, uint64_t source_offset,
                           uint64_t first, uint64_t end, const DecompressOptions& options, Buffer destination) {
  const Graph& graph = checked.graph;
  const std::vector<std::vector<uint8_t>>& headers = checked.headers;
  const std::shared_ptr<const Plan> plan =
      make_plan(graph, options.device, c.header.dtype, c.header.dims, c.header.chunk_rows);
  require_data(plan->chunks == c.chunks.size(), "chunk count");
  const uint64_t value_bytes = dtype_size(c.header.dtype);
  const uint64_t region_first = plan->chunk_first_value(first);
  const uint64_t field_bytes =
      (end < plan->chunks ? plan->chunk_first_value(end) : c.header.dims.count()) * value_bytes - region_first * value_bytes;
  if (destination.data() && destination.size() < field_bytes)
    fail(ErrorCode::invalid_argument, "the output holds " + std::to_string(destination.size()) + " bytes; the field needs " +
                                          std::to_string(field_bytes));
  trace::mark("graph loaded");
  StageContext base;
  base.device = options.device;
  base.stream = options.stream;
  base.dtype = c.header.dtype;
  base.field_dims = c.header.dims;
  StepTimes times(options.stage_times, base.device, base.stream);
  const Location compute = location_of(base.device);

  times.start();
  // Streams already on the device are checksummed by kernels that run while the stages
  // decode (every decoder checks its own input, so damage cannot make it misbehave); the sums
  // are compared before anything is returned. Host streams are checked first, on the CPU.
  // Each stream is summed with its padding, which must be zero (see PendingChecksums).
  std::vector<Buffer> views, padded_views;
  std::vector<uint64_t> stream_sizes, expected;
  for (uint64_t k = first; k < end; ++k)
    for (size_t s = 0; s < c.chunks[k].streams.size(); ++s) {
      const ChunkRecord& chunk = c.chunks[k];
      uint8_t* at = const_cast<uint8_t*>(source.data()) + (chunk.stream_offsets[s] - source_offset);
      views.push_back(Buffer::view(at, chunk.streams[s].size, source.location()));
      padded_views.push_back(Buffer::view(at, padded8(chunk.streams[s].size), source.location()));
      stream_sizes.push_back(chunk.streams[s].size);
      expected.push_back(chunk.streams[s].checksum);
    }
  PendingChecksums pending(padded_views, base.stream, stream_sizes);
  auto verify = [&](PendingChecksums& sums) {
    const std::vector<uint64_t> values = sums.finish();
    for (size_t s = 0; s < values.size(); ++s) require_data(values[s] == expected[s], "stream checksum mismatch");
  };
  // The decoders' checks of their streams, left on the device: read back once, after the
  // checksums (damage is reported as such first).
  std::unique_ptr<DeviceChecks> checks;
  if (base.device == Device::cuda) checks = std::make_unique<DeviceChecks>(base.stream);
  base.checks = checks.get();
  if (!source.on_device()) verify(pending);
  times.stop("verify");
  trace::mark("checksums queued");

  // The field: the caller's memory, or a buffer of its own where the output goes, made once
  // the first chunk needs it (see decode_chunk). Chunks are decoded where the plan computes;
  // when that is not where the output goes, each chunk goes through a chunk buffer there.
  Buffer data = destination.data() ? destination.slice(0, field_bytes) : Buffer();
  const bool direct = options.output == compute;
  unsigned lanes = lanes_for(options.stage_times);
  // As in compress: one small chunk into memory of its own needs no look at the free memory.
  if (base.device == Device::cuda && (options.device_memory_budget || end - first > 1 || !direct ||
                                      !small_beside_device(field_bytes + chunk_need(field_bytes)))) {
    const uint64_t budget = options.device_memory_budget ? options.device_memory_budget : device_free_bytes();
    const uint64_t resident = direct && !destination.data() ? field_bytes : 0;
    if (resident > budget)
      fail(ErrorCode::invalid_argument, "the field (" + std::to_string(field_bytes) +
                                            " bytes) does not fit the device memory budget; decompress to the host");
    lanes = lanes_within(lanes, chunk_need(plan->chunk_dims(first).count() * value_bytes), budget - resident);
    trace::mark("device memory budget");
  }
  std::mutex output_mutex;
  bool allocated_here = false;
  // The field for a chunk decoded on `lane`. A field fzg allocates is stream-ordered on
  // base.stream, and the lanes write it on their own streams: each lane's stream waits for
  // the allocation on the GPU. (A host synchronization here stalled every decode into memory
  // fzg allocates, fzg_decompress_to_buffer's, behind the checksum kernels.)
  auto output = [&](cudaStream_t lane) -> Buffer {
    std::lock_guard<std::mutex> lock(output_mutex);
    if (!data.data()) {
      data = allocate(options.output, field_bytes, base.stream);
      allocated_here = true;
    }
    if (allocated_here && data.on_device()) stream_wait(lane, base.stream);
    return data;
  };
  const size_t per_chunk = graph.stored().size();
  run_in_lanes(base.device, base.stream, end - first, lanes, [&](uint64_t i, cudaStream_t lane) {
    const uint64_t k = first + i;
    const StageContext chunk = chunk_context(base, *plan, k, lane);
    const uint64_t at = (chunk.chunk_first_value - region_first) * value_bytes, bytes = chunk.dims.count() * value_bytes;
    std::vector<Buffer> streams;
    for (size_t s = 0; s < per_chunk; ++s) streams.push_back(move_to(views[i * per_chunk + s], compute, lane));
    Buffer staging;
    auto target = [&] {
      if (direct) return output(lane).slice(at, bytes);
      staging = allocate(compute, bytes, lane);
      return staging;
    };
    decode_chunk(*plan, chunk, headers, c.chunks[k], streams, target, times);
    if (!direct && bytes) {
      times.start();
      if (options.output == Location::host && staging.on_device()) {
        // Through the kept page-locked buffers: a plain copy into pageable memory runs at a
        // fraction of the link's speed below the size where copy_bytes stages on its own.
        StagedDownload download(lane);
        download.add(output(lane).data() + at, staging.data(), bytes);
        download.finish();
      } else {
        copy_bytes(output(lane).data() + at, options.output, staging.data(), staging.location(), bytes, lane);
      }
      times.stop("download");
    }
  });
  output(base.stream);  // an empty field
  if (checks) checks->read_back_later();  // lands while the host waits for the checksums
  if (source.on_device()) verify(pending);
  if (checks) checks->finish();
  synchronize(base.stream);
  trace::mark("checksums compared");
  return {data, c.header};
}


// The whole field.
Decompressed decompress_to(const Buffer& file_in, const DecompressOptions& options, Buffer destination) {
  check_device(options.device);
  // Streams are read in place as typed arrays: keep the file 8-byte aligned.
  Buffer source = file_in;
  if (!file_in.on_device() && (reinterpret_cast<uintptr_t>(file_in.data()) & 7)) {
    source = Buffer::host(file_in.size());
    copy_bytes(source.data(), Location::host, file_in.data(), Location::host, file_in.size(), nullptr);
  }
  Container c = read_container(source, options.stream);
  trace::mark("metadata read");
  const CheckedGraph checked = checked_graph(c);
  if (options.check_header) options.check_header(c.header);
  return decode_chunks(c, checked, source, 0, 0, c.chunks.size(), options, destination);
}

// Copies the box out of a region of whole slowest-axis slices [slice0, ...) of the field.
Buffer crop(const Buffer& region, const Dims& dims, uint64_t value_bytes, uint64_t slice0, const Box& box) {
  const uint64_t nx = box.x1 - box.x0, ny = box.y1 - box.y0, nz = box.z1 - box.z0;
  Buffer out = Buffer::host(nx * ny * nz * value_bytes);
  // Region coordinates: the slowest axis starts at slice0.
  const uint64_t y_off = dims.rank == 2 ? slice0 : 0, z_off = dims.rank == 3 ? slice0 : 0;
  const uint64_t x_off = dims.rank == 1 ? slice0 : 0;
  for (uint64_t z = 0; z < nz; ++z)
    for (uint64_t y = 0; y < ny; ++y) {
      const uint64_t from = ((box.z0 + z - z_off) * dims.y + (box.y0 + y - y_off)) * dims.x + (box.x0 - x_off);
      std::memcpy(out.data() + (z * ny + y) * nx * value_bytes, region.data() + from * value_bytes, nx * value_bytes);
    }
  return out;
}

}  // namespace

namespace {

// A file's metadata read through `read`: its fixed header, then as much as that and the stage
// headers' sizes say the metadata can take (a damaged metadata size then costs a few reads of
// 8 bytes, not a read of the whole file).
Container read_container(const FileReader& read, uint64_t file_bytes) {
  require_data(file_bytes >= 8, "file shorter than its header");
  std::vector<uint8_t> head(std::min<uint64_t>(file_bytes, fixed_header_bytes_v1));
  read(0, head.size(), head.data());
  std::vector<uint8_t> metadata(metadata_bytes_to_read(head.data(), head.size(), file_bytes, [&](uint64_t at) {
    uint8_t bytes[8];
    read(at, 8, bytes);
    return little_endian_u64(bytes);
  }));
  read(0, metadata.size(), metadata.data());
  return read_metadata(metadata.data(), metadata.size(), file_bytes);
}

}  // namespace

Container inspect(const FileReader& read, uint64_t file_bytes) {
  Container c = read_container(read, file_bytes);
  checked_graph(c, true);
  return c;
}

Decompressed decompress_box(const FileReader& read, uint64_t file_bytes, const Box& box_in,
                            const DecompressOptions& options) {
  check_device(options.device);
  Container c = read_container(read, file_bytes);
  const CheckedGraph checked = checked_graph(c);
  if (options.check_header) options.check_header(c.header);
  const Dims& dims = c.header.dims;
  // Clipped to the field, as a numpy or h5py slice is; one that meets no point is an error
  // (named as it was asked for).
  Box box = box_in;
  box.x1 = std::min(box.x1, dims.x), box.y1 = std::min(box.y1, dims.y), box.z1 = std::min(box.z1, dims.z);
  if (!(box.x0 < box.x1 && box.y0 < box.y1 && box.z0 < box.z1))
    fail(ErrorCode::invalid_argument,
         "the box " + box_in.to_string() + " holds no point of the " + dims.to_string() + " field");
  // The chunks whose slowest-axis slices meet the box, and their payload alone.
  const uint64_t lo = dims.rank == 1 ? box.x0 : dims.rank == 2 ? box.y0 : box.z0;
  const uint64_t hi = dims.rank == 1 ? box.x1 : dims.rank == 2 ? box.y1 : box.z1;
  const uint64_t first = lo / c.header.chunk_rows, end = (hi + c.header.chunk_rows - 1) / c.header.chunk_rows;
  const uint64_t from = c.chunks[first].stream_offsets.empty() ? c.metadata_bytes : c.chunks[first].stream_offsets[0];
  const uint64_t to = end < c.chunks.size() && !c.chunks[end].stream_offsets.empty() ? c.chunks[end].stream_offsets[0]
                                                                                      : c.total_bytes;
  Buffer payload = Buffer::host(std::max<uint64_t>(to - from, 8));
  if (to > from) read(from, to - from, payload.data());
  DecompressOptions region_options = options;
  region_options.output = Location::host;
  const Decompressed region = decode_chunks(c, checked, payload, from, first, end, region_options, Buffer());
  Buffer out = crop(region.data, dims, dtype_size(c.header.dtype), first * c.header.chunk_rows, box);
  if (options.output == Location::device) out = to_device(out, options.stream);
  return {out, c.header};
}

Decompressed decompress_box(const Buffer& file, const Box& box, const DecompressOptions& options) {
  if (file.on_device()) {
    const Buffer host = to_host(file, options.stream);
    return decompress_box(host, box, options);
  }
  return decompress_box([&](uint64_t offset, uint64_t size, void* into) { std::memcpy(into, file.data() + offset, size); },
                        file.size(), box, options);
}

std::string Box::to_string() const {
  // An end left whole (the most a u64 holds) reads as the field's.
  auto end = [](uint64_t v) { return v == ~uint64_t(0) ? std::string("end") : std::to_string(v); };
  return "[" + std::to_string(x0) + ", " + end(x1) + ") x [" + std::to_string(y0) + ", " + end(y1) + ") x [" +
         std::to_string(z0) + ", " + end(z1) + ")";
}

Decompressed decompress(const Buffer& file, const DecompressOptions& options) {
  return decompress_to(file, options, Buffer());
}

Header decompress_into(const Buffer& file, void* destination, uint64_t capacity_bytes,
                       const DecompressOptions& options) {
  if (!destination) fail(ErrorCode::invalid_argument, "no output memory");
  return decompress_to(file, options, Buffer::view(destination, capacity_bytes, options.output)).header;
}

uint64_t max_compressed_size(const Graph& graph_in, DType dtype, const Dims& dims, ErrorMode mode) {
  const Graph graph = mode == ErrorMode::lossless ? graph_in.without_predictor() : graph_in;
  const std::shared_ptr<const Plan> plan = make_plan(graph, Device::cpu, dtype, dims);
  Container c;
  c.graph_json = graph.canonical_text();
  for (const auto& node : graph.nodes()) {
    StageContext ctx;
    ctx.dtype = dtype;
    ctx.field_dims = ctx.dims = dims;
    // Headers are small and data-independent in size for every stage so far: a sample stands in.
    FieldSummary summary;
    summary.bound = {mode == ErrorMode::lossless ? ErrorMode::abs : mode, 1};
    c.stage_headers.push_back(is_float(dtype) || !node.stage->spec().predictor ? node.stage->make_header(ctx, summary)
                                                                                 : std::vector<uint8_t>());
  }
  uint64_t payload = 0;
  for (uint64_t k = 0; k < plan->chunks; ++k) {
    ChunkRecord chunk;
    for (const auto& node : graph.nodes()) chunk.stages.push_back({false, std::vector<uint64_t>(node.inputs.size())});
    chunk.streams.resize(graph.stored().size());
    c.chunks.push_back(chunk);
    for (const auto& ref : graph.stored()) payload += padded8(plan->bounds.at(key_of(ref)));
  }
  return write_metadata(c).size() + payload;
}

}  // namespace fzg
