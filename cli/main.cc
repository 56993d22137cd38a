// fzg: error-bounded lossy compression of scientific fields, on the CPU or a CUDA GPU.
#include <CLI/CLI.hpp>

#include <iostream>
#include <new>

#include "cli/commands.hh"

namespace {

void add_field_options(CLI::App* cmd, fzg::cli::FieldArgs& f, bool with_input) {
  if (with_input) cmd->add_option("-i,--input", f.input, "input file of raw values ('-' for stdin)");
  cmd->add_option("-t,--type", f.type, "element type: f32, f64 (or u8, u16, u32, i32 with -m lossless)")->capture_default_str();
  cmd->add_option("-l,--dims", f.dims, "dimensions, fastest first, e.g. 500x500x100");
  cmd->add_flag("--zyx", f.slowest_first, "read -l slowest first (100x500x500)");
  cmd->add_option("--seed", f.seed, "seed for --gen fields")->capture_default_str();
}

void add_codec_options(CLI::App* cmd, fzg::cli::CodecArgs& c) {
  cmd->add_option("-m,--mode", c.mode, "error mode: abs, rel (x value range), psnr (target dB) or lossless")->capture_default_str();
  cmd->add_option("-e,--error-bound", c.error_bound, "error bound (or target PSNR in dB)")->capture_default_str();
  cmd->add_option("-c,--config", c.config, "graph config (JSON); default: the built-in configs/fz.json");
  cmd->add_option("--device", c.device, "auto, cpu or cuda")->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fzg::cli;
  CLI::App app{"fzg: error-bounded lossy compressor for scientific floating-point data"};
  app.require_subcommand(1);

  CompressArgs compress_args;
  auto* compress = app.add_subcommand("compress", "compress a field into an .fzg file");
  add_field_options(compress, compress_args.field, true);
  add_codec_options(compress, compress_args.codec);
  compress->add_option("-o,--output", compress_args.output, "output .fzg file ('-' for stdout)");

  DecompressArgs decompress_args;
  auto* decompress = app.add_subcommand("decompress", "decompress an .fzg file to raw values");
  decompress->add_option("-i,--input", decompress_args.input, "input .fzg file ('-' for stdin)");
  decompress->add_option("-o,--output", decompress_args.output, "output file ('-' for stdout)");
  decompress->add_option("--device", decompress_args.device, "auto, cpu or cuda")->capture_default_str();

  std::string info_path;
  bool info_json = false;
  auto* info = app.add_subcommand("info", "print an .fzg file's header, graph and streams");
  info->add_option("file", info_path, "the .fzg file")->required();
  info->add_flag("--json", info_json, "machine-readable output");

  EvalArgs eval_args;
  auto* eval = app.add_subcommand("eval", "round trip and report ratio, PSNR, errors and throughput");
  add_field_options(eval, eval_args.field, true);
  eval->add_option("--gen", eval_args.field.gen_kind, "use a synthetic field: smooth, turbulent, noisy, constant");
  add_codec_options(eval, eval_args.codec);
  eval->add_option("--repeat", eval_args.repeat, "timed repeats (median)")->capture_default_str();
  eval->add_flag("--json", eval_args.json, "machine-readable output");

  GenArgs gen_args;
  auto* gen = app.add_subcommand("gen", "write a synthetic field");
  add_field_options(gen, gen_args.field, false);
  gen->add_option("--kind", gen_args.field.gen_kind, "smooth, turbulent, noisy or constant");
  gen->add_option("-o,--output", gen_args.output, "output file");

  BenchArgs bench_args;
  auto* bench = app.add_subcommand("bench", "throughput: kernel-only and end to end, per stage");
  add_field_options(bench, bench_args.field, true);
  bench->add_option("--gen", bench_args.field.gen_kind, "use a synthetic field");
  add_codec_options(bench, bench_args.codec);
  bench->add_option("--repeat", bench_args.repeat, "timed repeats (median)")->capture_default_str();
  bench->add_option("--warmup", bench_args.warmup, "untimed warm-up runs")->capture_default_str();
  bench->add_option("--sizes", bench_args.sizes, "values per run, e.g. 1M,10M,100M,1G (synthetic cubes)");
  bench->add_option("--slab", bench_args.slab_values, "values a fused GPU chain codes at a time (0: automatic)")
      ->capture_default_str();
  bench->add_flag("--json", bench_args.json, "machine-readable output");
  bench->add_flag("--trace", bench_args.trace, "print the timeline (host and GPU) of one call each way");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (compress->parsed()) return run_compress(compress_args);
    if (decompress->parsed()) return run_decompress(decompress_args);
    if (info->parsed()) return run_info(info_path, info_json);
    if (eval->parsed()) return run_eval(eval_args);
    if (gen->parsed()) return run_gen(gen_args);
    if (bench->parsed()) return run_bench(bench_args);
  } catch (const fzg::Error& e) {
    std::cerr << "fzg: error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "fzg: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "fzg: error: " << e.what() << "\n";
    return 1;
  }
  return 1;
}
