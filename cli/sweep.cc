// fzg sweep: fields x configs x error bounds, one round trip each (fzg eval's measurements),
// one row per run in a CSV or JSON file that is rewritten (beside, then renamed) after every
// run, so an interrupted sweep resumes where it stopped: rows already in the output are kept
// and not run again.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "cli/commands.hh"
#include "cli/described_input.hh"
#include "cli/progress.hh"

namespace fzg::cli {

namespace {

// The columns, in order: what identifies a run, then what it measured (round_trip_report's
// keys; the kernel-only ones and the peak device memory are empty off the GPU).
const std::vector<std::string> key_columns = {"field", "config", "device", "mode", "eb"};
const std::vector<std::string> columns = {
    "field", "config", "device", "mode", "eb", "dims", "dtype", "absolute_bound", "ratio", "bits_per_value",
    "psnr_db", "nrmse", "ssim", "pearson", "error_autocorrelation", "max_abs_error", "max_rel_error",
    "compress_gbps", "decompress_gbps", "kernel_compress_gbps", "kernel_decompress_gbps", "peak_device_bytes",
    "bound_held", "violations", "original_bytes", "compressed_bytes", "fzgpu_format_ratio", "missing_points"};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ','))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

struct FieldSpec {
  std::string input, dims, type;
};

// The dimensions and type a raw file's name gives, as the datasets are named:
// "airtemp-a1b_49x37x240.f32" (the same order as -l); .npy files and HDF5 datasets carry
// their own.
FieldSpec spec_from_name(const std::string& input, const std::string& dims, const std::string& type) {
  FieldSpec f{input, dims, type};
  if (is_npy(input) || is_hdf5_dataset(input)) {  // the file says; -l and -t, if given, must agree
    if (f.type.empty()) f.type = "f32";
    return f;
  }
  static const std::regex named(R"(_([0-9]+(x[0-9]+)*)\.(f32|f64)$)");
  std::smatch match;
  const bool found = std::regex_search(input, match, named);
  if (f.dims.empty()) {
    if (!found) fail(ErrorCode::invalid_argument, "no dimensions for '" + input + "': give -l, or name it like field_500x500x100.f32");
    f.dims = match[1];
  }
  if (f.type.empty()) f.type = found ? std::string(match[3]) : "f32";
  return f;
}

double parse_bound_text(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0') fail(ErrorCode::invalid_argument, "bad error bound '" + text + "' in the sweep");
  return v;
}

struct Plan {
  std::vector<FieldSpec> fields;
  std::vector<std::string> configs;  // paths; "default" is the built-in graph
  std::string mode, device;
  std::vector<double> bounds;
};

Plan plan_from_args(const SweepArgs& a) {
  Plan p;
  p.mode = a.mode, p.device = a.device;
  for (const std::string& input : split_list(a.inputs)) p.fields.push_back(spec_from_name(input, a.dims, a.type));
  p.configs = split_list(a.configs);
  for (const std::string& b : split_list(a.bounds)) p.bounds.push_back(parse_bound_text(b));
  return p;
}

// {"fields": ["a_10x20.f32", {"input": "b.f64", "dims": "10x20", "type": "f64"}],
//  "configs": ["configs/fz.json", "default"], "mode": "rel", "bounds": [1e-2, 1e-3],
//  "device": "cpu"}  (mode and device optional)
Plan plan_from_file(const std::string& path) {
  nlohmann::json j;
  try {
    std::ifstream in(path);
    if (!in) fail(ErrorCode::io, "cannot open the sweep plan '" + path + "': " + std::strerror(errno));
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorCode::invalid_argument, "the sweep plan '" + path + "' is not JSON: " + e.what());
  }
  auto bad = [&](const std::string& why) { fail(ErrorCode::invalid_argument, "sweep plan '" + path + "': " + why); };
  if (!j.is_object()) bad("expected an object with fields, configs and bounds");
  for (const auto& [key, value] : j.items())
    if (key != "fields" && key != "configs" && key != "mode" && key != "bounds" && key != "device")
      bad("unknown key \"" + key + "\" (expected fields, configs, mode, bounds, device)");
  // A key's text (nlohmann's value() throws its own type_error, naming no key, on a number).
  auto text = [&](const nlohmann::json& object, const std::string& key, const std::string& fallback) {
    if (!object.contains(key)) return fallback;
    if (!object.at(key).is_string()) bad("\"" + key + "\" must be a string");
    return object.at(key).get<std::string>();
  };
  Plan p;
  p.mode = text(j, "mode", "rel");
  p.device = text(j, "device", "auto");
  if (!j.contains("fields") || !j["fields"].is_array()) bad("\"fields\" must be a list");
  for (const auto& f : j["fields"]) {
    if (f.is_string()) {
      p.fields.push_back(spec_from_name(f.get<std::string>(), "", ""));
    } else if (f.is_object() && f.contains("input") && f["input"].is_string()) {
      for (const auto& [key, value] : f.items())
        if (key != "input" && key != "dims" && key != "type") bad("unknown field key \"" + key + "\"");
      p.fields.push_back(spec_from_name(f["input"], text(f, "dims", ""), text(f, "type", "")));
    } else {
      bad("each field is a path or {\"input\", \"dims\", \"type\"}");
    }
  }
  if (!j.contains("configs") || !j["configs"].is_array()) bad("\"configs\" must be a list of config files");
  for (const auto& c : j["configs"]) {
    if (!c.is_string()) bad("each config is a path (or \"default\")");
    p.configs.push_back(c);
  }
  if (!j.contains("bounds") || !j["bounds"].is_array()) bad("\"bounds\" must be a list of numbers");
  for (const auto& b : j["bounds"]) {
    if (!b.is_number()) bad("each bound is a number");
    p.bounds.push_back(b);
  }
  return p;
}

// CSV cells: numbers in their shortest exact form, text quoted when it holds a comma, quote
// or line break.
std::string csv_cell(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_number_float() && !std::isfinite(v.get<double>())) {
    const double d = v;
    return std::isnan(d) ? "nan" : d > 0 ? "inf" : "-inf";
  }
  if (!v.is_string()) return v.dump();
  const std::string s = v;
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') cells.back() += '"', ++i;
    else if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) cells.emplace_back();
    else cells.back() += c;
  }
  return cells;
}

// A cell read back: a number when it is one, else its text (empty: absent).
nlohmann::json csv_value(const std::string& cell) {
  if (cell.empty()) return nullptr;
  char* end = nullptr;
  const double v = std::strtod(cell.c_str(), &end);
  if (*end != '\0') return cell;
  if (cell.find_first_of(".eEnNiI") == std::string::npos) return uint64_t(std::strtoull(cell.c_str(), nullptr, 10));
  return v;
}

bool is_json_output(const std::string& path) { return path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0; }

std::vector<nlohmann::json> read_rows(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  auto bad = [&](const std::string& why) {
    fail(ErrorCode::invalid_argument, "'" + path + "' is not an fzg sweep's output (" + why + "); choose another -o");
  };
  std::vector<nlohmann::json> rows;
  if (is_json_output(path)) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception&) {
      bad("not JSON");
    }
    if (!j.is_array()) bad("not a list of rows");
    for (auto& row : j) {
      if (!row.is_object()) bad("a row is not an object");
      rows.push_back(row);
    }
  } else {
    std::string line;
    if (!std::getline(in, line)) return {};
    if (csv_cells(line) != columns) bad("other columns");
    while (std::getline(in, line)) {
      const std::vector<std::string> cells = csv_cells(line);
      if (cells.size() != columns.size()) bad("a row of " + std::to_string(cells.size()) + " cells");
      nlohmann::json row = nlohmann::json::object();
      for (size_t c = 0; c < columns.size(); ++c) row[columns[c]] = csv_value(cells[c]);
      rows.push_back(row);
    }
  }
  for (const auto& row : rows)
    for (const std::string& k : key_columns)
      if (!row.contains(k) || row[k].is_null()) bad("a row without \"" + k + "\"");
  return rows;
}

void write_rows(const std::string& path, const std::vector<nlohmann::json>& rows) {
  std::string text;
  if (is_json_output(path)) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& row : rows) {
      nlohmann::json ordered = nlohmann::json::object();
      for (const std::string& c : columns) ordered[c] = row.value(c, nlohmann::json());
      all.push_back(ordered);
    }
    text = dump_json(all) + "\n";
  } else {
    for (size_t c = 0; c < columns.size(); ++c) text += (c ? "," : "") + columns[c];
    text += "\n";
    for (const auto& row : rows) {
      for (size_t c = 0; c < columns.size(); ++c) text += (c ? "," : "") + csv_cell(row.value(columns[c], nlohmann::json()));
      text += "\n";
    }
  }
  write_file(path, reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

// A run's identity in the output: the key columns as printed.
std::string run_key(const nlohmann::json& row) {
  std::string key;
  for (const std::string& k : key_columns) key += csv_cell(row[k]) + "\x1f";
  return key;
}

}  // namespace

int run_sweep(const SweepArgs& a) {
  if (a.output.empty()) fail(ErrorCode::invalid_argument, "an output is required (-o results.csv or results.json)");
  if (a.repeat < 1 || a.repeat > 1000) fail(ErrorCode::invalid_argument, "--repeat must be in [1, 1000]");
  if (!a.plan.empty() && !(a.inputs.empty() && a.configs.empty()))
    fail(ErrorCode::invalid_argument, "--plan gives the fields and configs: it takes neither -i nor -c");
  const Plan plan = a.plan.empty() ? plan_from_args(a) : plan_from_file(a.plan);
  if (plan.fields.empty()) fail(ErrorCode::invalid_argument, "no fields to sweep (-i a.f32,b.f32)");
  if (plan.bounds.empty()) fail(ErrorCode::invalid_argument, "no error bounds to sweep (-e 1e-2,1e-3)");
  const std::vector<std::string> config_paths = plan.configs.empty() ? std::vector<std::string>{"default"} : plan.configs;
  // Everything that can be wrong with the plan is found before the first run.
  const Device device = parse_device(plan.device);
  std::vector<Graph> graphs;
  std::set<std::string> names;
  for (const std::string& path : config_paths) {
    graphs.push_back(load_graph(path == "default" ? "" : path));
    if (!names.insert(graphs.back().name()).second)
      fail(ErrorCode::invalid_argument, "two configs in the sweep are named '" + graphs.back().name() + "'");
  }
  std::vector<ErrorBound> bounds;
  for (double b : plan.bounds) bounds.push_back(parse_bound({plan.mode, b, "", plan.device, 0, {}}));
  for (const FieldSpec& f : plan.fields) {
    if (is_npy(f.input) || is_hdf5_dataset(f.input)) {
      std::ifstream probe(is_npy(f.input) ? f.input : f.input.substr(0, f.input.find(":/")));
      if (!probe) fail(ErrorCode::io, "cannot open '" + f.input + "': " + std::strerror(errno));
      continue;
    }
    const std::optional<FieldSize> size = field_size(f.dims, parse_dtype(f.type));
    if (!size || size->overflows) fail(ErrorCode::invalid_argument, "bad dimensions '" + f.dims + "' for '" + f.input + "'");
    check_readable(f.input);  // a directory opens as a stream whose end is nowhere
    std::ifstream probe(f.input, std::ios::binary | std::ios::ate);
    if (!probe) fail(ErrorCode::io, "cannot open '" + f.input + "': " + std::strerror(errno));
    if (uint64_t(probe.tellg()) != size->bytes)
      fail(ErrorCode::invalid_argument, "'" + f.input + "' holds " + std::to_string(uint64_t(probe.tellg())) +
                                            " bytes, not the " + std::to_string(size->bytes) + " of " + f.type + " " + f.dims);
  }
  CodecArgs fill_args;
  fill_args.fill = a.fill;
  fill_args.mode = plan.mode;
  fill_values_for(fill_args, {});  // a bad --fill, or one with lossless, before the first run
  check_output(a.output, "");

  std::vector<nlohmann::json> rows = read_rows(a.output);
  std::set<std::string> done;
  for (const auto& row : rows) done.insert(run_key(row));
  const std::string device_name = device == Device::cuda ? "cuda" : "cpu";
  const double total = double(plan.fields.size() * graphs.size() * bounds.size());
  const bool terminal = stderr_is_terminal();
  Progress progress("sweep", ProgressUnit::count, total);
  progress.set_noun("runs");
  double finished = 0;
  uint64_t misses = 0, skipped = 0;
  for (const FieldSpec& f : plan.fields) {
    Buffer storage;
    std::optional<FieldRef> field;  // read when its first run is not done yet
    std::vector<double> fills;      // --fill's, else the input's own _FillValue / missing_value
    for (const Graph& config_graph : graphs)
      for (const ErrorBound& bound : bounds) {
        nlohmann::json row = {{"field", f.input}, {"config", config_graph.name()}, {"device", device_name},
                              {"mode", plan.mode}, {"eb", bound.value}};
        if (done.count(run_key(row))) {
          progress.set(++finished);
          ++skipped;
          continue;
        }
        progress.set_what("sweep: " + f.input + ", " + config_graph.name() + ", " + plan.mode + " " + csv_cell(bound.value));
        if (!field) {
          std::vector<double> file_fills;
          field = load_field({f.input, "", f.type, f.dims, a.slowest_first, 1}, storage, &file_fills);
          fills = fill_values_for(fill_args, file_fills);
        }
        const Graph graph = with_fills(config_graph, fills, bound.mode);
        const nlohmann::json r = round_trip_report(graph, *field, bound, device, a.repeat, [] {});
        row.update(r);
        row["dims"] = field->dims.to_string();
        row["dtype"] = to_string(field->dtype);
        row["bound_held"] = r["violations"].get<uint64_t>() == 0 ? "yes" : "no";
        misses += r["violations"].get<uint64_t>() ? 1 : 0;
        rows.push_back(row);
        done.insert(run_key(row));
        write_rows(a.output, rows);
        progress.set(++finished);
        if (!terminal)
          std::fprintf(stderr, "sweep %.0f/%.0f: %s, %s, %s %s: ratio %.3f, PSNR %.2f dB, bound %s\n", finished, total,
                       printable(f.input).c_str(), printable(graph.name()).c_str(), plan.mode.c_str(),
                       csv_cell(bound.value).c_str(),
                       r["ratio"].get<double>(), r["psnr_db"].get<double>(), row["bound_held"].get<std::string>().c_str());
      }
  }
  progress.finish();
  std::fprintf(stderr, "sweep: %.0f runs in '%s' (%llu already there)%s\n", total, a.output.c_str(),
               (unsigned long long)skipped, misses ? "; some missed the bound" : "");
  return misses ? 3 : 0;
}

}  // namespace fzg::cli
