// The fzg subcommands. Each returns the process exit code; errors surface as fzg::Error.
#pragma once
#include <cstdint>
#include <string>

#include "pipeline/fzg.hh"
#include "pipeline/synth.hh"

namespace fzg::cli {

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
};

struct CompressArgs { FieldArgs field; CodecArgs codec; std::string output; };
struct DecompressArgs { std::string input, output, device = "auto"; };
struct EvalArgs { FieldArgs field; CodecArgs codec; int repeat = 3; bool json = false; };
struct GenArgs { FieldArgs field; std::string output; };
struct BenchArgs {
  FieldArgs field;
  CodecArgs codec;
  int repeat = 20, warmup = 3;
  uint64_t slab_values = 0;  // a fused chain's slab (0: automatic)
  std::string sizes;          // "1M,10M,100M": values per run, cubic 3D fields
  bool json = false;
  bool trace = false;         // print one call's timeline of each direction
};

int run_compress(const CompressArgs& a);
int run_decompress(const DecompressArgs& a);
int run_info(const std::string& path, bool json);
int run_eval(const EvalArgs& a);
int run_gen(const GenArgs& a);
int run_bench(const BenchArgs& a);

// Shared by the commands.
Device parse_device(const std::string& name);
Graph load_graph(const std::string& config_path);
ErrorBound parse_bound(const CodecArgs& a);
// Reads or synthesizes the field; `bytes` keeps the storage alive.
FieldRef load_field(const FieldArgs& a, Buffer& bytes);
Buffer read_file(const std::string& path);                                // "-" = stdin
void write_file(const std::string& path, const uint8_t* data, uint64_t size);  // temp + rename; "-" = stdout
double median(std::vector<double> values);

}  // namespace fzg::cli
