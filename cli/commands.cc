// compress, decompress, info, eval and gen.
#include "cli/commands.hh"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "bench/fzgpu_reference.hh"
#include "pipeline/metrics.hh"
#include "predictors/lorenzo/lorenzo.hh"
#include "pipeline/timer.hh"

namespace fzg::cli {

Device parse_device(const std::string& name) {
  if (name == "auto") return default_device();
  if (name == "cpu") return Device::cpu;
  if (name == "cuda") {
    if (!cuda_available()) fail(ErrorCode::unsupported, "--device cuda: no CUDA device is available");
    return Device::cuda;
  }
  fail(ErrorCode::invalid_argument, "unknown device '" + name + "' (expected auto, cpu or cuda)");
}

Graph load_graph(const std::string& config_path) {
  return config_path.empty() ? Graph::default_fz() : Graph::from_file(config_path);
}

ErrorBound parse_bound(const CodecArgs& a) {
  ErrorBound b{parse_error_mode(a.mode), a.error_bound};
  if (b.mode == ErrorMode::lossless) return b;
  if (!std::isfinite(b.value) || b.value <= 0)
    fail(ErrorCode::invalid_argument, "the error bound -e must be a positive finite number");
  if (b.mode == ErrorMode::rel && b.value >= 1)
    fail(ErrorCode::invalid_argument, "a rel bound is a fraction of the value range, below 1");
  return b;
}

Buffer read_file(const std::string& path) {
  std::string bytes;
  if (path == "-") {
    bytes.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(ErrorCode::io, "cannot open '" + path + "'");
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    if (size < 0) fail(ErrorCode::io, "cannot read '" + path + "'");
    in.seekg(0);
    Buffer b = Buffer::host(uint64_t(size));
    if (!in.read(reinterpret_cast<char*>(b.data()), size)) fail(ErrorCode::io, "cannot read '" + path + "'");
    return b;
  }
  Buffer b = Buffer::host(bytes.size());
  std::copy(bytes.begin(), bytes.end(), b.data());
  return b;
}

void write_file(const std::string& path, const uint8_t* data, uint64_t size) {
  if (path == "-") {
    std::cout.write(reinterpret_cast<const char*>(data), std::streamsize(size));
    std::cout.flush();
    if (!std::cout) fail(ErrorCode::io, "cannot write to standard output");
    return;
  }
  // A reader never sees a half-written file: write beside it, then rename over it.
  const std::string temporary = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) fail(ErrorCode::io, "cannot create '" + path + "'");
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
    out.close();
    if (!out) {
      std::remove(temporary.c_str());
      fail(ErrorCode::io, "cannot write '" + path + "'");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    fail(ErrorCode::io, "cannot rename onto '" + path + "'");
  }
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

FieldRef load_field(const FieldArgs& a, Buffer& bytes) {
  FieldRef f;
  f.dtype = parse_dtype(a.type);
  if (a.dims.empty()) fail(ErrorCode::invalid_argument, "the field's dimensions are required (-l, e.g. 500x500x100)");
  f.dims = parse_dims(a.dims, a.slowest_first);
  if (!a.gen_kind.empty()) {
    bytes = synthesize(parse_synth_kind(a.gen_kind), f.dtype, f.dims, a.seed);
  } else {
    if (a.input.empty()) fail(ErrorCode::invalid_argument, "an input is required (-i FILE, or --gen KIND)");
    bytes = read_file(a.input);
    if (bytes.size() != f.size_bytes())
      fail(ErrorCode::invalid_argument, "'" + a.input + "' holds " + std::to_string(bytes.size()) + " bytes but " +
                                            f.dims.to_string() + " " + a.type + " needs " +
                                            std::to_string(f.size_bytes()));
  }
  f.data = bytes.data();
  f.where = Location::host;
  return f;
}

int run_compress(const CompressArgs& a) {
  if (a.output.empty()) fail(ErrorCode::invalid_argument, "an output is required (-o FILE or -o -)");
  const Graph graph = load_graph(a.codec.config);
  CompressOptions options;
  options.bound = parse_bound(a.codec);
  options.device = parse_device(a.codec.device);
  Buffer storage;
  const FieldRef field = load_field(a.field, storage);
  const Buffer file = compress(graph, field, options);
  write_file(a.output, file.data(), file.size());
  if (a.output != "-")
    std::cerr << "fzg: " << field.size_bytes() << " -> " << file.size() << " bytes, ratio "
              << double(field.size_bytes()) / double(file.size()) << "\n";
  return 0;
}

int run_decompress(const DecompressArgs& a) {
  if (a.input.empty() || a.output.empty()) fail(ErrorCode::invalid_argument, "decompress needs -i FILE and -o FILE");
  DecompressOptions options;
  options.device = parse_device(a.device);
  const Buffer file = read_file(a.input);
  const Decompressed out = decompress(file, options);
  write_file(a.output, out.data.data(), out.data.size());
  return 0;
}

int run_info(const std::string& path, bool json) {
  const Buffer file = read_file(path);
  const Container c = inspect(file);
  const nlohmann::json graph = nlohmann::json::parse(c.graph_json);
  nlohmann::json streams = nlohmann::json::array();
  for (size_t s = 0; s < c.streams.size(); ++s)
    streams.push_back({{"name", graph["store"][s]}, {"size_bytes", c.streams[s].size},
                       {"checksum", c.streams[s].checksum}, {"offset", c.stream_offsets[s]}});
  nlohmann::json stages = nlohmann::json::array();
  for (size_t i = 0; i < c.stages.size(); ++i)
    stages.push_back({{"id", graph["stages"][i]["id"]}, {"raw", c.stages[i].raw}, {"input_sizes", c.stages[i].input_sizes}});
  const auto& h = c.header;
  const uint64_t original = h.dims.count() * dtype_size(h.dtype);
  nlohmann::json report = {{"format_version", container_version},
                           {"dtype", to_string(h.dtype)},
                           {"dims", h.dims.to_string()},
                           {"mode", to_string(h.mode)},
                           {"requested_bound", h.requested_bound},
                           {"absolute_bound", h.quant.error_bound},
                           {"step", h.quant.step},
                           {"min", h.quant.min},
                           {"max", h.quant.max},
                           {"file_bytes", c.total_bytes},
                           {"original_bytes", original},
                           {"ratio", double(original) / double(c.total_bytes)},
                           {"graph", graph},
                           {"stages", stages},
                           {"streams", streams}};
  if (json) {
    std::cout << report.dump(2) << "\n";
    return 0;
  }
  std::printf("fzg file, format version %u\n", unsigned(container_version));
  std::printf("  field      %s %s (%llu values)\n", to_string(h.dtype).c_str(), h.dims.to_string().c_str(),
              (unsigned long long)h.dims.count());
  std::printf("  bound      %s %g -> absolute %.6g (step %.6g), value range [%.6g, %.6g]\n", to_string(h.mode).c_str(),
              h.requested_bound, h.quant.error_bound, h.quant.step, h.quant.min, h.quant.max);
  std::printf("  size       %llu bytes from %llu, ratio %.3f\n", (unsigned long long)c.total_bytes,
              (unsigned long long)original, double(original) / double(c.total_bytes));
  std::printf("  graph      %s\n", graph.value("name", std::string("?")).c_str());
  for (size_t i = 0; i < c.stages.size(); ++i) {
    std::string sizes;
    for (auto s : c.stages[i].input_sizes) sizes += (sizes.empty() ? "" : ", ") + std::to_string(s);
    std::printf("    %-10s %-12s inputs %s bytes%s\n", graph["stages"][i]["id"].get<std::string>().c_str(),
                graph["stages"][i]["type"].get<std::string>().c_str(), sizes.c_str(), c.stages[i].raw ? " (stored raw)" : "");
  }
  std::printf("  streams\n");
  for (size_t s = 0; s < c.streams.size(); ++s)
    std::printf("    %-18s %12llu bytes at %llu, fzg64 %016llx\n", graph["store"][s].get<std::string>().c_str(),
                (unsigned long long)c.streams[s].size, (unsigned long long)c.stream_offsets[s],
                (unsigned long long)c.streams[s].checksum);
  return 0;
}

int run_eval(const EvalArgs& a) {
  const Graph graph = load_graph(a.codec.config);
  const ErrorBound bound = parse_bound(a.codec);
  const Device device = parse_device(a.codec.device);
  if (a.repeat < 1 || a.repeat > 1000) fail(ErrorCode::invalid_argument, "--repeat must be in [1, 1000]");
  Buffer storage;
  const FieldRef field = load_field(a.field, storage);
  CompressOptions copt;
  copt.bound = bound;
  copt.device = device;
  DecompressOptions dopt;
  dopt.device = device;

  // End to end, host to host: what a file-based user gets. Run once to warm up.
  Buffer file = compress(graph, field, copt);
  Decompressed out = decompress(file, dopt);
  std::vector<double> compress_ms, decompress_ms;
  for (int r = 0; r < a.repeat; ++r) {
    RegionTimer timer(Device::cpu, nullptr);
    timer.start();
    file = compress(graph, field, copt);
    compress_ms.push_back(timer.stop_ms());
    timer.start();
    out = decompress(file, dopt);
    decompress_ms.push_back(timer.stop_ms());
  }
  const Metrics m = compare_fields(field.data, out.data.data(), field.dtype, field.dims.count(),
                                   out.header.quant.error_bound);
  const double bytes = double(field.size_bytes());
  const double ratio = bytes / double(file.size());
  const double c_gbs = bytes / (median(compress_ms) * 1e6), d_gbs = bytes / (median(decompress_ms) * 1e6);
  const std::string source = a.field.gen_kind.empty() ? a.field.input : "gen:" + a.field.gen_kind;
  // The yardstick: the same codes (and fzg's outlier stream) in FZ-GPU's lossless format.
  double fzgpu_ratio = 0;
  if (bound.mode != ErrorMode::lossless) {
    std::vector<uint16_t> codes(field.dims.count());
    const Buffer outliers = lorenzo::encode_cpu(field.data, field.dtype, field.dims, out.header.quant, codes.data());
    fzgpu_ratio = bytes / double(bench::fzgpu_format_bytes(codes.data(), codes.size()) + outliers.size());
  }
  nlohmann::json report = {{"field", source},
                           {"dtype", a.field.type},
                           {"dims", field.dims.to_string()},
                           {"mode", a.codec.mode},
                           {"requested_bound", bound.value},
                           {"absolute_bound", out.header.quant.error_bound},
                           {"config", graph.name()},
                           {"device", device == Device::cuda ? "cuda" : "cpu"},
                           {"original_bytes", field.size_bytes()},
                           {"compressed_bytes", file.size()},
                           {"ratio", ratio},
                           {"fzgpu_format_ratio", fzgpu_ratio},
                           {"bits_per_value", 8.0 * double(file.size()) / double(field.dims.count())},
                           {"psnr_db", m.psnr},
                           {"nrmse", m.nrmse},
                           {"max_abs_error", m.max_abs_error},
                           {"max_rel_error", m.max_rel_error},
                           {"violations", m.violations},
                           {"compress_gbps", c_gbs},
                           {"decompress_gbps", d_gbs},
                           {"repeats", a.repeat}};
  if (a.json) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::printf("fzg eval: %s, %s %s, %s %g (absolute %.4g), config %s, device %s\n", source.c_str(),
                a.field.type.c_str(), field.dims.to_string().c_str(), a.codec.mode.c_str(), bound.value,
                out.header.quant.error_bound, graph.name().c_str(), device == Device::cuda ? "cuda" : "cpu");
    std::printf("  ratio        %.3f  (%.3f bits/value, %llu -> %llu bytes)\n", ratio,
                8.0 * double(file.size()) / double(field.dims.count()), (unsigned long long)field.size_bytes(),
                (unsigned long long)file.size());
    if (fzgpu_ratio > 0) std::printf("  yardstick    %.3f with the same codes in FZ-GPU's format\n", fzgpu_ratio);
    std::printf("  PSNR         %.2f dB   NRMSE %.3g\n", m.psnr, m.nrmse);
    std::printf("  max error    %.4g absolute, %.4g of the value range; bound %.4g, points over it: %llu\n",
                m.max_abs_error, m.max_rel_error, out.header.quant.error_bound, (unsigned long long)m.violations);
    std::printf("  throughput   compress %.3f GB/s, decompress %.3f GB/s (host to host, median of %d, decimal)\n",
                c_gbs, d_gbs, a.repeat);
  }
  return m.violations ? 3 : 0;
}

int run_gen(const GenArgs& a) {
  if (a.output.empty()) fail(ErrorCode::invalid_argument, "an output is required (-o FILE)");
  if (a.field.gen_kind.empty()) fail(ErrorCode::invalid_argument, "a kind is required (--kind turbulent)");
  Buffer storage;
  load_field(a.field, storage);
  write_file(a.output, storage.data(), storage.size());
  return 0;
}

}  // namespace fzg::cli
