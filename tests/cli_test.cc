// The fzg command line, run as a user runs it.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "test_util.hh"

namespace fzg {
namespace {


struct CommandResult {
  int exit_code;
  std::string out, err;
};

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/fzg-cli-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  CommandResult run(const std::string& args) const {
    const std::string command = std::string(FZG_BINARY) + " " + args + " >" + path("stdout") + " 2>" + path("stderr");
    const int status = std::system(command.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(path("stdout")), slurp(path("stderr"))};
  }
  static std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  static bool exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }
  void write_field(const std::string& name, uint64_t n) const {
    const auto v = testing::make_values<float>(testing::Hazard::nan_inf, n);
    std::ofstream(path(name), std::ios::binary).write(reinterpret_cast<const char*>(v.data()), std::streamsize(4 * n));
  }

  std::string dir_;
};

TEST_F(Cli, CompressDecompressRoundTripHoldsTheBound) {
  write_field("a.f32", 50 * 40 * 3);
  ASSERT_EQ(run("compress -i " + path("a.f32") + " -t f32 -l 50x40x3 -m rel -e 1e-3 -o " + path("a.fzg")).exit_code, 0);
  ASSERT_EQ(run("decompress -i " + path("a.fzg") + " -o " + path("a.out")).exit_code, 0);
  const std::string a = slurp(path("a.f32")), b = slurp(path("a.out"));
  ASSERT_EQ(a.size(), b.size());
  const std::string file = slurp(path("a.fzg"));
  Buffer bytes = Buffer::host(file.size());
  std::memcpy(bytes.data(), file.data(), file.size());
  const Container c = inspect(bytes);
  const uint64_t n = a.size() / 4;
  EXPECT_EQ(testing::count_violations(reinterpret_cast<const float*>(a.data()), reinterpret_cast<const float*>(b.data()),
                                      n, c.header.quant.error_bound),
            0u);
}

TEST_F(Cli, ZyxDimsAreSlowestFirst) {
  write_field("z.f32", 6 * 5 * 4);
  ASSERT_EQ(run("compress -i " + path("z.f32") + " -l 4x5x6 --zyx -m abs -e 0.1 -o " + path("z.fzg")).exit_code, 0);
  const CommandResult info = run("info --json " + path("z.fzg"));
  ASSERT_EQ(info.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(info.out)["dims"], "6x5x4");
}

TEST_F(Cli, WrongDimsGiveOneLineAndNoOutput) {
  write_field("a.f32", 100);
  const CommandResult r = run("compress -i " + path("a.f32") + " -l 10x11 -o " + path("a.fzg"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("needs 440"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  EXPECT_FALSE(exists(path("a.fzg")));
}

TEST_F(Cli, FailedRunLeavesAnExistingOutputUntouched) {
  std::ofstream(path("keep.out")) << "keep";
  std::ofstream(path("bad.fzg")) << "not an fzg file at all, not at all";
  EXPECT_EQ(run("decompress -i " + path("bad.fzg") + " -o " + path("keep.out")).exit_code, 1);
  EXPECT_EQ(slurp(path("keep.out")), "keep");
}

TEST_F(Cli, TruncatedFileIsAClearError) {
  write_field("a.f32", 1000);
  ASSERT_EQ(run("compress -i " + path("a.f32") + " -l 1000 -o " + path("a.fzg")).exit_code, 0);
  const std::string file = slurp(path("a.fzg"));
  std::ofstream(path("cut.fzg"), std::ios::binary).write(file.data(), std::streamsize(file.size() / 2));
  const CommandResult r = run("decompress -i " + path("cut.fzg") + " -o " + path("cut.out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("corrupt or truncated"), std::string::npos) << r.err;
  EXPECT_FALSE(exists(path("cut.out")));
}

TEST_F(Cli, UnknownConfigKeyIsNamed) {
  write_field("a.f32", 64);
  std::ofstream(path("bad.json")) << R"({"stages": [], "store": ["input"], "colour": 1})";
  const CommandResult r = run("compress -i " + path("a.f32") + " -l 64 -c " + path("bad.json") + " -o " + path("a.fzg"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("colour"), std::string::npos) << r.err;
}

TEST_F(Cli, OutOfRangeBoundsAreRejected) {
  write_field("a.f32", 64);
  for (const char* bad : {"-m rel -e 2", "-m abs -e -1", "-m abs -e 0", "-m banana -e 1", "-t f16"})
    EXPECT_EQ(run("compress -i " + path("a.f32") + " -l 64 " + bad + " -o " + path("a.fzg")).exit_code, 1) << bad;
  EXPECT_FALSE(exists(path("a.fzg")));
}

TEST_F(Cli, StdinAndStdoutPipe) {
  write_field("a.f32", 3000);
  const std::string bin = FZG_BINARY;
  const std::string pipeline = "cat " + path("a.f32") + " | " + bin + " compress -i - -l 3000 -m abs -e 0.01 -o - | " +
                               bin + " decompress -i - -o - > " + path("a.out");
  ASSERT_EQ(std::system(pipeline.c_str()), 0);
  EXPECT_EQ(slurp(path("a.out")).size(), 12000u);
}

TEST_F(Cli, InfoShowsHeaderGraphAndStreams) {
  write_field("a.f32", 500);
  ASSERT_EQ(run("compress -i " + path("a.f32") + " -l 500 -o " + path("a.fzg")).exit_code, 0);
  const CommandResult r = run("info " + path("a.fzg"));
  EXPECT_EQ(r.exit_code, 0);
  for (const char* part : {"format version 1", "rel", "pack.out", "predict.outliers", "zero-block"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part;
}

TEST_F(Cli, EvalReportsTheRoundTrip) {
  const CommandResult r = run("eval --gen turbulent -l 40x30x20 -m rel -e 1e-3 --repeat 1 --device cpu --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["violations"], 0);
  EXPECT_GT(j["ratio"].get<double>(), 1.0);
  EXPECT_LE(j["max_abs_error"].get<double>(), j["absolute_bound"].get<double>());
  EXPECT_GT(j["compress_gbps"].get<double>(), 0.0);
}

// --trace prints each direction's timeline, one line per mark, in the order the call passed
// them; the table on stdout is unchanged.
TEST_F(Cli, BenchTraceListsEachCallsMarksInOrder) {
  const CommandResult r = run("bench --device cpu --gen smooth -l 30x20x10 --repeat 1 --warmup 0 --trace");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("kernel-only"), std::string::npos);
  const size_t compress = r.err.find("compress timeline"), decompress = r.err.find("decompress timeline");
  ASSERT_NE(compress, std::string::npos);
  ASSERT_NE(decompress, std::string::npos);
  const std::string forward = r.err.substr(compress, decompress - compress);
  const size_t range = forward.find("value range"), stage = forward.find("stage encoded"), end = forward.find("  end");
  ASSERT_NE(range, std::string::npos);
  ASSERT_NE(stage, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  EXPECT_LT(range, stage);
  EXPECT_LT(stage, end);
  EXPECT_NE(r.err.find("stage decoded", decompress), std::string::npos);
}

TEST_F(Cli, GenWritesTheRequestedSize) {
  ASSERT_EQ(run("gen --kind noisy -t f64 -l 10x10x10 -o " + path("g.f64")).exit_code, 0);
  EXPECT_EQ(slurp(path("g.f64")).size(), 8000u);
  EXPECT_EQ(run("gen --kind fractal -l 10 -o " + path("h.f32")).exit_code, 1);
}

TEST_F(Cli, LosslessModeTakesAnyFile) {
  std::ofstream(path("text.u8")) << "the quick brown fox jumps over the lazy dog\n";
  ASSERT_EQ(run("compress -i " + path("text.u8") + " -t u8 -l 44 -m lossless -o " + path("t.fzg")).exit_code, 0);
  ASSERT_EQ(run("decompress -i " + path("t.fzg") + " -o " + path("t.out")).exit_code, 0);
  EXPECT_EQ(slurp(path("t.out")), slurp(path("text.u8")));
}

}  // namespace
}  // namespace fzg
