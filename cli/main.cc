// fzg: error-bounded lossy compression of scientific fields, on the CPU or a CUDA GPU.
#include <CLI/CLI.hpp>

#include <cstring>
#include <iostream>
#include <new>

#include "cli/commands.hh"

namespace {

const char* const commands[] = {"compress", "decompress", "info", "eval", "gen", "bench", "sweep", "compare"};

// What -t accepts depends on the command: gen makes floating-point fields only.
const char* const lossy_types_help = "element type: f32, f64 (or u8, u16, u32, i32 with -m lossless)";
const char* const gen_types_help = "element type: f32 or f64";

// Counts, seeds and sizes: digits alone. CLI11 reads "-1" into an unsigned as 2^64 - 1, and a
// number past 64 bits as it wraps.
const CLI::Validator whole_number(
    [](std::string& text) -> std::string {
      if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos)
        return "expected a whole number below 10^19, got '" + fzg::cli::printable(text, 64) + "'";
      return std::string();
    },
    "UINT");
// MB of device memory: a whole number whose bytes (MB << 20) fit 64 bits.
const CLI::Validator megabytes(
    [](std::string& text) -> std::string {
      std::string digits = text;
      if (std::string why = whole_number(digits); !why.empty()) return why;
      if (std::stoull(text) >= (uint64_t(1) << 44)) return "at most 2^44 - 1 MB, got " + text;
      return std::string();
    },
    "MB");

// Where the field comes from: -i (when `with_input`), and --gen with its --seed (when
// `with_gen`); gen itself names the kind with --kind.
void add_field_options(CLI::App* cmd, fzg::cli::FieldArgs& f, bool with_input, bool with_gen, const char* type_help) {
  CLI::Option* input = nullptr;
  if (with_input) input = cmd->add_option("-i,--input", f.input, "input file of raw values ('-' for stdin)");
  if (with_gen) {
    auto* gen = cmd->add_option("--gen", f.gen_kind, "use a synthetic field instead: smooth, turbulent, noisy or constant");
    if (input) gen->excludes(input);
  }
  cmd->add_option("-t,--type", f.type, type_help)->capture_default_str();
  cmd->add_option("-l,--dims", f.dims, "dimensions, fastest first, e.g. 500x500x100");
  cmd->add_flag("--zyx", f.slowest_first, "read -l slowest first (100x500x500)");
  if (with_gen) cmd->add_option("--seed", f.seed, "seed of the synthetic field")->check(whole_number)->capture_default_str();
}

void add_codec_options(CLI::App* cmd, fzg::cli::CodecArgs& c) {
  cmd->add_option("-m,--mode", c.mode,
                  "error mode: abs (absolute), rel (a fraction of the value range; r2r, cuSZ's name, is an alias), "
                  "psnr (target dB) or lossless")
      ->capture_default_str();
  cmd->add_option("-e,--error-bound", c.error_bound, "error bound (or target PSNR in dB)")->capture_default_str();
  cmd->add_option("-c,--config", c.config, "graph config (JSON); default: the built-in configs/fz.json");
  cmd->add_option("--device", c.device, "auto, cpu or cuda")->capture_default_str();
  cmd->add_option("--device-memory", c.device_memory_mb,
                  "MB of GPU memory the call may hold (0: what is free); a larger host field goes through in chunks")
      ->check(megabytes)
      ->capture_default_str();
  cmd->add_option("--fill", c.fill,
                  "a value that marks missing points (repeatable; nan, -nan, inf and -inf accepted): they stay out of "
                  "the range and the bound and come back bit for bit; an HDF5 / NetCDF input's _FillValue and "
                  "missing_value are used unless --fill is given ('--fill none' ignores them)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
}

const char* const progress_footer =
    "On a terminal, work that takes over a second shows its progress on stderr (bytes, decimal MB/s or GB/s, "
    "time left); nothing extra is printed when stderr is not a terminal.\n";

const char* const fzgpu_format_footer =
    "The 'FZ-GPU format' ratio is what FZ-GPU's lossless format (bitshuffle + zero-block elimination, which "
    "has no outlier handling) gives the same quantization codes, plus fzg's outlier stream: the ratio fzg's "
    "predictor would reach in FZ-GPU's format. JSON prints non-finite numbers as the strings \"inf\", "
    "\"-inf\" and \"nan\".";

bool is_command(const char* word) {
  for (const char* c : commands)
    if (std::strcmp(word, c) == 0) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fzg::cli;
  CLI::App app{"fzg: error-bounded lossy compressor for scientific floating-point data"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("fzg ") + version, "print fzg's version and exit");
  // Usage errors as every other error: one line, exit status 1.
  app.failure_message([](const CLI::App* parent, const CLI::Error& e) {
    std::string help = "fzg --help";
    for (const CLI::App* sub : parent->get_subcommands()) help = "fzg " + sub->get_name() + " --help";
    return "fzg: error: " + fzg::cli::printable(e.what()) + " (see " + help + ")\n";
  });

  // The first word names the command; say so when it names none.
  if (argc > 1 && argv[1][0] != '-' && !is_command(argv[1])) {
    std::cerr << "fzg: error: unknown command '" << fzg::cli::printable(argv[1])
              << "' (expected compress, decompress, info, eval, gen, bench, sweep or compare)\n";
    return 1;
  }

  CompressArgs compress_args;
  auto* compress = app.add_subcommand("compress", "compress a field into an .fzg file");
  add_field_options(compress, compress_args.field, true, false, lossy_types_help);
  add_codec_options(compress, compress_args.codec);
  compress->add_option("-o,--output", compress_args.output, "output .fzg file ('-' for stdout; not the input)");
  compress->footer(progress_footer);

  DecompressArgs decompress_args;
  auto* decompress = app.add_subcommand("decompress", "decompress an .fzg file to raw values");
  decompress->add_option("-i,--input", decompress_args.input, "input .fzg file ('-' for stdin)");
  decompress->add_option("-o,--output", decompress_args.output, "output file ('-' for stdout; not the input)");
  decompress->add_option("--device", decompress_args.device, "auto, cpu or cuda")->capture_default_str();
  decompress->add_option("--device-memory", decompress_args.device_memory_mb,
                         "MB of GPU memory the call may hold (0: what is free)")
      ->check(megabytes)
      ->capture_default_str();
  decompress->add_option("--range", decompress_args.range,
                         "only the sub-box x0:x1[,y0:y1[,z0:z1]] (fastest first, half-open, clipped to the field as a "
                         "numpy slice is); reads only the chunks that hold it");
  decompress->footer(progress_footer);

  std::string info_path;
  bool info_json = false;
  auto* info = app.add_subcommand("info", "print an .fzg file's header, graph and streams");
  info->add_option("file", info_path, "the .fzg file")->required();
  info->add_flag("--json", info_json, "machine-readable output");
  info->footer(
      "A lossless file has no bound: the text says 'lossless' and the JSON omits requested_bound, absolute_bound "
      "and step; min and max (the finite value range) are given for f32 and f64 fields only.\n");

  EvalArgs eval_args;
  auto* eval = app.add_subcommand("eval", "round trip and report ratio, PSNR, errors and throughput");
  add_field_options(eval, eval_args.field, true, true, lossy_types_help);
  add_codec_options(eval, eval_args.codec);
  eval->add_option("--repeat", eval_args.repeat, "timed repeats (median)")->check(whole_number)->capture_default_str();
  eval->add_flag("--json", eval_args.json, "machine-readable output");
  eval->footer(std::string(fzgpu_format_footer) + " Exit status 3 when a point misses the bound.\n");

  GenArgs gen_args;
  auto* gen = app.add_subcommand("gen", "write a synthetic field");
  add_field_options(gen, gen_args.field, false, false, gen_types_help);
  gen->add_option("--kind", gen_args.field.gen_kind, "smooth, turbulent, noisy or constant");
  gen->add_option("--seed", gen_args.field.seed, "seed of the synthetic field")->check(whole_number)->capture_default_str();
  gen->add_option("-o,--output", gen_args.output, "output file");

  BenchArgs bench_args;
  auto* bench = app.add_subcommand("bench", "throughput: kernel-only and end to end, per stage");
  add_field_options(bench, bench_args.field, true, true, lossy_types_help);
  add_codec_options(bench, bench_args.codec);
  bench->add_option("--repeat", bench_args.repeat, "timed repeats (median)")->check(whole_number)->capture_default_str();
  bench->add_option("--warmup", bench_args.warmup, "untimed warm-up runs")->check(whole_number)->capture_default_str();
  bench->add_option("--sizes", bench_args.sizes, "values per run, e.g. 1M,10M,100M,1G (synthetic cubes)");
  bench->add_option("--chunk", bench_args.chunk_values, "values per chunk instead of the config's chunk_values (0: the config's)")
      ->check(whole_number)
      ->capture_default_str();
  bench->add_flag("--json", bench_args.json, "machine-readable output");
  bench->add_flag("--trace", bench_args.trace, "print the timeline (host and GPU) of one call each way");
  bench->add_flag("--ssim", bench_args.ssim,
                  "also time SSIM of the field against its reconstruction (on the GPU: beside one run of the CPU's)");
  bench->footer("JSON prints non-finite numbers as the strings \"inf\", \"-inf\" and \"nan\".\n");

  SweepArgs sweep_args;
  auto* sweep = app.add_subcommand("sweep", "fields x configs x error bounds: eval's measurements, one row each, to CSV or JSON");
  sweep->add_option("-i,--input", sweep_args.inputs,
                    "raw fields, comma-separated (dims and type from -l/-t or a name like field_500x500x100.f32)");
  sweep->add_option("-l,--dims", sweep_args.dims, "dimensions of every input, fastest first (e.g. 500x500x100)");
  sweep->add_option("-t,--type", sweep_args.type, "f32 or f64 for every input (default: from the name, else f32)");
  sweep->add_flag("--zyx", sweep_args.slowest_first, "dimensions are given slowest first");
  sweep->add_option("-c,--config", sweep_args.configs, "config files, comma-separated ('default': the built-in graph)");
  sweep->add_option("-m,--mode", sweep_args.mode, "abs, rel or psnr")->capture_default_str();
  sweep->add_option("-e,--error", sweep_args.bounds, "error bounds, comma-separated")->capture_default_str();
  sweep->add_option("--device", sweep_args.device, "auto, cpu or cuda")->capture_default_str();
  sweep->add_option("--fill", sweep_args.fill,
                    "a value that marks missing points in every input (repeatable; as compress's --fill: inputs' own "
                    "_FillValue / missing_value are used unless given, '--fill none' ignores them)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  sweep->add_option("--plan", sweep_args.plan,
                    "a JSON plan instead of -i/-c/-m/-e: {\"fields\": [...], \"configs\": [...], \"mode\": \"rel\", "
                    "\"bounds\": [...]}");
  sweep->add_option("-o,--output", sweep_args.output, "results: .csv or .json; rows already there are not run again");
  sweep->add_option("--repeat", sweep_args.repeat, "timed repeats per run (median)")->check(whole_number)->capture_default_str();
  sweep->footer(
      "The output is rewritten after every run, so an interrupted sweep resumes where it stopped. Kernel-only "
      "throughput and peak device memory are measured on the GPU only. Exit status 3 when a point misses the "
      "bound.\n");

  CompareArgs compare_args;
  auto* compare = app.add_subcommand("compare", "errors and similarity of a reconstruction (any compressor's) to its original");
  add_field_options(compare, compare_args.field, true, false, lossy_types_help);
  compare->add_option("-r,--reconstructed", compare_args.reconstructed, "the reconstruction: raw, same type and dims")
      ->required();
  compare->add_option("--bound", compare_args.error_bound, "absolute error bound to count violations against (0: none)")
      ->capture_default_str();
  compare->add_option("--device", compare_args.device, "where SSIM runs: auto, cpu or cuda")->capture_default_str();
  compare->footer("Prints JSON: the metrics of fzg eval and sweep, computed by the same code. Exit status 3 when a "
                  "point misses the bound.\n");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 1;
  }
  try {
    if (compress->parsed()) return run_compress(compress_args);
    if (decompress->parsed()) {
      if (decompress->count("--range") && decompress_args.range.empty())  // '' would decode the whole field
        fzg::fail(fzg::ErrorCode::invalid_argument, "an empty --range (expected x0:x1[,y0:y1[,z0:z1]], e.g. 0:100,20:40)");
      return run_decompress(decompress_args);
    }
    if (info->parsed()) return run_info(info_path, info_json);
    if (eval->parsed()) return run_eval(eval_args);
    if (gen->parsed()) return run_gen(gen_args);
    if (bench->parsed()) return run_bench(bench_args);
    if (sweep->parsed()) return run_sweep(sweep_args);
    if (compare->parsed()) return run_compare(compare_args);
  } catch (const fzg::Error& e) {
    std::cerr << "fzg: error: " << fzg::cli::printable(e.what()) << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "fzg: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "fzg: error: " << fzg::cli::printable(e.what()) << "\n";
    return 1;
  }
  return 1;
}
