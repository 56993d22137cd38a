// The fzg command line, run as a user runs it.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "cli/progress.hh"
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

  CommandResult run(const std::string& args, const std::string& prefix = "") const {
    const std::string command =
        prefix + std::string(FZG_BINARY) + " " + args + " >" + path("stdout") + " 2>" + path("stderr");
    const int status = std::system(command.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(path("stdout")), slurp(path("stderr"))};
  }
  static std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  static bool exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }
  static bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
  static long lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }
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

TEST_F(Cli, FillValuesComeBackExactlyAndStayOutOfTheRange) {
  std::vector<float> v(60 * 50);
  for (size_t i = 0; i < v.size(); ++i) v[i] = (i % 60) > 40 ? -999.f : float(std::sin(0.1 * double(i)));
  std::ofstream(path("f.f32"), std::ios::binary).write(reinterpret_cast<const char*>(v.data()), std::streamsize(4 * v.size()));
  const auto compressed = run("compress -i " + path("f.f32") + " -l 60x50 -m rel -e 1e-3 --fill -999 -o " + path("f.fzg"));
  ASSERT_EQ(compressed.exit_code, 0) << compressed.err;
  ASSERT_EQ(run("decompress -i " + path("f.fzg") + " -o " + path("f.out")).exit_code, 0);
  const std::string back = slurp(path("f.out"));
  ASSERT_EQ(back.size(), 4 * v.size());
  const auto* b = reinterpret_cast<const float*>(back.data());
  uint64_t off = 0;
  for (size_t i = 0; i < v.size(); ++i)
    off += v[i] == -999.f ? std::memcmp(&v[i], &b[i], 4) != 0 : !(std::fabs(v[i] - b[i]) <= 2e-3);  // rel of [-1, 1]
  EXPECT_EQ(off, 0u);
  const auto info = run("info " + path("f.fzg"));
  EXPECT_TRUE(contains(info.out, "fill_values")) << info.out;
  EXPECT_TRUE(contains(info.out, "predict.mask")) << info.out;
  const auto eval = run("eval -i " + path("f.f32") + " -l 60x50 -m rel -e 1e-3 --fill -999 --repeat 1 --json");
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  EXPECT_TRUE(contains(eval.out, "\"missing_points\": 950")) << eval.out;
}

TEST_F(Cli, BadFillValuesGiveOneLine) {
  write_field("a.f32", 100);
  for (const std::string bad : {"-m rel --fill sea", "-m rel --fill none --fill 1", "-m rel --fill 1 --fill 1",
                                "-m lossless --fill 1"}) {
    const auto r = run("compress -i " + path("a.f32") + " -l 100 -e 1e-3 " + bad + " -o " + path("a.fzg"));
    EXPECT_EQ(r.exit_code, 1) << bad;
    EXPECT_EQ(lines(r.err), 1) << bad << ": " << r.err;
    EXPECT_FALSE(exists(path("a.fzg"))) << bad;
  }
  // Typed fill values with lossless mode, in every command that takes them.
  for (const std::string& command : {std::string("eval"), std::string("bench --device cpu"), "sweep -o " + path("s.csv")}) {
    const auto r = run(command + " -i " + path("a.f32") + " -l 100 -m lossless --fill 1");
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_TRUE(contains(r.err, "--fill has no effect with -m lossless")) << command << ": " << r.err;
  }
  EXPECT_FALSE(exists(path("s.csv")));
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
  for (const char* part : {"format version 4", "rel", "pack.out", "predict.outliers", "zero-block"})
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
  const size_t range = forward.find("value range"), stage = forward.find("step encoded"), end = forward.find("  end");
  ASSERT_NE(range, std::string::npos);
  ASSERT_NE(stage, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  EXPECT_LT(range, stage);
  EXPECT_LT(stage, end);
  EXPECT_NE(r.err.find("step decoded", decompress), std::string::npos);
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

// --- Inputs that are not files, and fields that cannot fit (issue #15) ---

TEST_F(Cli, DirectoryInputIsNamedAsADirectory) {
  ASSERT_EQ(mkdir(path("d").c_str(), 0755), 0);
  for (const std::string& args : std::vector<std::string>{"compress -i " + path("d") + " -l 10 -o " + path("a.fzg"),
                                 "decompress -i " + path("d") + " -o " + path("a.out"), "info " + path("d"),
                                 "eval -i " + path("d") + " -l 10"}) {
    const CommandResult r = run(args);
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_TRUE(contains(r.err, "'" + path("d") + "' is a directory")) << args << ": " << r.err;
    EXPECT_FALSE(contains(r.err, "out of memory")) << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
  }
}

TEST_F(Cli, SocketInputIsNamedAsNotAFile) {
  const int s = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path("s").c_str());
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const CommandResult r = run("info " + path("s"));
  close(s);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "is a socket")) << r.err;
}

TEST_F(Cli, MissingInputFileIsNamed) {
  const CommandResult r = run("decompress -i " + path("none.fzg") + " -o " + path("a.out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "'" + path("none.fzg") + "' does not exist")) << r.err;
}

// Root reads any file, so the command runs as nobody where the test runs as root.
TEST_F(Cli, UnreadableInputIsNamed) {
  write_field("a.f32", 64);
  ASSERT_EQ(chmod(path("a.f32").c_str(), 0), 0);
  ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);
  std::string prefix;
  if (geteuid() == 0) {
    if (access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "root without setpriv: every file is readable";
    prefix = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  }
  const CommandResult r = run("compress -i " + path("a.f32") + " -l 64 -o -", prefix);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "cannot read '" + path("a.f32") + "': permission denied")) << r.err;
}

// A FIFO has no size to look up: it is read to its end.
TEST_F(Cli, FifoInputIsRead) {
  write_field("a.f32", 3000);
  ASSERT_EQ(mkfifo(path("fifo").c_str(), 0600), 0);
  const std::string command = "cat " + path("a.f32") + " > " + path("fifo") + " & " + FZG_BINARY + " compress -i " +
                              path("fifo") + " -l 3000 -m abs -e 0.01 -o " + path("a.fzg") + " 2>" + path("stderr");
  ASSERT_EQ(std::system(command.c_str()), 0) << slurp(path("stderr"));
  ASSERT_EQ(run("decompress -i " + path("a.fzg") + " -o " + path("a.out")).exit_code, 0);
  EXPECT_EQ(slurp(path("a.out")).size(), 12000u);
}

// A device may have no end: it gives the bytes the field needs.
TEST_F(Cli, CharacterDeviceInputGivesTheBytesTheFieldNeeds) {
  ASSERT_EQ(run("compress -i /dev/zero -t u8 -l 1000 -m lossless -o " + path("z.fzg")).exit_code, 0);
  ASSERT_EQ(run("decompress -i " + path("z.fzg") + " -o " + path("z.u8")).exit_code, 0);
  EXPECT_EQ(slurp(path("z.u8")), std::string(1000, '\0'));
}

// A pipe that holds more than the field is refused: the dimensions are wrong.
TEST_F(Cli, PipeLongerThanTheFieldIsRefused) {
  write_field("a.f32", 1000);
  const CommandResult r = run("compress -i - -l 999 -o " + path("a.fzg"), "cat " + path("a.f32") + " | ");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "standard input holds more than 3996 bytes")) << r.err;
  EXPECT_FALSE(exists(path("a.fzg")));
}

// A pipe or a device given as -o is written in place, not replaced by a renamed file.
TEST_F(Cli, FifoOutputIsWrittenInPlace) {
  write_field("a.f32", 3000);
  ASSERT_EQ(mkfifo(path("fifo").c_str(), 0600), 0);
  const std::string command = "timeout 20 cat " + path("fifo") + " > " + path("got") + " & reader=$!; " + FZG_BINARY +
                              " compress -i " + path("a.f32") + " -l 3000 -m abs -e 0.01 -o " + path("fifo") +
                              " 2>" + path("stderr") + "; status=$?; wait $reader; exit $status";
  ASSERT_EQ(std::system(command.c_str()), 0) << slurp(path("stderr"));
  struct stat st {};
  ASSERT_EQ(stat(path("fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  ASSERT_EQ(run("decompress -i " + path("got") + " -o " + path("a.out")).exit_code, 0);
  EXPECT_EQ(slurp(path("a.out")).size(), 12000u);
}

TEST_F(Cli, FieldLargerThanMemoryIsNamedWithItsSize) {
  for (const std::string& args : std::vector<std::string>{"gen --kind smooth -l 100000x100000x100000 -o " + path("g.f32"),
                                 "eval --gen smooth -l 100000x100000x100000"}) {
    const CommandResult r = run(args);
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_TRUE(contains(r.err, "needs 4000000000000000 bytes")) << r.err;
    EXPECT_TRUE(contains(r.err, "memory")) << r.err;
    EXPECT_FALSE(contains(r.err, "out of memory")) << r.err;
  }
  EXPECT_FALSE(exists(path("g.f32")));
}

// 10^11 cubed values: more bytes than 64 bits count.
TEST_F(Cli, FieldSizeOverflowingSixtyFourBitsIsCaught) {
  for (const std::string& args : std::vector<std::string>{"gen --kind smooth -l 100000000000x100000000000x100000000000 -o " + path("g.f32"),
                                 "gen --kind smooth -t f64 -l 3037000500x3037000500 -o " + path("g.f64")}) {
    const CommandResult r = run(args);
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_TRUE(contains(r.err, "needs about")) << r.err;
    EXPECT_FALSE(contains(r.err, "out of memory")) << r.err;
  }
}

// --- The output is never the input ---

TEST_F(Cli, CompressRefusesToWriteOverItsInput) {
  write_field("a.f32", 64);
  ASSERT_EQ(link(path("a.f32").c_str(), path("hard.f32").c_str()), 0);
  ASSERT_EQ(symlink(path("a.f32").c_str(), path("soft.f32").c_str()), 0);
  const std::string original = slurp(path("a.f32"));
  for (const std::string& output : std::vector<std::string>{path("a.f32"), dir_ + "/./a.f32", path("hard.f32"), path("soft.f32")}) {
    const CommandResult r = run("compress -i " + path("a.f32") + " -l 64 -o " + output);
    EXPECT_EQ(r.exit_code, 1) << output;
    EXPECT_TRUE(contains(r.err, "is the input")) << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
  }
  EXPECT_EQ(slurp(path("a.f32")), original);
}

TEST_F(Cli, DecompressRefusesToWriteOverItsInput) {
  write_field("a.f32", 64);
  ASSERT_EQ(run("compress -i " + path("a.f32") + " -l 64 -o " + path("a.fzg")).exit_code, 0);
  ASSERT_EQ(link(path("a.fzg").c_str(), path("hard.fzg").c_str()), 0);
  const std::string original = slurp(path("a.fzg"));
  for (const std::string& output : std::vector<std::string>{path("a.fzg"), dir_ + "/./a.fzg", path("hard.fzg")}) {
    const CommandResult r = run("decompress -i " + path("a.fzg") + " -o " + output);
    EXPECT_EQ(r.exit_code, 1) << output;
    EXPECT_TRUE(contains(r.err, "is the input")) << r.err;
  }
  EXPECT_EQ(slurp(path("a.fzg")), original);
}

// --- The command line says what it does ---

TEST_F(Cli, SeedIsOfferedOnlyWhereGenIs) {
  EXPECT_FALSE(contains(run("compress --help").out, "--seed"));
  for (const char* command : {"eval", "bench", "gen"})
    EXPECT_TRUE(contains(run(std::string(command) + " --help").out, "--seed")) << command;
  write_field("a.f32", 64);
  EXPECT_EQ(run("compress -i " + path("a.f32") + " -l 64 --seed 3 -o " + path("a.fzg")).exit_code, 1);
}

TEST_F(Cli, TypeHelpOffersIntegersOnlyWhereLosslessIs) {
  EXPECT_FALSE(contains(run("gen --help").out, "u8"));
  EXPECT_FALSE(contains(run("gen --help").out, "lossless"));
  for (const char* command : {"compress", "eval", "bench"})
    EXPECT_TRUE(contains(run(std::string(command) + " --help").out, "u8, u16, u32, i32 with -m lossless")) << command;
}

TEST_F(Cli, ModeHelpListsR2rAsAnAliasOfRel) {
  const CommandResult help = run("compress --help");
  EXPECT_TRUE(contains(help.out, "r2r")) << help.out;
  write_field("a.f32", 64);
  ASSERT_EQ(run("compress -i " + path("a.f32") + " -l 64 -m r2r -e 1e-2 -o " + path("a.fzg")).exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(run("info --json " + path("a.fzg")).out)["mode"], "rel");
}

// The version printed is the CMake project's.
TEST_F(Cli, VersionIsTheProjectVersion) {
  const std::string cmake = slurp(std::string(FZG_TESTS_DIR) + "/../CMakeLists.txt");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(cmake, m, std::regex(R"(project\(fzg VERSION ([0-9.]+))")));
  const CommandResult r = run("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "fzg " + m[1].str() + "\n");
}

TEST_F(Cli, UnknownCommandIsNamed) {
  const CommandResult r = run("compres -i x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "fzg: error: unknown command 'compres' (expected compress, decompress, info, eval, gen, bench, sweep or compare)\n");
}

TEST_F(Cli, UsageErrorsAreOneLineAndExitOne) {
  const CommandResult r = run("compress --bogus");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_TRUE(contains(r.err, "--bogus")) << r.err;
}

// Text a user typed, or a file stored, reaches the terminal as one line: newlines and escape
// sequences in it are shown escaped, never acted on.
TEST_F(Cli, MessagesAndStoredNamesStayOneLineOfText) {
  const CommandResult typed =
      run(std::string("compress -i \"$(printf 'two\\nlines\\033[2J\\302\\2332J')\" -l 4 -o ") + path("a.fzg"));
  EXPECT_EQ(typed.exit_code, 1);
  EXPECT_EQ(lines(typed.err), 1) << typed.err;
  EXPECT_TRUE(contains(typed.err, "two\\nlines\\x1b[2J\\u009b2J")) << typed.err;
  write_field("a.f32", 500);
  std::ofstream(path("named.json")) << R"({"name": "fz\n\u001b[2Jfake line", "stages": [
    {"id": "p", "type": "lorenzo", "inputs": {"field": "input"}},
    {"id": "s", "type": "bitshuffle", "inputs": {"in": "p.codes"}},
    {"id": "z", "type": "zero-block", "inputs": {"in": "s.out"}}], "store": ["z.out", "p.outliers"]})";
  ASSERT_EQ(run("compress -i " + path("a.f32") + " -l 500 -c " + path("named.json") + " -o " + path("a.fzg")).exit_code, 0);
  const CommandResult info = run("info " + path("a.fzg"));
  EXPECT_TRUE(contains(info.out, "graph      fz\\n\\x1b[2Jfake line\n")) << info.out;
  EXPECT_FALSE(contains(info.out, "\x1b")) << info.out;
}

// Inputs with no end (a device of zeros) or of the wrong kind fail at once, by name.
TEST_F(Cli, EndlessAndOddInputsFailAtOnce) {
  write_field("a.f32", 500);
  for (const std::string& bad : {"decompress -i /dev/zero -o " + path("x.raw"), std::string("info /dev/zero"),
                                 "decompress -i - -o " + path("x.raw") + " </dev/zero"}) {
    const CommandResult r = run(bad, "timeout 60 ");
    EXPECT_EQ(r.exit_code, 1) << bad;
    EXPECT_TRUE(contains(r.err, "not an fzg file (bad magic)")) << bad << ": " << r.err;
  }
  const CommandResult endless = run("compress -i " + path("a.f32") + " -l 500 -c /dev/zero -o " + path("x.fzg"), "timeout 60 ");
  EXPECT_EQ(endless.exit_code, 1);
  EXPECT_TRUE(contains(endless.err, "is over 16 MiB")) << endless.err;
  const CommandResult directory = run("compress -i " + path("a.f32") + " -l 500 -c " + dir_ + " -o " + path("x.fzg"));
  EXPECT_TRUE(contains(directory.err, "is a directory")) << directory.err;
  EXPECT_FALSE(exists(path("x.fzg")));
  EXPECT_FALSE(exists(path("x.raw")));
}

// Counts, seeds and sizes are whole numbers: "-1" is not 2^64 - 1, "1T" not 1.
TEST_F(Cli, WholeNumberOptionsRefuseSignsAndUnknownUnits) {
  write_field("a.f32", 500);
  ASSERT_EQ(run("compress -i " + path("a.f32") + " -l 500 -o " + path("a.fzg")).exit_code, 0);
  const std::string field = " -i " + path("a.f32") + " -l 500";
  for (const auto& [bad, says] : std::vector<std::pair<std::string, std::string>>{
           {"gen --kind smooth -l 10 -o " + path("g.f32") + " --seed -1", "expected a whole number"},
           {"gen --kind smooth -l 10 -o " + path("g.f32") + " --seed 18446744073709551616", "expected a whole number"},
           {"decompress -i " + path("a.fzg") + " -o " + path("x.raw") + " --device-memory -1", "expected a whole number"},
           {"decompress -i " + path("a.fzg") + " -o " + path("x.raw") + " --device-memory 17592186044416", "2^44"},
           {"eval" + field + " --repeat -2", "expected a whole number"},
           {"bench --sizes 1T --device cpu", "bad size '1T'"},
           {"bench --sizes 2kk --device cpu", "bad size '2kk'"},
           {"bench --sizes 1M,,2M --device cpu", "bad size ''"}}) {
    const CommandResult r = run(bad);
    EXPECT_EQ(r.exit_code, 1) << bad;
    EXPECT_EQ(lines(r.err), 1) << bad << ": " << r.err;
    EXPECT_TRUE(contains(r.err, says)) << bad << ": " << r.err;
  }
  EXPECT_FALSE(exists(path("g.f32")));
  EXPECT_FALSE(exists(path("x.raw")));
}

// A sub-box is clipped to the field, as a numpy slice is; one that meets no point, or an empty
// --range, is an error that names the box as it was asked for.
TEST_F(Cli, RangeOutsideTheFieldOrEmptyIsAnError) {
  write_field("a.f32", 500);
  ASSERT_EQ(run("compress -i " + path("a.f32") + " -l 500 -o " + path("a.fzg")).exit_code, 0);
  const CommandResult outside = run("decompress -i " + path("a.fzg") + " -o " + path("x.raw") + " --range 600:700");
  EXPECT_EQ(outside.exit_code, 1);
  EXPECT_TRUE(contains(outside.err, "the box [600, 700) x [0, end) x [0, end) holds no point")) << outside.err;
  const CommandResult empty = run("decompress -i " + path("a.fzg") + " -o " + path("x.raw") + " --range ''");
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_TRUE(contains(empty.err, "an empty --range")) << empty.err;
  EXPECT_FALSE(exists(path("x.raw")));
  ASSERT_EQ(run("decompress -i " + path("a.fzg") + " -o " + path("x.raw") + " --range 490:700").exit_code, 0);
  EXPECT_EQ(slurp(path("x.raw")).size(), 10u * 4);
}

TEST_F(Cli, MissingInputIsReportedBeforeDims) {
  EXPECT_TRUE(contains(run("compress -o " + path("a.fzg")).err, "an input is required (-i FILE"));
  for (const char* command : {"eval", "bench"})
    EXPECT_TRUE(contains(run(command).err, "an input is required (-i FILE, or --gen KIND)")) << command;
}

TEST_F(Cli, InfoOnALosslessFileShowsNoBound) {
  std::ofstream(path("text.u8")) << "the quick brown fox jumps over the lazy dog\n";
  ASSERT_EQ(run("compress -i " + path("text.u8") + " -t u8 -l 44 -m lossless -o " + path("t.fzg")).exit_code, 0);
  const CommandResult text = run("info " + path("t.fzg"));
  EXPECT_TRUE(contains(text.out, "bound      lossless")) << text.out;
  EXPECT_FALSE(contains(text.out, "step")) << text.out;
  const auto j = nlohmann::json::parse(run("info --json " + path("t.fzg")).out);
  EXPECT_EQ(j["mode"], "lossless");
  for (const char* key : {"requested_bound", "absolute_bound", "step", "min", "max"}) EXPECT_FALSE(j.contains(key)) << key;
}

TEST_F(Cli, InfoOnALossyFileShowsTheBoundAndStep) {
  write_field("a.f32", 500);
  ASSERT_EQ(run("compress -i " + path("a.f32") + " -l 500 -m abs -e 0.5 -o " + path("a.fzg")).exit_code, 0);
  const auto j = nlohmann::json::parse(run("info --json " + path("a.fzg")).out);
  EXPECT_EQ(j["requested_bound"], 0.5);
  EXPECT_GT(j["step"].get<double>(), 0.0);
  EXPECT_TRUE(j.contains("min"));
}

// A lossy bound with a config that has no lossy stage: stored exactly, and compress says why
// (not that a lossy coding was larger: there was none).
TEST_F(Cli, LossyBoundWithALosslessConfigSaysTheConfigHasNoLossyStage) {
  write_field("a.f32", 20000);
  const std::string config = testing::source_dir() + "/configs/lossless-gpulz.json";
  const CommandResult r =
      run("compress -i " + path("a.f32") + " -l 20000 -m rel -e 1e-3 -c " + config + " -o " + path("a.fzg"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "stored exactly: the config has no lossy stage")) << r.err;
  EXPECT_FALSE(contains(r.err, "lossy coding was larger")) << r.err;
  const CommandResult info = run("info " + path("a.fzg"));
  EXPECT_TRUE(contains(info.out, "stored exactly")) << info.out;
}

// abs 1e-300 makes nearly every point an outlier: the file is the field stored exactly, no
// larger than the field, and compress and info say so.
TEST_F(Cli, HopelesslyTightBoundIsStoredExactlyAndSaysSo) {
  write_field("a.f32", 20000);
  const CommandResult r = run("compress -i " + path("a.f32") + " -l 20000 -m abs -e 1e-300 -o " + path("a.fzg"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "stored exactly: the lossy coding was larger")) << r.err;
  EXPECT_LT(slurp(path("a.fzg")).size(), slurp(path("a.f32")).size() + 1024);
  const auto j = nlohmann::json::parse(run("info --json " + path("a.fzg")).out);
  EXPECT_EQ(j["stored_exactly"], true);
  EXPECT_EQ(j["mode"], "abs");
  ASSERT_EQ(run("decompress -i " + path("a.fzg") + " -o " + path("a.out")).exit_code, 0);
  EXPECT_EQ(slurp(path("a.out")), slurp(path("a.f32")));
  write_field("b.f32", 20000);
  ASSERT_EQ(run("compress -i " + path("b.f32") + " -l 20000 -m abs -e 0.5 -o " + path("b.fzg")).exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(run("info --json " + path("b.fzg")).out)["stored_exactly"], false);
}

// nlohmann prints inf as null; fzg prints the string "inf" (and "-inf", "nan").
TEST_F(Cli, JsonWritesNonFiniteNumbersAsStrings) {
  const CommandResult r = run("eval --gen turbulent -l 40x30x20 -m lossless --repeat 1 --device cpu --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["psnr_db"], "inf");
  EXPECT_FALSE(contains(r.out, "null"));
}

TEST_F(Cli, EvalNamesTheFzGpuFormatRatioAndHelpExplainsIt) {
  const CommandResult r = run("eval --gen turbulent -l 40x30x20 --repeat 1 --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "FZ-GPU format")) << r.out;
  EXPECT_FALSE(contains(r.out, "yardstick")) << r.out;
  const std::string help = run("eval --help").out;
  EXPECT_TRUE(contains(help, "FZ-GPU format")) << help;
  EXPECT_TRUE(contains(help, "no outlier handling")) << help;
}

// --- Progress ---

TEST_F(Cli, NoProgressWhenStderrIsNotATerminal) {
  write_field("a.f32", 3000);
  const CommandResult r = run("compress -i " + path("a.f32") + " -l 3000 -o " + path("a.fzg"), "FZG_PROGRESS_DELAY=0 ");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "\r")) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;  // the summary alone
}

// On a terminal (a pseudo-terminal here), with no delay: each step's line, ended by a newline.
TEST_F(Cli, ProgressShowsOnATerminal) {
  write_field("a.f32", 3000);
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0) GTEST_SKIP() << "no pseudo-terminal here";
  ASSERT_EQ(grantpt(master), 0);
  ASSERT_EQ(unlockpt(master), 0);
  const std::string terminal = ptsname(master);
  const int slave = open(terminal.c_str(), O_RDWR | O_NOCTTY);  // keeps what was written readable
  ASSERT_GE(slave, 0);
  const std::string command = "FZG_PROGRESS_DELAY=0 " + std::string(FZG_BINARY) + " compress -i " + path("a.f32") +
                              " -l 3000 -o " + path("a.fzg") + " 2>" + terminal;
  EXPECT_EQ(std::system(command.c_str()), 0);
  fcntl(master, F_SETFL, O_NONBLOCK);
  std::string shown;
  char chunk[4096];
  for (ssize_t n; (n = read(master, chunk, sizeof chunk)) > 0;) shown.append(chunk, size_t(n));
  close(slave);
  close(master);
  EXPECT_TRUE(contains(shown, "\rreading '" + path("a.f32") + "': 12.0 kB in ")) << shown;
  EXPECT_TRUE(contains(shown, "\rcompressing 12.0 kB: ")) << shown;
  EXPECT_TRUE(contains(shown, "\rwriting '" + path("a.fzg") + "': ")) << shown;
}

TEST(CliProgress, BytesAreDecimal) {
  EXPECT_EQ(cli::format_bytes(512), "512 B");
  EXPECT_EQ(cli::format_bytes(1500), "1.50 kB");
  EXPECT_EQ(cli::format_bytes(64e6), "64.0 MB");
  EXPECT_EQ(cli::format_bytes(4e9), "4.00 GB");
  EXPECT_EQ(cli::format_bytes(999.7e6), "1.00 GB");
  EXPECT_EQ(cli::format_rate(850e6), "850 MB/s");
  EXPECT_EQ(cli::format_rate(1.25e9), "1.25 GB/s");
}

TEST(CliProgress, SecondsReadAsMinutesAndHours) {
  EXPECT_EQ(cli::format_seconds(0.42), "0.4 s");
  EXPECT_EQ(cli::format_seconds(12.3), "12 s");
  EXPECT_EQ(cli::format_seconds(185), "3 min 05 s");
  EXPECT_EQ(cli::format_seconds(7620), "2 h 07 min");
}

TEST(CliProgress, BytesLineShowsDoneOfTotalRateAndTimeLeft) {
  cli::ProgressState s;
  s.what = "reading a.f32";
  s.unit = cli::ProgressUnit::bytes;
  s.done = 1.2e9, s.total = 4e9, s.elapsed_s = 1.5;
  EXPECT_EQ(cli::progress_line(s), "reading a.f32: 1.20 GB of 4.00 GB (30%), 800 MB/s, ETA 3.5 s");
}

TEST(CliProgress, BytesLineWithoutTotalShowsRateAndElapsedTime) {
  cli::ProgressState s;
  s.what = "reading standard input";
  s.unit = cli::ProgressUnit::bytes;
  s.done = 3e9, s.elapsed_s = 2;
  EXPECT_EQ(cli::progress_line(s), "reading standard input: 3.00 GB, 1.50 GB/s, 2.0 s");
}

TEST(CliProgress, FinishedBytesLineShowsTimeAndRate) {
  cli::ProgressState s;
  s.what = "writing a.fzg";
  s.unit = cli::ProgressUnit::bytes;
  s.done = s.total = 4e9, s.elapsed_s = 3.2, s.finished = true;
  EXPECT_EQ(cli::progress_line(s), "writing a.fzg: 4.00 GB in 3.2 s (1.25 GB/s)");
}

TEST(CliProgress, CountLineShowsRunsAndTimeLeft) {
  cli::ProgressState s;
  s.what = "eval";
  s.unit = cli::ProgressUnit::count;
  s.noun = "round trips";
  s.done = 3, s.total = 10, s.elapsed_s = 6;
  EXPECT_EQ(cli::progress_line(s), "eval: 3 of 10 round trips (30%), 6.0 s, ETA 14 s");
}

// Estimated when a run ends, the time left counts down while the next one goes on.
TEST(CliProgress, TimeLeftCountsDownBetweenUpdates) {
  cli::ProgressState s;
  s.what = "eval";
  s.unit = cli::ProgressUnit::count;
  s.noun = "round trips";
  s.done = 1, s.total = 4, s.updated_s = 2, s.elapsed_s = 3;
  EXPECT_EQ(cli::progress_line(s), "eval: 1 of 4 round trips (25%), 3.0 s, ETA 5.0 s");
  s.elapsed_s = 20;  // longer than estimated: nothing left to count down
  EXPECT_EQ(cli::progress_line(s), "eval: 1 of 4 round trips (25%), 20 s, ETA 0.0 s");
}

// bench's runs differ in cost: the share of the work, not of the runs, gives the time left.
TEST(CliProgress, WeightedWorkGivesThePercentageAndTimeLeft) {
  cli::ProgressState s;
  s.what = "bench";
  s.unit = cli::ProgressUnit::count;
  s.done = 50, s.total = 100, s.work_done = 1, s.work_total = 4, s.elapsed_s = 10;
  EXPECT_EQ(cli::progress_line(s), "bench: 50 of 100 runs (25%), 10 s, ETA 30 s");
}

// One library call has no measure of progress: the time it has taken, nothing invented.
TEST(CliProgress, TimeLineShowsElapsedTimeAlone) {
  cli::ProgressState s;
  s.what = "compressing 4.00 GB";
  s.unit = cli::ProgressUnit::time;
  s.elapsed_s = 3.24;
  EXPECT_EQ(cli::progress_line(s), "compressing 4.00 GB: 3.2 s");
}

std::string written_to(const std::function<void(std::FILE*)>& use) {
  std::FILE* f = std::tmpfile();
  use(f);
  std::fflush(f);
  std::rewind(f);
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;) text += char(c);
  std::fclose(f);
  return text;
}

TEST(CliProgress, DisabledProgressWritesNothing) {
  const std::string text = written_to([](std::FILE* f) {
    cli::Progress p("reading", cli::ProgressUnit::bytes, 100, false, f, 0);
    p.set(100);
    p.finish();
  });
  EXPECT_EQ(text, "");
}

TEST(CliProgress, ShortWorkWritesNothing) {
  const std::string text = written_to([](std::FILE* f) {
    cli::Progress p("reading", cli::ProgressUnit::bytes, 100, true, f, 60);
    p.set(100);
  });
  EXPECT_EQ(text, "");
}

TEST(CliProgress, LongWorkEndsItsLineWithANewline) {
  const std::string text = written_to([](std::FILE* f) {
    cli::Progress p("eval", cli::ProgressUnit::count, 2, true, f, 0);
    p.set(2);
    p.finish();
  });
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.front(), '\r');
  EXPECT_EQ(text.back(), '\n');
  EXPECT_TRUE(text.find("eval: 2 runs in ") != std::string::npos) << text;
}

// A step inside a step that already shows its line (bench generating its field) stays silent.
TEST(CliProgress, OnlyTheOutermostProgressDraws) {
  const std::string text = written_to([](std::FILE* f) {
    cli::Progress outer("bench", cli::ProgressUnit::count, 2, true, f, 3600);
    cli::Progress inner("generating", cli::ProgressUnit::time, 0, true, f, 0);
    EXPECT_TRUE(outer.enabled());
    EXPECT_FALSE(inner.enabled());
    inner.finish();
  });
  EXPECT_EQ(text, "");
}

}  // namespace
// --range decodes a sub-box (fastest first, half-open) from the chunks that hold it: the
// values the whole field's decode has there.
TEST_F(Cli, DecompressRangeGivesTheSubBox) {
  write_field("a.f32", 40 * 30 * 20);
  nlohmann::json config = Graph::default_fz().to_json();
  config["chunk_values"] = 40 * 30 * 8;
  std::ofstream(path("c.json")) << config.dump();
  ASSERT_EQ(run("compress -i " + path("a.f32") + " -l 40x30x20 -c " + path("c.json") + " -o " + path("a.fzg")).exit_code, 0);
  ASSERT_EQ(run("decompress -i " + path("a.fzg") + " -o " + path("whole.f32")).exit_code, 0);
  const CommandResult r = run("decompress -i " + path("a.fzg") + " --range 5:15,0:30,7:17 -o " + path("box.f32"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string whole = slurp(path("whole.f32")), box = slurp(path("box.f32"));
  ASSERT_EQ(box.size(), 10u * 30 * 10 * 4);
  std::string expected;
  for (int z = 7; z < 17; ++z)
    for (int y = 0; y < 30; ++y) expected += whole.substr(((z * 30 + y) * 40 + 5) * 4, 10 * 4);
  EXPECT_EQ(box, expected);
  for (const char* bad : {"5:3", "1:2,x:4", "0:1,0:1,0:1,0:1", "100:200"}) {
    const CommandResult e = run("decompress -i " + path("a.fzg") + " --range " + bad + " -o " + path("bad.f32"));
    EXPECT_NE(e.exit_code, 0) << bad;
    EXPECT_NE(e.err.find("fzg: error:"), std::string::npos) << bad << ": " << e.err;
  }
}

// fzg sweep: a row per (field, config, bound) with every column, dims from the file names,
// and a second sweep over more bounds runs only the rows that are missing.
TEST_F(Cli, SweepWritesARowPerRunAndResumes) {
  write_field("a_30x20x4.f32", 30 * 20 * 4);
  write_field("b_500.f32", 500);
  const std::string inputs = path("a_30x20x4.f32") + "," + path("b_500.f32");
  const std::string configs = testing::source_dir() + "/configs/fz.json," + testing::source_dir() + "/configs/cusz.json";
  const CommandResult first = run("sweep -i " + inputs + " -c " + configs + " -e 1e-2,1e-3 -o " + path("r.csv"));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string csv = slurp(path("r.csv"));
  ASSERT_EQ(lines(csv), 1 + 2 * 2 * 2);
  const std::string header = csv.substr(0, csv.find('\n'));
  for (const char* column : {"field", "config", "eb", "dims", "ratio", "bits_per_value", "psnr_db", "nrmse", "ssim",
                             "pearson", "error_autocorrelation", "max_abs_error", "max_rel_error", "compress_gbps",
                             "kernel_compress_gbps", "peak_device_bytes", "bound_held"})
    EXPECT_TRUE(contains(header, column)) << column;
  const auto cells = [](const std::string& line) {
    std::vector<std::string> out(1);
    for (char c : line) {
      if (c == ',') out.emplace_back();
      else out.back().push_back(c);
    }
    return out;
  };
  const std::vector<std::string> names = cells(header);
  const size_t held = std::find(names.begin(), names.end(), "bound_held") - names.begin();
  std::istringstream rows_in(csv.substr(header.size() + 1));
  for (std::string row; std::getline(rows_in, row);) {
    ASSERT_EQ(cells(row).size(), names.size()) << row;
    EXPECT_EQ(cells(row)[held], "yes") << row;
  }
  EXPECT_TRUE(contains(csv, ",30x20x4,f32,"));
  EXPECT_TRUE(contains(csv, ",500,f32,"));

  const CommandResult again = run("sweep -i " + inputs + " -c " + configs + " -e 1e-2,1e-3,1e-4 -o " + path("r.csv"));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(contains(again.err, "(8 already there)")) << again.err;
  const std::string more = slurp(path("r.csv"));
  ASSERT_EQ(lines(more), 1 + 2 * 2 * 3);
  EXPECT_EQ(more.substr(0, csv.size()), csv);  // the finished rows are kept as they were

  // The JSON form holds the same runs.
  ASSERT_EQ(run("sweep -i " + path("b_500.f32") + " -e 1e-3 -o " + path("r.json")).exit_code, 0);
  const nlohmann::json rows = nlohmann::json::parse(slurp(path("r.json")));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["config"], "fz");
  EXPECT_EQ(rows[0]["bound_held"], "yes");
  EXPECT_GT(rows[0]["ratio"].get<double>(), 1.0);
}

TEST_F(Cli, SweepRefusesBadPlansBeforeRunning) {
  write_field("a_30x20.f32", 600);
  write_field("plain.f32", 600);
  std::ofstream(path("not-a-sweep.csv")) << "x,y\n1,2\n";
  std::ofstream(path("plan.json")) << R"({"fields": ["a_30x20.f32"], "configs": ["default"], "bounds": [1e-3], "extra": 1})";
  std::ofstream(path("typed.json")) << R"({"fields": ["a_30x20.f32"], "configs": ["default"], "bounds": [1e-3], "device": 5})";
  const std::string a = path("a_30x20.f32");
  for (const std::string& bad :
       {"sweep -i " + a + " -e 1e-3 -o " + path("x.csv") + " -c " + path("missing.json"),
        "sweep -i " + path("missing_10.f32") + " -o " + path("x.csv"),
        "sweep -i " + path("plain.f32") + " -o " + path("x.csv"),
        "sweep -i " + a + " -l 7x7 -o " + path("x.csv"),
        "sweep -i " + a + " -e 1e-3,oops -o " + path("x.csv"),
        "sweep -i " + a + " -e 1e-3 -o " + path("not-a-sweep.csv"),
        "sweep -i " + a + " -e 1e-3",
        "sweep --plan " + path("plan.json") + " -o " + path("x.csv"),
        "sweep --plan " + path("plan.json") + " -i " + a + " -o " + path("x.csv"),
        "sweep --plan " + path("typed.json") + " -o " + path("x.csv"),
        "sweep -i " + dir_ + " -l 7x7 -o " + path("x.csv")}) {
    const CommandResult r = run(bad);
    EXPECT_EQ(r.exit_code, 1) << bad;
    EXPECT_EQ(lines(r.err), 1) << bad << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "fzg: error:")) << bad << ": " << r.err;
    EXPECT_FALSE(exists(path("x.csv"))) << bad;
  }
  EXPECT_EQ(slurp(path("not-a-sweep.csv")), "x,y\n1,2\n");
}

// fzg compare reports a reconstruction's metrics by the code eval uses: the same numbers for
// the same round trip, violations only against a given bound.
TEST_F(Cli, CompareGivesEvalsMetricsForAnyReconstruction) {
  write_field("a.f32", 40 * 30 * 5);
  const std::string field = " -i " + path("a.f32") + " -l 40x30x5";
  ASSERT_EQ(run("compress" + field + " -m abs -e 0.01 -o " + path("a.fzg")).exit_code, 0);
  ASSERT_EQ(run("decompress -i " + path("a.fzg") + " -o " + path("a.out")).exit_code, 0);
  const CommandResult eval = run("eval" + field + " -m abs -e 0.01 --repeat 1 --json");
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  const CommandResult held = run("compare" + field + " -r " + path("a.out") + " --bound 0.01");
  ASSERT_EQ(held.exit_code, 0) << held.err;
  const nlohmann::json e = nlohmann::json::parse(eval.out), c = nlohmann::json::parse(held.out);
  for (const char* key : {"psnr_db", "nrmse", "ssim", "pearson", "error_autocorrelation", "max_abs_error", "violations"})
    EXPECT_EQ(c[key], e[key]) << key;
  const CommandResult tighter = run("compare" + field + " -r " + path("a.out") + " --bound 0.001");
  EXPECT_EQ(tighter.exit_code, 3);
  EXPECT_GT(nlohmann::json::parse(tighter.out)["violations"].get<uint64_t>(), 0u);
  const CommandResult unbounded = run("compare" + field + " -r " + path("a.out"));
  EXPECT_EQ(unbounded.exit_code, 0);
  EXPECT_FALSE(nlohmann::json::parse(unbounded.out).contains("violations"));
  const CommandResult wrong = run("compare -i " + path("a.f32") + " -l 40x30x4 -r " + path("a.out"));
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_EQ(lines(wrong.err), 1) << wrong.err;
}

}  // namespace fzg
