// The fzg subcommands. Each returns the process exit code; errors surface as fzg::Error.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/fzg.hh"
#include "tools/synth.hh"

// fzg's version: the CMake project version when the build passes it (FZG_VERSION), else this
// constant, which must then equal project(fzg VERSION ...) in CMakeLists.txt.
#ifndef FZG_VERSION
#define FZG_VERSION "0.1.0"
#endif

namespace fzg::cli {

inline constexpr const char* version = FZG_VERSION;

struct FieldArgs {
  std::string input;          // a path, "-" for stdin, or empty with gen_kind set
  std::string gen_kind;       // synthesize instead of reading
  std::string type = "f32";
  std::string dims;
  bool slowest_first = false;
  uint64_t seed = 1;
};

struct CodecArgs {
  std::string mode = "rel";
  double error_bound = 1e-3;
  std::string config;         // empty: the built-in fz graph
  std::string device = "auto";
  uint64_t device_memory_mb = 0;  // device memory the call may hold (0: what is free)
  // --fill values marking missing points ("nan" accepted); "none" ignores the input's own
  // _FillValue / missing_value, which are used when no --fill is given.
  std::vector<std::string> fill;
};

struct CompressArgs { FieldArgs field; CodecArgs codec; std::string output; };
struct DecompressArgs {
  std::string input, output, device = "auto";
  uint64_t device_memory_mb = 0;
  std::string range;  // "x0:x1,y0:y1,z0:z1" (fastest first): only that sub-box
};
struct EvalArgs { FieldArgs field; CodecArgs codec; int repeat = 3; bool json = false; };
struct GenArgs { FieldArgs field; std::string output; };
struct CompareArgs {
  FieldArgs field;            // the original
  std::string reconstructed;  // a raw file of the same type and dims
  double error_bound = 0;     // absolute; points over it are counted as violations
  std::string device = "auto";  // where SSIM runs
};
struct SweepArgs {
  std::string inputs;         // comma-separated raw files
  std::string dims, type;     // for every input; else from a name like airtemp_49x37x240.f32
  bool slowest_first = false;
  std::string configs;        // comma-separated config files; "default" is the built-in graph
  std::string mode = "rel";
  std::string bounds = "1e-2,1e-3,1e-4";
  std::string device = "auto";
  std::string plan;           // a JSON plan instead of the lists
  std::string output;         // results: .csv or .json, rewritten after every run
  int repeat = 1;
  std::vector<std::string> fill;  // as CodecArgs::fill, for every input
};
struct BenchArgs {
  FieldArgs field;
  CodecArgs codec;
  int repeat = 20, warmup = 3;
  uint64_t chunk_values = 0;  // the graph's chunk size instead of its own (0: the graph's)
  std::string sizes;          // "1M,10M,100M": values per run, cubic 3D fields
  bool json = false;
  bool trace = false;         // print one call's timeline of each direction
  bool ssim = false;          // also time SSIM of the field against its reconstruction
};

int run_compress(const CompressArgs& a);
int run_decompress(const DecompressArgs& a);
int run_info(const std::string& path, bool json);
int run_eval(const EvalArgs& a);
int run_gen(const GenArgs& a);
int run_bench(const BenchArgs& a);
int run_sweep(const SweepArgs& a);
int run_compare(const CompareArgs& a);

// Shared by the commands.
Device parse_device(const std::string& name);
Graph load_graph(const std::string& config_path);
ErrorBound parse_bound(const CodecArgs& a);
// Reads or synthesizes the field; `bytes` keeps the storage alive. The input is checked
// before the dimensions, and the field's size against the file's and the machine's memory
// before anything is allocated.
// `file_fill_values`, when given, receives the fill values the input declares (HDF5 / NetCDF
// _FillValue and missing_value).
FieldRef load_field(const FieldArgs& a, Buffer& bytes, std::vector<double>* file_fill_values = nullptr);
// The fill values a run uses: --fill's, else the input's own (none with --fill none).
std::vector<double> fill_values_for(const CodecArgs& a, const std::vector<double>& file_fill_values);
// `graph` for a run in `mode` with these fill values (Graph::with_fill_values_for); a graph
// without a predictor, which codes the field exactly, as it is.
Graph with_fills(const Graph& graph, const std::vector<double>& fill_values, ErrorMode mode);
// The graph a run uses: the config's, with those fill values on its predictor.
Graph graph_for(const CodecArgs& a, const std::vector<double>& fill_values);
// Reads a whole input: "-" is stdin; otherwise a regular file, a FIFO or a character device
// (a directory, socket or block device is refused, naming what it is). With `expected_size`,
// a file of another size is refused before it is read, a pipe is read no further than one
// byte past it, and a character device (/dev/urandom) gives that many bytes. Shows progress
// on a terminal. A stream of no expected size is read up to half the memory limit (memory_limit).
// Refuses a path read_file would: one that does not exist, or a directory, socket or block device.
void check_readable(const std::string& path);
Buffer read_file(const std::string& path, std::optional<uint64_t> expected_size = std::nullopt,
                 const std::string& expected_what = "");
// An fzg file: read_file, with its first bytes checked for the container's magic before the
// rest is read (a stream of zeros or a large foreign file fails at once, not once read).
Buffer read_fzg_file(const std::string& path);
// Writes beside the path, then renames over it ("-" = stdout), in chunks, with progress.
void write_file(const std::string& path, const uint8_t* data, uint64_t size);
// Refuses an output that cannot be written or that is the input itself (the same file by
// device and inode: another path, a hard link or a symlink to it), before any work is done.
void check_output(const std::string& output, const std::string& input);
double median(std::vector<double> values);
// The reconstruction's errors and similarity to the original (host memory), as eval, sweep
// and compare report them: psnr_db, nrmse, ssim, pearson, error_autocorrelation,
// max_abs_error, max_rel_error and violations (points over the absolute error_bound). `ssim`
// is the reconstruction's SSIM, computed by the caller where the fields are (ssim_on: on the
// GPU for a run on it, where the CPU's would take seconds for a 100 M-value field).
// `missing` (one byte per point, nonzero for a fill value) leaves points out of every metric;
// "missing_points" counts them.
nlohmann::json quality_report(const FieldRef& original, const void* reconstructed, double error_bound, double ssim,
                              const uint8_t* missing = nullptr);
// The points of `field` that hold one of these fill values (empty without any).
std::vector<uint8_t> missing_points(const FieldRef& field, const MissingValues& missing);
// One field through one config at one bound: end to end (host to host, median of `repeat`
// after a warm-up round trip) and, on the GPU, kernel-only (field and file resident on the
// device, CUDA events) with the peak device memory; the reconstruction's errors and
// similarity (SSIM on the GPU from the resident field and reconstruction). The keys are eval's JSON and sweep's columns. `after_run` follows every round
// trip (progress).
nlohmann::json round_trip_report(const Graph& graph, const FieldRef& field, const ErrorBound& bound, Device device,
                                 int repeat, const std::function<void()>& after_run);

// The bytes a field of these dimensions and type needs, computed without overflow.
struct FieldSize {
  bool overflows = false;  // more than 2^64 - 1 bytes
  uint64_t bytes = 0;      // when it does not overflow
  long double approx = 0;  // always
  std::string to_string() const;  // "4000000000000000 bytes (4.00 PB)", "about 8e+33 bytes"
};
// nullopt when the text is not plain digits and 'x' (parse_dims then says what is wrong).
std::optional<FieldSize> field_size(const std::string& dims_text, DType type);
// Fails, naming the size, when `bytes` cannot be allocated on this machine (more than its
// memory and swap, or the cgroup's memory limit). `what` begins the message.
void check_allocatable(const FieldSize& size, const std::string& what);

// Every JSON the CLI prints: numbers as numbers, except non-finite ones, which nlohmann would
// print as null: "inf", "-inf" and "nan" strings instead.
std::string dump_json(const nlohmann::json& j);
// Text from a user or a file as one terminal line: control characters escaped (\n, \x1b, and
// C1 controls in UTF-8 as \u009b), so that a message or a stored name can neither break the
// line nor drive the terminal, and cut after `limit` bytes.
std::string printable(const std::string& text, size_t limit = 4096);

}  // namespace fzg::cli
