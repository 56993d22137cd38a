// Runs a graph forwards (compress) and backwards (decompress), and assembles the container.
#include <map>
#include <mutex>
#include <utility>

#include "pipeline/checksum.hh"
#include "pipeline/fusion.hh"
#include "pipeline/fzg.hh"
#include "pipeline/timer.hh"

namespace fzg {

namespace {

using PortKey = std::pair<int, std::string>;
PortKey key_of(const PortRef& ref) { return {ref.node, ref.is_input() ? std::string() : ref.port}; }

Location location_of(Device device) { return device == Device::cuda ? Location::device : Location::host; }

Buffer move_to(const Buffer& b, Location where, cudaStream_t stream) {
  if (b.location() == where) return b;
  return where == Location::device ? to_device(b, stream) : to_host(b, stream);
}

void check_device(Device device) {
  if (device == Device::cuda && !cuda_available())
    fail(ErrorCode::unsupported, "device cuda: this build or machine has no CUDA device");
}

// Upper bound of every port's size, propagated forwards from the field's size. A lossless
// stage never stores more than its input (it falls back to raw), so its bound is capped.
std::map<PortKey, uint64_t> port_bounds(const Graph& graph, const StageContext& ctx) {
  std::map<PortKey, uint64_t> bound;
  bound[{-1, ""}] = ctx.dims.count() * dtype_size(ctx.dtype);
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const auto& node = graph.nodes()[i];
    std::vector<uint64_t> in;
    for (const auto& ref : node.inputs) in.push_back(bound.at(key_of(ref)));
    std::vector<uint64_t> out = node.stage->max_output_sizes(ctx, in);
    const auto& spec = node.stage->spec();
    if (spec.stores_raw_when_larger && out[0] > in[0]) out[0] = in[0];
    for (size_t p = 0; p < out.size(); ++p) bound[{int(i), spec.outputs[p].name}] = out[p];
  }
  return bound;
}

// Whether node i's only output is node i + 1's only input (a pair a backend may fuse).
bool feeds_next(const Graph& graph, size_t i) {
  if (i + 1 >= graph.nodes().size()) return false;
  const auto& node = graph.nodes()[i];
  const auto& next = graph.nodes()[i + 1];
  return node.stage->spec().outputs.size() == 1 && next.inputs.size() == 1 && next.inputs[0].node == int(i) &&
         next.stage->spec().outputs.size() == 1;
}

// A file in device memory from device streams: each stream is copied into place by a kernel
// that sums its checksum on the way (one read of the payload), then the metadata goes in and
// its checksums are completed on the device: the host queues it all and never waits.
// Returns an empty buffer when the file or a stream is not on the device.
Buffer assemble_on_device(Container& c, const std::vector<Buffer>& streams, Location output, cudaStream_t stream) {
#ifdef FZG_HAVE_CUDA
  if (output != Location::device) return Buffer();
  for (const Buffer& s : streams)
    if (!s.on_device()) return Buffer();
  for (const Buffer& s : streams) c.streams.push_back({s.size(), 0});
  const std::vector<uint8_t> metadata = write_metadata(c);  // checksums still zero: the device fills them in
  Buffer file = Buffer::device(c.total_bytes, stream);
  Buffer sums = Buffer::device(streams.size() * sizeof(uint64_t), stream);
  checksum_copy_device(streams, c.stream_offsets, file.data(), sums.as<uint64_t>(), stream);
  finish_metadata_device(metadata, uint32_t(streams.size()), sums.as<uint64_t>(), file.data(), stream);
  trace::mark("container queued");
  return file;
#else
  (void)c, (void)streams, (void)output, (void)stream;
  return Buffer();
#endif
}

// A host field onto the device in pieces; a float field's value range is reduced a piece at a
// time beside the copies of the next pieces (no pass of its own after the upload).
Buffer upload_with_range(const FieldRef& field, cudaStream_t stream, double* min, double* max) {
#ifdef FZG_HAVE_CUDA
  Buffer input = Buffer::device(field.size_bytes(), stream);
  if (!is_float(field.dtype)) {
    upload_in_pieces(input.data(), field.data, field.size_bytes(), stream, [](size_t, size_t) {});
    return input;
  }
  ArrivingRange range(field.dtype, stream);
  const uint64_t value_bytes = dtype_size(field.dtype);
  upload_in_pieces(input.data(), field.data, field.size_bytes(), stream,
                   [&](size_t at, size_t bytes) { range.add(input.data() + at, bytes / value_bytes); });
  range.result(min, max);
  return input;
#else
  (void)field, (void)stream, (void)min, (void)max;
  fail(ErrorCode::unsupported, "this build of fzg has no CUDA backend");
#endif
}

// "predict+shuffle+pack": the ids of a chain's nodes.
std::string chain_name(const Graph& graph, size_t first, size_t length) {
  std::string name;
  for (size_t k = first; k < first + length; ++k) name += (k > first ? "+" : "") + graph.nodes()[k].id;
  return name;
}

void time_step(std::vector<StageTime>* times, const std::string& name, RegionTimer& timer) {
  if (times) times->push_back({name, timer.stop_ms()});
}

}  // namespace

Device default_device() { return cuda_available() ? Device::cuda : Device::cpu; }

namespace {

// With `exactly`, the graph's lossless stages code the field's bytes (its predictor left out)
// while the header still records the bound that was asked for.
Buffer compress_as_given(const Graph& graph_in, const FieldRef& field, const CompressOptions& options, bool exactly) {
  check_device(options.device);
  const bool lossless = options.bound.mode == ErrorMode::lossless;
  if (!lossless && !is_float(field.dtype))
    fail(ErrorCode::invalid_argument, "type " + to_string(field.dtype) + " is only compressed with -m lossless");
  if (!field.data) fail(ErrorCode::invalid_argument, "no field data");
  const Graph graph = lossless || exactly ? graph_in.without_predictor() : graph_in;

  StageContext ctx;
  ctx.device = options.device;
  ctx.stream = options.stream;
  ctx.dtype = field.dtype;
  ctx.dims = field.dims;
  ctx.slab_values = options.slab_values;
  RegionTimer timer(ctx.device, ctx.stream);

  double min = 0, max = 0;
  Buffer input;
  std::unique_ptr<PreparedChain> prepared;  // for the chain at node 0, set up early
  timer.start();
  if (field.where == Location::host && ctx.device == Device::cuda) {
    input = upload_with_range(field, ctx.stream, &min, &max);
    time_step(options.stage_times, "upload", timer);
  } else {
    input = Buffer::view(const_cast<void*>(field.data), field.size_bytes(), field.where);
    input = move_to(input, location_of(ctx.device), ctx.stream);
    if (field.where != input.location()) time_step(options.stage_times, "upload", timer);
    if (is_float(field.dtype)) {
      timer.start();
#ifdef FZG_HAVE_CUDA
      if (input.on_device()) {
        DeviceRange range(input.data(), field.dtype, field.dims.count(), ctx.stream);
        // The chain that reads the field is set up while the device reduces the range.
        if (const ChainFusion* chain = find_chain_starting(graph, 0, ctx.device)) prepared = chain->prepare(ctx, input);
        range.result(&min, &max);
      } else
#endif
        finite_range(input.data(), field.dtype, field.dims.count(), &min, &max);
      time_step(options.stage_times, "value range", timer);
    }
  }
  trace::mark("value range");
  ctx.quant = resolve_quantization(lossless ? ErrorBound{ErrorMode::lossless, 0} : options.bound, field.dtype, min, max);

  Container c;
  c.header = {field.dtype, options.bound.mode, field.dims, lossless ? 0.0 : options.bound.value, ctx.quant};
  c.graph_json = graph.canonical_text();
  trace::mark("quantization resolved");

  std::map<PortKey, Buffer> ports;
  ports[{-1, ""}] = input;
  c.stages.resize(graph.nodes().size());
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const auto& node = graph.nodes()[i];
    const auto& spec = node.stage->spec();
    std::vector<Buffer> inputs;
    StageRecord& record = c.stages[i];
    for (const auto& ref : node.inputs) {
      auto it = ports.find(key_of(ref));
      inputs.push_back(it->second);
      record.input_sizes.push_back(it->second.size());
      ports.erase(it);  // consumed exactly once: free it as soon as the stage is done
    }
    if (const ChainFusion* chain = find_chain_starting(graph, i, ctx.device)) {
      timer.start();
      std::unique_ptr<PreparedChain> run = i == 0 && prepared ? std::move(prepared) : chain->prepare(ctx, inputs[0]);
      std::vector<Buffer> outputs = run->encode(ctx);
      if (!outputs.empty()) {
        time_step(options.stage_times, chain_name(graph, i, chain->length()) + " encode", timer);
        const std::vector<uint64_t> sizes = chain->input_sizes(ctx);
        for (size_t k = 0; k < chain->length(); ++k) c.stages[i + k].input_sizes = {sizes[k]};
        const std::vector<PortRef> refs = chain->outputs(i);
        for (size_t p = 0; p < refs.size(); ++p) ports[key_of(refs[p])] = outputs[p];
        trace::mark("chain encoded");
        i += chain->length() - 1;
        continue;
      }
      trace::mark("chain declined");
    }
    const Fusion* fusion = feeds_next(graph, i) ? find_fusion(node, graph.nodes()[i + 1], ctx.device) : nullptr;
    if (fusion) {
      // Two stages in one: record both as if run in turn, skip the second.
      timer.start();
      Buffer fused = fusion->encode(ctx, inputs[0]);
      time_step(options.stage_times, node.id + "+" + graph.nodes()[i + 1].id + " encode", timer);
      const auto& next = graph.nodes()[i + 1];
      StageRecord& next_record = c.stages[i + 1];
      next_record.input_sizes = {fusion->intermediate_size(inputs[0].size())};
      if (next.stage->spec().stores_raw_when_larger && fused.size() >= next_record.input_sizes[0]) {
        fused = node.stage->encode(ctx, inputs).at(0);  // the intermediate itself is stored
        next_record.raw = true;
      }
      ports[{int(i + 1), next.stage->spec().outputs[0].name}] = fused;
      trace::mark("fused stage encoded");
      ++i;
      continue;
    }
    timer.start();
    std::vector<Buffer> outputs = node.stage->encode(ctx, inputs);
    time_step(options.stage_times, node.id + " encode", timer);
    if (spec.stores_raw_when_larger && outputs[0].size() >= inputs[0].size()) {
      outputs[0] = inputs[0];
      record.raw = true;
    }
    for (size_t p = 0; p < outputs.size(); ++p) ports[{int(i), spec.outputs[p].name}] = outputs[p];
    trace::mark("stage encoded");
  }

  timer.start();
  std::vector<Buffer> streams;
  for (const auto& ref : graph.stored()) streams.push_back(ports.at(key_of(ref)));
  Buffer file = assemble_on_device(c, streams, options.output, ctx.stream);
  if (file.size() > 0) {
    time_step(options.stage_times, "container", timer);
    return file;
  }
  const std::vector<uint64_t> sums = checksums(streams, ctx.stream);
  trace::mark("checksums read");
  for (size_t s = 0; s < streams.size(); ++s) c.streams.push_back({streams[s].size(), sums[s]});
  const std::vector<uint8_t> metadata = write_metadata(c);
  file = options.output == Location::device ? Buffer::device(c.total_bytes, ctx.stream) : Buffer::host(c.total_bytes);
  static const uint8_t zeros[8] = {};
  copy_bytes_async(file.data(), file.location(), metadata.data(), Location::host, metadata.size(), ctx.stream);
  for (size_t s = 0; s < streams.size(); ++s) {
    const uint64_t at = c.stream_offsets[s], size = streams[s].size();
    copy_bytes_async(file.data() + at, file.location(), streams[s].data(), streams[s].location(), size, ctx.stream);
    copy_bytes_async(file.data() + at + size, file.location(), zeros, Location::host, padded8(size) - size, ctx.stream);
  }
  trace::mark("container copies queued");
  synchronize(ctx.stream);  // `metadata` and the streams are freed on return
  time_step(options.stage_times, "container", timer);
  return file;
}

}  // namespace

Buffer compress(const Graph& graph, const FieldRef& field, const CompressOptions& options) {
  Buffer file = compress_as_given(graph, field, options, false);
  // A bound so tight that the codes are mostly outliers (abs 1e-300) can make the lossy file
  // larger than the field. Below ratio 2 the field's bytes are also coded without the
  // predictor (exact, which meets any bound) and the smaller file is kept: the same choice on
  // every backend, as both files are. The header keeps the bound that was asked for.
  if (options.bound.mode == ErrorMode::lossless || 2 * file.size() <= field.size_bytes()) return file;
  Buffer exact_file = compress_as_given(graph, field, options, true);
  return exact_file.size() < file.size() ? exact_file : file;
}

Container inspect(const Buffer& file, cudaStream_t stream) {
  require_data(file.size() >= fixed_header_bytes, "file shorter than its header");
  if (!file.on_device())
    return read_metadata(file.data(), std::min<uint64_t>(metadata_size_bound(file.data(), file.size()), file.size()),
                         file.size());
  // One read from the device covers the metadata of any usual graph; a larger one takes two.
  std::vector<uint8_t> metadata(std::min<uint64_t>(file.size(), 4096));
  copy_bytes(metadata.data(), Location::host, file.data(), file.location(), metadata.size(), stream);
  const uint64_t available = std::min<uint64_t>(metadata_size_bound(metadata.data(), metadata.size()), file.size());
  if (available > metadata.size()) {
    metadata.resize(available);
    copy_bytes(metadata.data(), Location::host, file.data(), file.location(), available, stream);
  }
  return read_metadata(metadata.data(), available, file.size());
}

namespace {

// Whether a chain's nodes were recorded as the chain would have run them: none stored raw,
// each input of the size the chain derives from the field.
bool chain_applies(const ChainFusion& chain, const Container& c, size_t first, const StageContext& ctx) {
  const std::vector<uint64_t> sizes = chain.input_sizes(ctx);
  for (size_t k = 0; k < chain.length(); ++k) {
    const StageRecord& record = c.stages[first + k];
    if (record.raw || record.input_sizes != std::vector<uint64_t>{sizes[k]}) return false;
  }
  return true;
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

// Decompresses into `destination` when it is given (caller memory at options.output), else
// into a buffer of its own.
Decompressed decompress_to(const Buffer& file_in, const DecompressOptions& options, Buffer destination) {
  check_device(options.device);
  // Streams are read in place as typed arrays: keep the file 8-byte aligned.
  Buffer source = file_in;
  if (!file_in.on_device() && (reinterpret_cast<uintptr_t>(file_in.data()) & 7)) {
    source = Buffer::host(file_in.size());
    copy_bytes(source.data(), Location::host, file_in.data(), Location::host, file_in.size(), nullptr);
  }

  const Container c = inspect(source, options.stream);
  trace::mark("metadata read");
  const Graph graph = stored_graph(c.graph_json);
  require_data(graph.nodes().size() == c.stages.size() && graph.stored().size() == c.streams.size(), "stage table");
  if (c.header.mode != ErrorMode::lossless) require_data(is_float(c.header.dtype), "lossy mode on an integer type");

  StageContext ctx;
  ctx.device = options.device;
  ctx.stream = options.stream;
  ctx.dtype = c.header.dtype;
  ctx.dims = c.header.dims;
  ctx.quant = c.header.quant;
  ctx.slab_values = options.slab_values;
  RegionTimer timer(ctx.device, ctx.stream);
  const auto bounds = port_bounds(graph, ctx);
  const uint64_t field_bytes = c.header.dims.count() * dtype_size(c.header.dtype);
  if (destination.data() && destination.size() < field_bytes)
    fail(ErrorCode::invalid_argument, "the output holds " + std::to_string(destination.size()) + " bytes; the field needs " +
                                          std::to_string(field_bytes));
  trace::mark("graph loaded");

  timer.start();
  std::map<PortKey, Buffer> ports;
  // Streams already on the device are checksummed by kernels that run while the stages
  // decode (every decoder checks its own input, so damage cannot make it misbehave); the sums
  // are compared before anything is returned. Host streams are checked first, on the CPU.
  // Each stream is summed with its padding, which must be zero (see PendingChecksums).
  std::vector<Buffer> views, padded_views;
  std::vector<uint64_t> stream_sizes;
  for (size_t s = 0; s < c.streams.size(); ++s) {
    uint8_t* at = const_cast<uint8_t*>(source.data()) + c.stream_offsets[s];
    views.push_back(Buffer::view(at, c.streams[s].size, source.location()));
    padded_views.push_back(Buffer::view(at, padded8(c.streams[s].size), source.location()));
    stream_sizes.push_back(c.streams[s].size);
  }
  PendingChecksums pending(padded_views, ctx.stream, stream_sizes);
  auto verify = [&](PendingChecksums& sums) {
    const std::vector<uint64_t> values = sums.finish();
    for (size_t s = 0; s < views.size(); ++s) require_data(values[s] == c.streams[s].checksum, "stream checksum mismatch");
  };
  if (!source.on_device()) verify(pending);
  for (size_t s = 0; s < views.size(); ++s) {
    const PortKey key = key_of(graph.stored()[s]);
    require_data(views[s].size() <= bounds.at(key), "stream larger than its bound");
    ports[key] = move_to(views[s], location_of(ctx.device), ctx.stream);
  }
  time_step(options.stage_times, "verify", timer);
  trace::mark("checksums queued");

  for (size_t i = graph.nodes().size(); i-- > 0;) {
    const auto& node = graph.nodes()[i];
    const auto& spec = node.stage->spec();
    const StageRecord& record = c.stages[i];
    require_data(record.input_sizes.size() == node.inputs.size(), "stage input count");
    for (size_t p = 0; p < node.inputs.size(); ++p)
      require_data(record.input_sizes[p] <= bounds.at(key_of(node.inputs[p])), "stage input size");
    if (const ChainFusion* chain = find_chain_ending(graph, i, ctx.device)) {
      const size_t first = i + 1 - chain->length();
      if (chain_applies(*chain, c, first, ctx)) {
        std::vector<Buffer> outputs;
        for (const PortRef& ref : chain->outputs(first)) {
          auto it = ports.find(key_of(ref));
          outputs.push_back(it->second);
          ports.erase(it);
        }
        timer.start();
        Buffer field = destination.data() ? destination.slice(0, field_bytes)
                       : options.output == Location::host ? Buffer::host(field_bytes)
                                                          : Buffer::device(field_bytes, ctx.stream);
        chain->decode(ctx, outputs, field);
        ports[key_of(graph.nodes()[first].inputs[0])] = field;
        time_step(options.stage_times, chain_name(graph, first, chain->length()) + " decode", timer);
        trace::mark("chain decoded");
        i = first;
        continue;
      }
    }
    std::vector<Buffer> outputs;
    for (const auto& port : spec.outputs) {
      auto it = ports.find({int(i), port.name});
      outputs.push_back(it->second);
      ports.erase(it);
    }
    if (record.raw) require_data(spec.stores_raw_when_larger, "raw flag on a stage that never stores raw");
    const GraphNode* previous = i > 0 && feeds_next(graph, i - 1) ? &graph.nodes()[i - 1] : nullptr;
    const Fusion* fusion = previous && !record.raw ? find_fusion(*previous, node, ctx.device) : nullptr;
    if (fusion) {
      const StageRecord& previous_record = c.stages[i - 1];
      require_data(previous_record.input_sizes.size() == 1 &&
                       previous_record.input_sizes[0] <= bounds.at(key_of(previous->inputs[0])) &&
                       fusion->intermediate_size(previous_record.input_sizes[0]) == record.input_sizes[0],
                   "fused stage sizes");
      timer.start();
      ports[key_of(previous->inputs[0])] = fusion->decode(ctx, outputs[0], previous_record.input_sizes[0]);
      time_step(options.stage_times, previous->id + "+" + node.id + " decode", timer);
      trace::mark("fused stage decoded");
      --i;
      continue;
    }
    std::vector<Buffer> inputs;
    if (record.raw) {
      inputs = outputs;
    } else {
      timer.start();
      inputs = node.stage->decode(ctx, outputs, record.input_sizes);
      time_step(options.stage_times, node.id + " decode", timer);
      trace::mark("stage decoded");
    }
    for (size_t p = 0; p < inputs.size(); ++p) {
      require_data(inputs[p].size() == record.input_sizes[p], "decoded size differs from the recorded size");
      ports[key_of(node.inputs[p])] = inputs[p];
    }
  }
  if (source.on_device()) verify(pending);
  trace::mark("checksums compared");
  Buffer data = ports.at({-1, ""});
  require_data(data.size() == field_bytes, "decoded field size");
  timer.start();
  // A field stored as a stream (a graph storing `input`, a stage stored raw on it) is still a
  // view into the file, which may be a copy freed on return or the caller's own buffer: it
  // gets memory of its own.
  const bool view_of_file = data.location() == source.location() && data.data() >= source.data() &&
                            data.data() < source.data() + source.size();
  if (view_of_file && !destination.data()) {
    Buffer own = data.on_device() ? Buffer::device(field_bytes, ctx.stream) : Buffer::host(field_bytes);
    copy_bytes(own.data(), own.location(), data.data(), data.location(), field_bytes, ctx.stream);
    data = own;
  }
  if (destination.data() && data.data() != destination.data()) {
    copy_bytes(destination.data(), destination.location(), data.data(), data.location(), field_bytes, ctx.stream);
    data = destination.slice(0, field_bytes);
  }
  data = move_to(data, options.output, ctx.stream);
  if (options.output != location_of(ctx.device)) time_step(options.stage_times, "download", timer);
  return {data, c.header};
}

}  // namespace

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
  StageContext ctx;
  ctx.dtype = dtype;
  ctx.dims = dims;
  const auto bounds = port_bounds(graph, ctx);
  Container c;
  c.graph_json = graph.canonical_text();
  for (const auto& node : graph.nodes()) c.stages.push_back({false, std::vector<uint64_t>(node.inputs.size())});
  c.streams.resize(graph.stored().size());
  uint64_t total = write_metadata(c).size();
  for (const auto& ref : graph.stored()) total += padded8(bounds.at(key_of(ref)));
  return total;
}

}  // namespace fzg
