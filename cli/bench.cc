// fzg bench: throughput of a config on a field, kernel-only (data resident on the device,
// CUDA events, warm-up, median of repeats) and end to end (host field to host file), with a
// per-stage breakdown and peak device memory. Prints a table and, with --json, JSON.
// It never decides pass or fail.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "cli/commands.hh"
#include "cli/progress.hh"
#include "runtime/timer.hh"
#include "tools/metrics.hh"

namespace fzg::cli {

namespace {

std::vector<uint64_t> parse_sizes(const std::string& text) {
  std::vector<uint64_t> sizes;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    const std::string given = part;
    auto bad = [&] { fail(ErrorCode::invalid_argument, "bad size '" + given + "' in --sizes (expected e.g. 1M,100M,1G)"); };
    if (part.empty()) bad();
    double scale = 1;
    const char unit = part.back();
    if (unit == 'K' || unit == 'k') scale = 1e3;
    if (unit == 'M' || unit == 'm') scale = 1e6;
    if (unit == 'G' || unit == 'g') scale = 1e9;
    if (scale != 1) part.pop_back();
    // A number and nothing else (std::stod alone took "1T" as 1 and "2kk" as 2k).
    double value = 0;
    size_t used = 0;
    try {
      value = std::stod(part, &used) * scale;
    } catch (const std::exception&) {
      bad();
    }
    if (used != part.size() || part.find_first_not_of("0123456789.eE+") != std::string::npos) bad();
    if (!(value >= 1 && value <= 8e9)) fail(ErrorCode::invalid_argument, "--sizes entries lie in [1, 8G] values");
    sizes.push_back(uint64_t(value));
  }
  return sizes;
}

// A cube (or near-cube) with about `values` points.
std::string cube_dims(uint64_t values) {
  const uint64_t side = std::max<uint64_t>(1, uint64_t(std::llround(std::cbrt(double(values)))));
  return std::to_string(side) + "x" + std::to_string(side) + "x" + std::to_string(std::max<uint64_t>(1, values / (side * side)));
}

// Counts the runs (calls of a direction, copies) for the progress line; a run's share of the
// work is its field's size, so that the time left weighs a 1G-value run above a 1M-value one.
class Runs {
 public:
  explicit Runs(Progress& progress) : progress_(progress) {}
  void set_field_bytes(double bytes) { bytes_ = bytes; }
  void operator()() {
    runs_ += 1;
    work_ += bytes_;
    progress_.set(runs_, work_);
  }
  Progress& progress() { return progress_; }

 private:
  Progress& progress_;
  double bytes_ = 0, runs_ = 0, work_ = 0;
};

// The runs one field takes in run_bench below, in its order (keep the two in step).
double runs_per_field(int warmup, int repeat, int e2e_repeat, bool trace, bool ssim, bool on_gpu) {
  return 3.0 * (warmup + repeat)                                 // copy, kernel-only compress and decompress
         + 2 + 2 + 2                                            // peak memory each way, stage times each way, end-to-end peaks
         + 3.0 * (1 + e2e_repeat)                               // end to end: compress, decompress, decompress into
         + (trace ? 4 : 0)                                      // the timelines
         + (ssim ? warmup + repeat + (on_gpu ? 1 : 0) : 0);     // SSIM, and the CPU's beside the GPU's
}

template <typename Work>
double median_ms(Device device, cudaStream_t stream, int warmup, int repeat, Runs& ran, Work work) {
  for (int i = 0; i < warmup; ++i) {
    work();
    ran();
  }
  RegionTimer timer(device, stream);
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    timer.start();
    work();
    ms.push_back(timer.stop_ms());
    ran();
  }
  return median(ms);
}

// Peak device memory while `work` runs, beyond what was held when it began (the field, a file).
template <typename Work>
uint64_t peak_during(Runs& ran, Work work) {
  reset_device_memory_peak();
  const size_t before = device_memory_stats().current_bytes;
  work();
  ran();
  return device_memory_stats().peak_bytes - before;
}

// The timeline of one call of `work`, to stderr (--trace), the progress line out of its way.
template <typename Work>
void print_timeline(Device device, const char* what, const std::string& dims, Runs& ran, Work work) {
  trace::open(device, nullptr);
  work();
  ran();
  const std::string timeline = trace::close();
  ran.progress().suspend();
  std::fprintf(stderr, "%s timeline, %s:\n%s", what, dims.c_str(), timeline.c_str());
  std::fflush(stderr);
  ran.progress().resume();
}

struct Row {
  std::string field, dims;
  uint64_t values = 0, bytes = 0, file_bytes = 0;
  double copy_gbps = 0, kc_gbps = 0, kd_gbps = 0, ec_gbps = 0, ed_gbps = 0;
  double ed_into_gbps = 0;  // end to end into a host array reused from call to call
  uint64_t peak_compress = 0, peak_decompress = 0;          // device-resident field and file
  uint64_t peak_e2e_compress = 0, peak_e2e_decompress = 0;  // host field and file
  double ssim = 0, ssim_ms = 0;          // --ssim: on the bench's device, resident fields
  double cpu_ssim = 0, cpu_ssim_ms = 0;  // --ssim on the GPU: the CPU's, one run
  std::vector<StageTime> compress_stages, decompress_stages;
};

// SSIM of the field against its reconstruction, both resident on the bench's device: the
// median of --repeat calls after the warm-up; on the GPU also one call of the CPU's, for the
// speed-up and the difference (a relative 1e-9 at most: the same windows, added in another
// order).
void time_ssim(Device device, const BenchArgs& a, const FieldRef& field, const Buffer& reconstructed, Runs& ran,
               Row& row) {
  row.ssim_ms = median_ms(device, nullptr, a.warmup, a.repeat, ran, [&] {
    row.ssim = ssim_on(device, field.where, field.data, reconstructed.data(), field.dtype, field.dims);
  });
  if (device != Device::cuda) return;
  const Buffer original = to_host(Buffer::view(const_cast<void*>(field.data), field.size_bytes(), Location::device), nullptr);
  const Buffer host_reconstruction = to_host(reconstructed, nullptr);
  row.cpu_ssim_ms = median_ms(Device::cpu, nullptr, 0, 1, ran, [&] {
    row.cpu_ssim = ssim(original.data(), host_reconstruction.data(), field.dtype, field.dims);
  });
}

}  // namespace

int run_bench(const BenchArgs& a) {
  Graph graph = load_graph(a.codec.config);
  if (a.chunk_values) {
    nlohmann::json config = graph.to_json();
    config["chunk_values"] = a.chunk_values;
    graph = Graph::from_json(config);
  }
  const ErrorBound bound = parse_bound(a.codec);
  const Device device = parse_device(a.codec.device);
  if (a.repeat < 1 || a.warmup < 0) fail(ErrorCode::invalid_argument, "--repeat >= 1 and --warmup >= 0");
  const bool on_gpu = device == Device::cuda;
  const Location resident = on_gpu ? Location::device : Location::host;

  std::vector<FieldArgs> fields;
  if (!a.sizes.empty()) {
    if (!a.field.input.empty() || !a.field.dims.empty())
      fail(ErrorCode::invalid_argument, "--sizes makes synthetic cubes of its own: it takes neither -i nor -l");
    for (uint64_t n : parse_sizes(a.sizes)) {
      FieldArgs f = a.field;
      if (f.gen_kind.empty()) f.gen_kind = "turbulent";
      f.input.clear();
      f.dims = cube_dims(n);
      f.slowest_first = false;
      fields.push_back(f);
    }
  } else {
    fields.push_back(a.field);
  }

  // Progress: runs done of all the runs of all the sizes, the time left weighted by size.
  const int e2e_repeat = std::max(3, a.repeat / 4);
  const double field_runs = runs_per_field(a.warmup, a.repeat, e2e_repeat, a.trace, a.ssim, on_gpu);
  double total_work = 0;
  if (!a.field.gen_kind.empty() || !a.field.input.empty()) {
    for (const auto& f : fields) {
      const std::optional<FieldSize> size = field_size(f.dims, parse_dtype(f.type));
      total_work += field_runs * (size && !size->overflows ? double(size->bytes) : 0);
    }
  }
  Progress progress("bench", ProgressUnit::count);
  progress.set_total(field_runs * double(fields.size()), total_work);
  Runs ran(progress);

  std::vector<Row> rows;
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldArgs& f = fields[i];
    const std::string position = fields.size() > 1 ? " (size " + std::to_string(i + 1) + " of " +
                                                         std::to_string(fields.size()) + ")"
                                                   : "";
    progress.set_what("bench, loading " + (f.gen_kind.empty() ? "'" + f.input + "'" : f.gen_kind) + " " + f.dims +
                      position);
    Buffer host_storage;
    std::vector<double> file_fill_values;
    FieldRef host_field = load_field(f, host_storage, &file_fill_values);
    const std::vector<double> fills = fill_values_for(a.codec, file_fill_values);
    const Graph run_graph = with_fills(graph, fills, bound.mode);
    progress.set_what("bench " + host_field.dims.to_string() + position);
    ran.set_field_bytes(double(host_field.size_bytes()));
    Row row;
    row.field = f.gen_kind.empty() ? f.input : f.gen_kind;
    row.dims = host_field.dims.to_string();
    row.values = host_field.dims.count();
    row.bytes = host_field.size_bytes();

    // The resident copy and the copy-bandwidth ceiling (bytes read + written).
    Buffer resident_field = on_gpu ? to_device(host_storage, nullptr) : host_storage;
    Buffer copy_target = on_gpu ? Buffer::device(row.bytes, nullptr) : Buffer::host(row.bytes);
    const double copy_ms = median_ms(device, nullptr, a.warmup, a.repeat, ran, [&] {
      copy_bytes(copy_target.data(), resident, resident_field.data(), resident, row.bytes, nullptr);
    });
    row.copy_gbps = 2.0 * double(row.bytes) / (copy_ms * 1e6);
    copy_target = Buffer();

    FieldRef field = host_field;
    field.data = resident_field.data();
    field.where = resident;
    CompressOptions copt;
    copt.bound = bound;
    copt.device = device;
    copt.output = resident;
    DecompressOptions dopt;
    dopt.device = device;
    dopt.output = resident;

    Buffer file;
    Decompressed out;
    row.peak_compress = peak_during(ran, [&] { file = compress(run_graph, field, copt); });
    row.file_bytes = file.size();
    const double kc = median_ms(device, nullptr, a.warmup, a.repeat, ran, [&] { file = compress(run_graph, field, copt); });
    row.peak_decompress = peak_during(ran, [&] { out = decompress(file, dopt); });
    const double kd = median_ms(device, nullptr, a.warmup, a.repeat, ran, [&] { out = decompress(file, dopt); });
    row.kc_gbps = double(row.bytes) / (kc * 1e6);
    row.kd_gbps = double(row.bytes) / (kd * 1e6);
    copt.stage_times = &row.compress_stages;
    compress(run_graph, field, copt);
    ran();
    copt.stage_times = nullptr;
    dopt.stage_times = &row.decompress_stages;
    decompress(file, dopt);
    ran();
    dopt.stage_times = nullptr;
    if (a.trace) {
      print_timeline(device, "compress", row.dims, ran, [&] { compress(run_graph, field, copt); });
      print_timeline(device, "decompress", row.dims, ran, [&] { out = decompress(file, dopt); });
    }
    if (a.ssim) time_ssim(device, a, field, out.data, ran, row);
    out = Decompressed();

    // End to end: host field in, host file out, and back.
    CompressOptions hc = copt;
    hc.output = Location::host;
    DecompressOptions hd = dopt;
    hd.output = Location::host;
    Buffer host_file;
    row.peak_e2e_compress = peak_during(ran, [&] { host_file = compress(run_graph, host_field, hc); });
    row.peak_e2e_decompress = peak_during(ran, [&] { out = decompress(host_file, hd); });
    out = Decompressed();
    const double ec =
        median_ms(Device::cpu, nullptr, 1, e2e_repeat, ran, [&] { host_file = compress(run_graph, host_field, hc); });
    const double ed = median_ms(Device::cpu, nullptr, 1, e2e_repeat, ran, [&] { out = decompress(host_file, hd); });
    if (a.trace) {
      print_timeline(device, "end-to-end compress", row.dims, ran, [&] { host_file = compress(run_graph, host_field, hc); });
      print_timeline(device, "end-to-end decompress", row.dims, ran, [&] { out = decompress(host_file, hd); });
    }
    // Into the caller's array: its pages are faulted in once, not on every call.
    Buffer reused = Buffer::host(row.bytes);
    const double ed_into = median_ms(Device::cpu, nullptr, 1, e2e_repeat, ran, [&] {
      decompress_into(host_file, reused.data(), reused.size(), hd);
    });
    row.ed_into_gbps = double(row.bytes) / (ed_into * 1e6);
    row.ec_gbps = double(row.bytes) / (ec * 1e6);
    row.ed_gbps = double(row.bytes) / (ed * 1e6);
    rows.push_back(row);
  }
  progress.finish();

  if (a.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : rows) {
      nlohmann::json cs = nlohmann::json::object(), ds = nlohmann::json::object();
      for (const auto& s : r.compress_stages) cs[s.stage] = s.milliseconds;
      for (const auto& s : r.decompress_stages) ds[s.stage] = s.milliseconds;
      j.push_back({{"field", r.field}, {"dims", r.dims}, {"values", r.values}, {"bytes", r.bytes},
                   {"ratio", double(r.bytes) / double(r.file_bytes)}, {"copy_gbps", r.copy_gbps},
                   {"kernel_compress_gbps", r.kc_gbps}, {"kernel_decompress_gbps", r.kd_gbps},
                   {"end_to_end_compress_gbps", r.ec_gbps}, {"end_to_end_decompress_gbps", r.ed_gbps},
                   {"end_to_end_decompress_into_gbps", r.ed_into_gbps},
                   {"peak_device_bytes_compress", r.peak_compress}, {"peak_device_bytes_decompress", r.peak_decompress},
                   {"peak_device_bytes_e2e_compress", r.peak_e2e_compress},
                   {"peak_device_bytes_e2e_decompress", r.peak_e2e_decompress},
                   {"compress_stages_ms", cs}, {"decompress_stages_ms", ds}, {"device", on_gpu ? "cuda" : "cpu"},
                   {"mode", a.codec.mode}, {"bound", bound.value}, {"config", graph.name()}, {"repeats", a.repeat}});
      if (a.ssim) j.back().update({{"ssim", r.ssim}, {"ssim_ms", r.ssim_ms}});
      if (a.ssim && on_gpu) j.back().update({{"cpu_ssim", r.cpu_ssim}, {"cpu_ssim_ms", r.cpu_ssim_ms}});
    }
    std::cout << dump_json(j) << "\n";
    return 0;
  }
  std::printf("fzg bench: config %s, %s %g, device %s, median of %d after %d warm-up (decimal GB/s of input)\n",
              printable(graph.name()).c_str(), a.codec.mode.c_str(), bound.value, on_gpu ? "cuda" : "cpu", a.repeat,
              a.warmup);
  for (const auto& r : rows) {
    std::printf("\n%s %s (%llu values, %.1f MB)\n", printable(r.field).c_str(), r.dims.c_str(), (unsigned long long)r.values,
                double(r.bytes) / 1e6);
    std::printf("  ratio %.3f | copy %.0f GB/s (read+write)\n", double(r.bytes) / double(r.file_bytes), r.copy_gbps);
    std::printf("  kernel-only  compress %8.2f GB/s (%.1f%% of copy)  decompress %8.2f GB/s (%.1f%% of copy)\n", r.kc_gbps,
                100 * r.kc_gbps / r.copy_gbps, r.kd_gbps, 100 * r.kd_gbps / r.copy_gbps);
    std::printf("  end-to-end   compress %8.2f GB/s                  decompress %8.2f GB/s (into a reused array %.2f)\n",
                r.ec_gbps, r.ed_gbps, r.ed_into_gbps);
    if (on_gpu)
      std::printf("  peak device memory beyond the resident field/file: compress %.1f MB, decompress %.1f MB"
                  " (field %.1f MB, file %.1f MB)\n",
                  r.peak_compress / 1e6, r.peak_decompress / 1e6, r.bytes / 1e6, r.file_bytes / 1e6);
    if (on_gpu)
      std::printf("  peak device memory end to end (host field and file): compress %.1f MB, decompress %.1f MB\n",
                  r.peak_e2e_compress / 1e6, r.peak_e2e_decompress / 1e6);
    if (a.ssim)
      std::printf("  SSIM %.9f in %.2f ms (%.2f G values/s)\n", r.ssim, r.ssim_ms, double(r.values) / (r.ssim_ms * 1e6));
    if (a.ssim && on_gpu)
      std::printf("  the CPU's SSIM %.9f in %.0f ms (one run): %.0fx the GPU's time, relative difference %.1e\n",
                  r.cpu_ssim, r.cpu_ssim_ms, r.cpu_ssim_ms / r.ssim_ms, std::fabs(r.ssim - r.cpu_ssim) / std::fabs(r.cpu_ssim));
    std::printf("  stages (ms):");
    for (const auto& s : r.compress_stages) std::printf(" %s %.3f;", s.stage.c_str(), s.milliseconds);
    for (const auto& s : r.decompress_stages) std::printf(" %s %.3f;", s.stage.c_str(), s.milliseconds);
    std::printf("\n");
  }
  return 0;
}

}  // namespace fzg::cli
