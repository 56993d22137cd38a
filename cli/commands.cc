// compress, decompress, info, eval and gen.
#include "cli/commands.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "bench/fzgpu_reference.hh"
#include "cli/described_input.hh"
#include "cli/progress.hh"
#include "runtime/timer.hh"
#include "tools/metrics.hh"

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

namespace {

constexpr uint64_t io_chunk = uint64_t(64) << 20;  // bytes read or written between progress updates

std::string name_of(const std::string& path) { return path == "-" ? "standard input" : "'" + path + "'"; }

// What a file that is neither a regular file, a FIFO nor a character device is.
std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}
bool readable_kind(mode_t mode) { return S_ISREG(mode) || S_ISFIFO(mode) || S_ISCHR(mode); }

[[noreturn]] void fail_open(const std::string& path, int err, const char* doing) {
  if (err == ENOENT) fail(ErrorCode::io, "'" + path + "' does not exist");
  if (err == EACCES || err == EPERM) fail(ErrorCode::io, std::string("cannot ") + doing + " '" + path + "': permission denied");
  fail(ErrorCode::io, std::string("cannot ") + doing + " '" + path + "': " + std::strerror(err));
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() { close(); }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  int close() {
    const int fd = fd_;
    fd_ = -1;
    return fd > 2 ? ::close(fd) : 0;  // never stdin, stdout or stderr
  }

 private:
  int fd_;
};

// Reads up to `size` bytes; fewer only at the end of the input.
uint64_t read_some(int fd, uint8_t* data, uint64_t size, const std::string& name, Progress& progress, uint64_t& done) {
  uint64_t got = 0;
  while (got < size) {
    const ssize_t n = ::read(fd, data + got, size_t(std::min<uint64_t>(size - got, io_chunk)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(ErrorCode::io, "cannot read " + name + ": " + std::strerror(errno));
    if (n == 0) break;
    got += uint64_t(n);
    done += uint64_t(n);
    progress.set(double(done));
  }
  return got;
}

Buffer allocate(uint64_t size, const std::string& what) {
  try {
    return Buffer::host(size);
  } catch (const std::bad_alloc&) {
    fail(ErrorCode::io, what + " needs " + std::to_string(size) + " bytes (" + format_bytes(double(size)) +
                            ") and they could not be allocated: out of memory");
  }
}

[[noreturn]] void fail_size(const std::string& name, const std::string& holds, uint64_t expected,
                            const std::string& expected_what) {
  fail(ErrorCode::invalid_argument,
       name + " holds " + holds + " bytes but " + expected_what + " needs " + std::to_string(expected));
}

struct MemoryLimit {
  uint64_t bytes = 0;  // 0: unknown
  std::string what;
};

// What this process can hold at most: the machine's memory and swap, or less under a cgroup
// (v2) memory limit.
MemoryLimit memory_limit() {
  MemoryLimit limit;
  struct sysinfo info {};
  if (::sysinfo(&info) == 0) {
    limit.bytes = (uint64_t(info.totalram) + uint64_t(info.totalswap)) * info.mem_unit;
    limit.what = info.totalswap ? "this machine's memory and swap" : "this machine's memory";
  }
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");
  std::string text;
  if (cgroup >> text && !text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
    const uint64_t v = std::stoull(text);
    if (v > 0 && (limit.bytes == 0 || v < limit.bytes)) limit = {v, "this process's memory limit (cgroup)"};
  }
  return limit;
}

}  // namespace

std::string FieldSize::to_string() const {
  if (overflows) {
    char text[64];
    std::snprintf(text, sizeof text, "about %.2Lg bytes", approx);
    return text;
  }
  return std::to_string(bytes) + " bytes (" + format_bytes(double(bytes)) + ")";
}

std::optional<FieldSize> field_size(const std::string& dims_text, DType type) {
  if (dims_text.empty() || dims_text.find_first_not_of("0123456789x") != std::string::npos) return std::nullopt;
  FieldSize size;
  size.bytes = dtype_size(type);
  size.approx = (long double)size.bytes;
  std::stringstream in(dims_text);
  std::string part;
  while (std::getline(in, part, 'x')) {
    if (part.empty()) return std::nullopt;
    size.approx *= std::strtold(part.c_str(), nullptr);
    if (part.size() > 19) {  // 19 digits always fit in 64 bits
      size.overflows = true;
      continue;
    }
    if (__builtin_mul_overflow(size.bytes, uint64_t(std::stoull(part)), &size.bytes)) size.overflows = true;
  }
  return size;
}

void check_allocatable(const FieldSize& size, const std::string& what) {
  const MemoryLimit limit = memory_limit();
  if (!size.overflows && (limit.bytes == 0 || size.bytes <= limit.bytes)) return;
  std::string message = what + " needs " + size.to_string() + ", more than ";
  if (limit.bytes) message += limit.what + " (" + format_bytes(double(limit.bytes)) + ")";
  else message += "a 64-bit size can count";
  fail(ErrorCode::invalid_argument, message);
}

void check_readable(const std::string& path) {
  // Look before opening: opening a directory succeeds and reads as a huge file; a socket
  // cannot be opened; a FIFO waits for its writer (which is right).
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail_open(path, errno, "read");
  if (!readable_kind(st.st_mode))
    fail(ErrorCode::io, name_of(path) + " is " + kind_of(st.st_mode) + ", not a file to read");
}

namespace {

Buffer read_input(const std::string& path, std::optional<uint64_t> expected_size, const std::string& expected_what,
                  bool fzg_file) {
  const std::string name = name_of(path);
  int raw_fd = STDIN_FILENO;
  if (path != "-") {
    check_readable(path);
    raw_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (raw_fd < 0) fail_open(path, errno, "read");
  }
  FileDescriptor fd(raw_fd);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail(ErrorCode::io, "cannot read " + name + ": " + std::strerror(errno));
  if (!readable_kind(st.st_mode)) fail(ErrorCode::io, name + " is " + kind_of(st.st_mode) + ", not a file to read");

  uint64_t done = 0;
  if (S_ISREG(st.st_mode)) {
    // A known size (stdin redirected from a file reads from where it stands).
    const off_t at = ::lseek(fd.get(), 0, SEEK_CUR);
    const uint64_t size = uint64_t(st.st_size) - uint64_t(at > 0 && at <= st.st_size ? at : 0);
    if (expected_size && size != *expected_size) fail_size(name, std::to_string(size), *expected_size, expected_what);
    if (fzg_file) {  // before the size is weighed: a large foreign file is foreign first
      uint8_t head[sizeof container_magic];
      const ssize_t n = ::pread(fd.get(), head, std::min<uint64_t>(size, sizeof head), at > 0 ? at : 0);
      if (n >= 0) check_magic(head, uint64_t(n), false);  // the reader checks the rest
    }
    FieldSize need;
    need.bytes = size;
    check_allocatable(need, "reading " + name);
    Buffer b = allocate(size, "reading " + name);
    Progress progress("reading " + name, ProgressUnit::bytes, double(size));
    const uint64_t got = read_some(fd.get(), b.data(), size, name, progress, done);
    if (got != size)
      fail(ErrorCode::io, name + " ended after " + std::to_string(got) + " of its " + std::to_string(size) +
                              " bytes (did it change while being read?)");
    return b;
  }
  // A stream: read to its end, or to one byte past the size expected. A device may have no
  // end (/dev/urandom): the size expected is read from it, like head -c.
  Progress progress("reading " + name, ProgressUnit::bytes, expected_size ? double(*expected_size) : 0);
  if (expected_size) {
    Buffer b = allocate(*expected_size, "reading " + name);
    const uint64_t got = read_some(fd.get(), b.data(), *expected_size, name, progress, done);
    if (got < *expected_size) fail_size(name, std::to_string(got), *expected_size, expected_what);
    uint8_t extra = 0;
    if (!S_ISCHR(st.st_mode) && read_some(fd.get(), &extra, 1, name, progress, done) != 0)
      fail_size(name, "more than " + std::to_string(*expected_size), *expected_size, expected_what);
    return b;
  }
  std::vector<Buffer> chunks;
  uint64_t total = 0;
  const MemoryLimit limit = memory_limit();
  for (;;) {
    Buffer chunk = allocate(io_chunk, "reading " + name);
    const uint64_t got = read_some(fd.get(), chunk.data(), io_chunk, name, progress, done);
    if (fzg_file && chunks.empty()) check_magic(chunk.data(), got, false);
    total += got;
    // Held twice at the end (the pieces, then the whole): a stream with no end (/dev/zero)
    // stops here rather than when the machine runs out.
    if (got == io_chunk && limit.bytes && total > limit.bytes / 2)
      fail(ErrorCode::invalid_argument, "reading " + name + ": more than half of " + limit.what + " (" +
                                            format_bytes(double(limit.bytes)) + ") and not at its end");
    if (got) {
      chunk.shrink(got);
      chunks.push_back(std::move(chunk));
    }
    if (got < io_chunk) break;
  }
  if (chunks.size() == 1) return chunks[0];
  Buffer b = allocate(total, "reading " + name);
  uint64_t at = 0;
  for (auto& chunk : chunks) {
    std::memcpy(b.data() + at, chunk.data(), chunk.size());
    at += chunk.size();
    chunk = Buffer();
  }
  return b;
}

}  // namespace

Buffer read_file(const std::string& path, std::optional<uint64_t> expected_size, const std::string& expected_what) {
  return read_input(path, expected_size, expected_what, false);
}

Buffer read_fzg_file(const std::string& path) { return read_input(path, std::nullopt, "", true); }

namespace {

void write_all(int fd, const uint8_t* data, uint64_t size, const std::string& name, Progress& progress) {
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size_t(std::min<uint64_t>(size - done, io_chunk)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(ErrorCode::io, "cannot write " + name + ": " + std::strerror(errno));
    done += uint64_t(n);
    progress.set(double(done));
  }
}

}  // namespace

void check_output(const std::string& output, const std::string& input) {
  if (output.empty() || output == "-") return;
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) return;  // a new file: creating it says what is wrong, if anything
  if (S_ISDIR(out.st_mode)) fail(ErrorCode::invalid_argument, "'" + output + "' is a directory; -o takes a file name");
  if (S_ISSOCK(out.st_mode) || S_ISBLK(out.st_mode))
    fail(ErrorCode::invalid_argument, "'" + output + "' is " + kind_of(out.st_mode) + ", not a file to write");
  struct stat in {};
  const bool have_input = input == "-" ? ::fstat(STDIN_FILENO, &in) == 0 : !input.empty() && ::stat(input.c_str(), &in) == 0;
  if (have_input && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
    fail(ErrorCode::invalid_argument, "the output '" + output + "' is the input " +
                                          (input == "-" ? std::string("(standard input)") : "'" + input + "'") +
                                          " itself; writing it would destroy the input (choose another -o)");
}

void write_file(const std::string& path, const uint8_t* data, uint64_t size) {
  if (path == "-") {
    std::cout.flush();
    std::fflush(stdout);
    Progress progress("writing standard output", ProgressUnit::bytes, double(size));
    write_all(STDOUT_FILENO, data, size, "standard output", progress);
    return;
  }
  const std::string name = "'" + path + "'";
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
    // A pipe or a device (/dev/null) is written in place: renaming a file over it would replace it.
    FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (fd.get() < 0) fail_open(path, errno, "write");
    Progress progress("writing " + name, ProgressUnit::bytes, double(size));
    write_all(fd.get(), data, size, name, progress);
    if (fd.close() != 0) fail(ErrorCode::io, "cannot write " + name + ": " + std::strerror(errno));
    return;
  }
  // A reader never sees a half-written file: write beside it, then rename over it.
  const std::string temporary = path + ".tmp-" + std::to_string(::getpid());
  FileDescriptor fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ENOENT) fail(ErrorCode::io, "cannot create '" + path + "': its directory does not exist");
    fail_open(path, err, "create");
  }
  try {
    Progress progress("writing " + name, ProgressUnit::bytes, double(size));
    write_all(fd.get(), data, size, name, progress);
    if (fd.close() != 0) fail(ErrorCode::io, "cannot write " + name + ": " + std::strerror(errno));
    progress.finish();
    if (std::rename(temporary.c_str(), path.c_str()) != 0)
      fail(ErrorCode::io, "cannot rename onto " + name + ": " + std::strerror(errno));
  } catch (...) {
    fd.close();
    std::remove(temporary.c_str());
    throw;
  }
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

namespace {

// Non-finite floats become strings; everything else is kept.
nlohmann::json finite_or_string(const nlohmann::json& j) {
  if (j.is_number_float()) {
    const double v = j.get<double>();
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return j;
  }
  if (j.is_object()) {
    nlohmann::json o = nlohmann::json::object();
    for (auto it = j.begin(); it != j.end(); ++it) o[it.key()] = finite_or_string(it.value());
    return o;
  }
  if (j.is_array()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& e : j) a.push_back(finite_or_string(e));
    return a;
  }
  return j;
}

// A lossy file the library stored exactly because its lossy coding was larger (see
// compress()): the stored graph has no predictor while the header keeps the requested bound.
bool stored_exactly(const Container& c) {
  if (c.header.mode == ErrorMode::lossless) return false;
  const Graph graph = Graph::from_text(c.graph_json);
  for (const auto& node : graph.nodes())
    if (node.stage->spec().predictor) return false;
  return true;
}

// Why a lossy request was stored exactly: compress knows which; a file alone says only that
// its stored graph has no lossy stage.
constexpr const char* stored_exactly_note = "stored exactly: the lossy coding was larger";
constexpr const char* no_lossy_stage_note = "stored exactly: the config has no lossy stage";
constexpr const char* stored_graph_note = "stored exactly: the stored graph has no lossy stage";

}  // namespace

std::string dump_json(const nlohmann::json& j) { return finite_or_string(j).dump(2); }

std::string printable(const std::string& text, size_t limit) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= limit) return out + "... (" + std::to_string(text.size() - i) + " bytes more)";
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const unsigned char next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {  // a C1 control in UTF-8 (CSI is C2 9B)
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", next);
      out += escaped;
      ++i;
    } else {
      out += char(c);
    }
  }
  return out;
}

std::vector<double> fill_values_for(const CodecArgs& a, const std::vector<double>& file_fill_values) {
  if (a.fill.empty()) return file_fill_values;
  // An input's own fill values are dropped quietly in lossless mode; ones the user typed are not.
  if (parse_error_mode(a.mode) == ErrorMode::lossless && a.fill != std::vector<std::string>{"none"})
    fail(ErrorCode::invalid_argument, "--fill has no effect with -m lossless: every value comes back exactly");
  std::vector<double> values;
  for (const std::string& text : a.fill) {
    if (text == "none") {
      if (a.fill.size() > 1) fail(ErrorCode::invalid_argument, "--fill none cannot be combined with fill values");
      return {};
    }
    values.push_back(parse_fill_value(text));
  }
  return values;
}

Graph with_fills(const Graph& graph, const std::vector<double>& fill_values, ErrorMode mode) {
  return graph.has_predictor() ? graph.with_fill_values_for(fill_values, mode) : graph;
}

Graph graph_for(const CodecArgs& a, const std::vector<double>& fill_values) {
  return with_fills(load_graph(a.config), fill_values, parse_error_mode(a.mode));
}

FieldRef load_field(const FieldArgs& a, Buffer& bytes, std::vector<double>* file_fill_values) {
  // Where the field comes from first, then what it is.
  if (a.gen_kind.empty() && a.input.empty())
    fail(ErrorCode::invalid_argument, "an input is required (-i FILE, or --gen KIND)");
  if (a.gen_kind.empty() && (is_npy(a.input) || is_hdf5_dataset(a.input))) {
    // The file says what it holds; -l, when given, must say the same, and -t (default f32)
    // may only name the file's own type.
    DescribedInput in = is_npy(a.input) ? read_npy(a.input) : read_hdf5_dataset(a.input);
    FieldRef f;
    f.dtype = in.dtype;
    f.dims = Dims::make(in.dims);
    const std::string given = a.dims.empty() ? f.dims.to_string() : parse_dims(a.dims, a.slowest_first).to_string();
    if (given != f.dims.to_string())
      fail(ErrorCode::invalid_argument,
           "'" + a.input + "' holds " + f.dims.to_string() + " values, not the " + given + " of -l");
    if (a.type != "f32" && parse_dtype(a.type) != f.dtype)
      fail(ErrorCode::invalid_argument, "'" + a.input + "' holds " + to_string(f.dtype) + " values, not " + a.type);
    for (const std::string& fill : in.fill_values)
      std::cerr << "fzg: note: '" << printable(a.input) << "' marks missing points with " << printable(fill)
                << " (kept bit for bit, left out of the range and the bound; --fill none treats them as data)\n";
    if (file_fill_values) *file_fill_values = in.missing_values;
    bytes = std::move(in.bytes);
    f.data = bytes.data();
    f.where = Location::host;
    return f;
  }
  FieldRef f;
  f.dtype = parse_dtype(a.type);
  if (a.dims.empty()) fail(ErrorCode::invalid_argument, "the field's dimensions are required (-l, e.g. 500x500x100)");
  const std::string described = a.dims + " " + a.type;
  // Its size before anything is allocated: a size past 64 bits or past this machine's memory
  // is named, not met with "out of memory".
  const std::optional<FieldSize> size = field_size(a.dims, f.dtype);
  if (!a.gen_kind.empty()) {
    const SynthKind kind = parse_synth_kind(a.gen_kind);
    if (!is_float(f.dtype)) fail(ErrorCode::invalid_argument, "synthetic fields are f32 or f64, not " + a.type);
    if (size) check_allocatable(*size, "the field " + described);
    f.dims = parse_dims(a.dims, a.slowest_first);
    Progress progress("generating a " + format_bytes(double(f.size_bytes())) + " " + a.gen_kind + " field",
                      ProgressUnit::time);
    try {
      bytes = synthesize(kind, f.dtype, f.dims, a.seed);
    } catch (const std::bad_alloc&) {
      fail(ErrorCode::invalid_argument, "the field " + described + " needs " + std::to_string(f.size_bytes()) +
                                            " bytes and they could not be allocated: out of memory");
    }
  } else {
    if (size && size->overflows) check_allocatable(*size, "the field " + described);
    f.dims = parse_dims(a.dims, a.slowest_first);
    bytes = read_file(a.input, f.size_bytes(), f.dims.to_string() + " " + a.type);
  }
  f.data = bytes.data();
  f.where = Location::host;
  return f;
}

int run_compress(const CompressArgs& a) {
  if (a.field.input.empty()) fail(ErrorCode::invalid_argument, "an input is required (-i FILE, or -i - for standard input)");
  if (a.output.empty()) fail(ErrorCode::invalid_argument, "an output is required (-o FILE or -o -)");
  check_output(a.output, a.field.input);
  CompressOptions options;
  options.bound = parse_bound(a.codec);
  options.device = parse_device(a.codec.device);
  options.device_memory_budget = a.codec.device_memory_mb << 20;
  Buffer storage;
  std::vector<double> file_fill_values;
  const FieldRef field = load_field(a.field, storage, &file_fill_values);
  const Graph graph = graph_for(a.codec, fill_values_for(a.codec, file_fill_values));
  Buffer file;
  {
    // One library call, no progress to measure: the time it has taken, honestly.
    Progress progress("compressing " + format_bytes(double(field.size_bytes())), ProgressUnit::time);
    file = compress(graph, field, options);
  }
  // The report reads the file back (inspect) before it is written: a file its own reader
  // refuses fails the call and leaves nothing behind.
  const std::string exactly =
      stored_exactly(inspect(file))
          ? std::string(" (") + (graph.has_predictor() ? stored_exactly_note : no_lossy_stage_note) + ")"
          : "";
  write_file(a.output, file.data(), file.size());
  if (a.output != "-")
    std::cerr << "fzg: " << field.size_bytes() << " -> " << file.size() << " bytes, ratio "
              << double(field.size_bytes()) / double(file.size()) << exactly << "\n";
  return 0;
}

namespace {

// "x0:x1,y0:y1,z0:z1", fastest first; missing axes are whole.
Box parse_box(const std::string& text) {
  Box box;
  uint64_t* ends[3][2] = {{&box.x0, &box.x1}, {&box.y0, &box.y1}, {&box.z0, &box.z1}};
  size_t axis = 0, at = 0;
  auto bad = [&] {
    fail(ErrorCode::invalid_argument, "bad --range '" + text + "' (expected x0:x1[,y0:y1[,z0:z1]], e.g. 0:100,20:40)");
  };
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string part = text.substr(at, comma - at);
    const size_t colon = part.find(':');
    if (axis >= 3 || colon == std::string::npos || colon == 0 || colon + 1 == part.size()) bad();
    const std::string lo = part.substr(0, colon), hi = part.substr(colon + 1);
    if (lo.find_first_not_of("0123456789") != std::string::npos || hi.find_first_not_of("0123456789") != std::string::npos ||
        lo.size() > 19 || hi.size() > 19)
      bad();
    *ends[axis][0] = std::stoull(lo);
    *ends[axis][1] = std::stoull(hi);
    if (*ends[axis][0] >= *ends[axis][1]) bad();
    ++axis;
    at = comma + 1;
  }
  return box;
}

// The size of a regular file at `path` ("-" is none), which disk_reader reads a range at a
// time; none for a pipe, a device or stdin (read_fzg_file reads those whole).
std::optional<uint64_t> file_on_disk(const std::string& path) {
  struct stat st {};
  if (path == "-" || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return uint64_t(st.st_size);
}

// A file on disk read a range at a time: a sub-box decode reads the metadata and the chunks it needs.
FileReader disk_reader(const std::string& path) {
  auto file = std::shared_ptr<std::FILE>(std::fopen(path.c_str(), "rb"), [](std::FILE* f) {
    if (f) std::fclose(f);
  });
  if (!file) fail(ErrorCode::io, "cannot open '" + path + "'");
  return [file, path](uint64_t offset, uint64_t size, void* into) {
    if (fseeko(file.get(), off_t(offset), SEEK_SET) != 0 || std::fread(into, 1, size, file.get()) != size)
      fail(ErrorCode::io, "cannot read " + std::to_string(size) + " bytes at " + std::to_string(offset) + " of '" + path + "'");
  };
}

int run_decompress_box(const DecompressArgs& a, const DecompressOptions& options) {
  const Box box = parse_box(a.range);
  Decompressed out;
  if (const std::optional<uint64_t> size = file_on_disk(a.input))
    out = decompress_box(disk_reader(a.input), *size, box, options);
  else
    out = decompress_box(read_fzg_file(a.input), box, options);
  write_file(a.output, out.data.data(), out.data.size());
  return 0;
}

}  // namespace

int run_decompress(const DecompressArgs& a) {
  if (a.input.empty() || a.output.empty()) fail(ErrorCode::invalid_argument, "decompress needs -i FILE and -o FILE");
  check_output(a.output, a.input);
  DecompressOptions options;
  options.device = parse_device(a.device);
  options.device_memory_budget = a.device_memory_mb << 20;
  if (!a.range.empty()) return run_decompress_box(a, options);
  const Buffer file = read_fzg_file(a.input);
  Decompressed out;
  {
    const Header h = inspect(file).header;
    Progress progress("decompressing to " + format_bytes(double(h.dims.count()) * double(dtype_size(h.dtype))),
                      ProgressUnit::time);
    out = decompress(file, options);
  }
  write_file(a.output, out.data.data(), out.data.size());
  return 0;
}

int run_info(const std::string& path, bool json) {
  // A file on disk: its metadata alone is read (a file of any size, in an instant); a stream
  // is read whole.
  const std::optional<uint64_t> size = file_on_disk(path);
  const Container c = size ? inspect(disk_reader(path), *size) : inspect(read_fzg_file(path));
  const nlohmann::json graph = nlohmann::json::parse(c.graph_json);
  const nlohmann::json headers = describe_stage_headers(c);
  const size_t stage_count = c.stage_headers.size(), stream_count = graph["store"].size();
  nlohmann::json chunks = nlohmann::json::array();
  std::vector<uint64_t> stream_totals(stream_count, 0);
  std::vector<uint64_t> raw_chunks(stage_count, 0);
  for (const auto& chunk : c.chunks) {
    nlohmann::json streams = nlohmann::json::array(), stages = nlohmann::json::array();
    for (size_t s = 0; s < chunk.streams.size(); ++s) {
      streams.push_back({{"name", graph["store"][s]}, {"size_bytes", chunk.streams[s].size},
                         {"checksum", chunk.streams[s].checksum}, {"offset", chunk.stream_offsets[s]}});
      stream_totals[s] += chunk.streams[s].size;
    }
    for (size_t i = 0; i < chunk.stages.size(); ++i) {
      stages.push_back({{"id", graph["stages"][i]["id"]}, {"raw", chunk.stages[i].raw},
                        {"input_sizes", chunk.stages[i].input_sizes}});
      raw_chunks[i] += chunk.stages[i].raw;
    }
    chunks.push_back({{"stages", stages}, {"streams", streams}});
  }
  const auto& h = c.header;
  // A lossless file has no bound and no step; only a floating-point field has a value range.
  const bool lossless = h.mode == ErrorMode::lossless;
  const bool exactly = stored_exactly(c);  // loads the stored graph: once
  const bool has_range = is_float(h.dtype) && !exactly && !lossless;
  const uint64_t original = h.dims.count() * dtype_size(h.dtype);
  nlohmann::json report = {{"format_version", h.version},
                           {"dtype", to_string(h.dtype)},
                           {"dims", h.dims.to_string()},
                           {"mode", to_string(h.mode)},
                           {"file_bytes", c.total_bytes},
                           {"original_bytes", original},
                           {"ratio", double(original) / double(c.total_bytes)},
                           {"graph", graph},
                           {"stage_headers", headers},
                           {"chunk_rows", h.chunk_rows},
                           {"chunk_count", c.chunks.size()},
                           {"chunks", chunks}};
  if (!lossless) {
    report["requested_bound"] = h.requested_bound;
    report["absolute_bound"] = h.quant.error_bound;
    report["step"] = h.quant.step;
    report["stored_exactly"] = exactly;
  }
  if (has_range) {
    report["min"] = h.quant.min;
    report["max"] = h.quant.max;
  }
  if (json) {
    std::cout << dump_json(report) << "\n";
    return 0;
  }
  std::printf("fzg file, format version %u\n", unsigned(h.version));
  std::printf("  field      %s %s (%llu values)\n", to_string(h.dtype).c_str(), h.dims.to_string().c_str(),
              (unsigned long long)h.dims.count());
  if (lossless)
    std::printf("  bound      lossless (exact)");
  else if (exactly)
    std::printf("  bound      %s %g; %s", to_string(h.mode).c_str(), h.requested_bound, stored_graph_note);
  else
    std::printf("  bound      %s %g -> absolute %.6g (step %.6g)", to_string(h.mode).c_str(), h.requested_bound,
                h.quant.error_bound, h.quant.step);
  if (has_range) std::printf(", value range [%.6g, %.6g]", h.quant.min, h.quant.max);
  std::printf("\n");
  std::printf("  size       %llu bytes from %llu, ratio %.3f\n", (unsigned long long)c.total_bytes,
              (unsigned long long)original, double(original) / double(c.total_bytes));
  const char* slices = h.dims.rank == 3 ? "z planes" : h.dims.rank == 2 ? "y rows" : "values";
  std::printf("  chunks     %llu, of %llu %s each (the last may hold fewer)\n", (unsigned long long)c.chunks.size(),
              (unsigned long long)std::min<uint64_t>(h.chunk_rows, slowest_extent(h.dims)), slices);
  std::printf("  graph      %s\n", printable(graph.value("name", std::string("?"))).c_str());
  for (size_t i = 0; i < stage_count; ++i) {
    const std::string id = graph["stages"][i]["id"].get<std::string>();
    std::printf("    %-10s %-12s", printable(id).c_str(), printable(graph["stages"][i]["type"].get<std::string>()).c_str());
    if (headers.contains(id)) std::printf(" header %s", headers[id].dump().c_str());
    if (raw_chunks[i]) std::printf(" (stored raw in %llu of %zu chunks)", (unsigned long long)raw_chunks[i], c.chunks.size());
    std::printf("\n");
  }
  std::printf("  streams (all chunks)\n");
  for (size_t s = 0; s < stream_count; ++s)
    std::printf("    %-18s %12llu bytes\n", printable(graph["store"][s].get<std::string>()).c_str(),
                (unsigned long long)stream_totals[s]);
  return 0;
}

namespace {

// The bytes of the field's quantization codes in FZ-GPU's format plus fzg's other predictor
// streams (outliers, and the mask with fill values), the codes taken through the library: a
// graph of `graph`'s predictor alone (Lorenzo's defaults without one), in one chunk, storing
// every output. The field's bytes when that file is stored exactly (no codes).
uint64_t fzgpu_format_file_bytes(const FieldRef& field, const ErrorBound& bound, const Graph& graph) {
  nlohmann::json stage = {{"id", "predict"}, {"type", "lorenzo"}, {"inputs", {{"field", "input"}}}};
  nlohmann::json store = {"predict.codes", "predict.outliers"};
  for (const auto& node : graph.nodes()) {
    if (!node.stage->spec().predictor) continue;
    stage["type"] = node.type, stage["params"] = node.stage->params();
    stage["params"].erase("code_order");  // FZ-GPU's codes are in field order
    store = nlohmann::json::array();
    for (const auto& port : node.stage->spec().outputs) store.push_back("predict." + port.name);
  }
  const nlohmann::json config = {
      {"name", "lorenzo-codes"}, {"chunk_values", max_chunk_values}, {"stages", {stage}}, {"store", store}};
  CompressOptions options;
  options.bound = bound;
  const Buffer file = compress(Graph::from_json(config), field, options);
  const Container c = inspect(file);
  if (stored_exactly(c) || c.chunks.size() != 1) return field.size_bytes();
  const ChunkRecord& chunk = c.chunks[0];
  const auto* codes = reinterpret_cast<const uint16_t*>(file.data() + chunk.stream_offsets[0]);
  uint64_t bytes = bench::fzgpu_format_bytes(codes, chunk.streams[0].size / 2);
  for (size_t s = 1; s < chunk.streams.size(); ++s) bytes += chunk.streams[s].size;
  return bytes;
}

}  // namespace

std::vector<uint8_t> missing_points(const FieldRef& field, const MissingValues& missing) {
  if (missing.empty() || !is_float(field.dtype)) return {};
  const uint64_t n = field.dims.count();
  std::vector<uint8_t> mask(n);
  if (field.dtype == DType::f32) {
    const auto* v = static_cast<const float*>(field.data);
    for (uint64_t i = 0; i < n; ++i) mask[i] = uint8_t(missing.symbol_of(v[i]) != 0);
  } else {
    const auto* v = static_cast<const double*>(field.data);
    for (uint64_t i = 0; i < n; ++i) mask[i] = uint8_t(missing.symbol_of(v[i]) != 0);
  }
  return mask;
}

nlohmann::json quality_report(const FieldRef& original, const void* reconstructed, double error_bound, double ssim,
                              const uint8_t* missing) {
  const Metrics m =
      compare_fields(original.data, reconstructed, original.dtype, original.dims.count(), error_bound, missing);
  return {{"missing_points", m.missing_count},
          {"psnr_db", m.psnr},
          {"nrmse", m.nrmse},
          {"ssim", ssim},
          {"pearson", m.pearson},
          {"error_autocorrelation", m.error_autocorrelation},
          {"max_abs_error", m.max_abs_error},
          {"max_rel_error", m.max_rel_error},
          {"violations", m.violations}};
}

int run_compare(const CompareArgs& a) {
  Buffer original_bytes, reconstructed_bytes;
  const FieldRef original = load_field(a.field, original_bytes);
  FieldArgs other = a.field;
  other.input = a.reconstructed;
  const FieldRef reconstructed = load_field(other, reconstructed_bytes);
  if (!(a.error_bound >= 0)) fail(ErrorCode::invalid_argument, "--bound must be a non-negative absolute error");
  const Device device = parse_device(a.device);
  nlohmann::json report = {{"field", a.field.input}, {"reconstructed", a.reconstructed},
                           {"dims", original.dims.to_string()}, {"dtype", to_string(original.dtype)}};
  const double similarity = ssim_on(device, Location::host, original.data, reconstructed.data, original.dtype,
                                    original.dims);
  report.update(quality_report(original, reconstructed.data, a.error_bound, similarity));
  if (a.error_bound == 0) report.erase("violations");  // no bound to count against
  std::cout << dump_json(report) << "\n";
  return report.value("violations", uint64_t(0)) ? 3 : 0;
}

namespace {

struct RoundTripTimes {
  double compress_ms, decompress_ms;  // medians
};

// `repeat` calls of each direction, timed by `clock`'s timer (CUDA events on the GPU).
template <typename Compress, typename Decompress>
RoundTripTimes time_round_trips(Device clock, int repeat, Compress compress_once, Decompress decompress_once,
                                const std::function<void()>& after_run) {
  std::vector<double> compress_ms, decompress_ms;
  RegionTimer timer(clock, nullptr);
  for (int r = 0; r < repeat; ++r) {
    timer.start();
    compress_once();
    compress_ms.push_back(timer.stop_ms());
    timer.start();
    decompress_once();
    decompress_ms.push_back(timer.stop_ms());
    after_run();
  }
  return {median(compress_ms), median(decompress_ms)};
}

}  // namespace

nlohmann::json round_trip_report(const Graph& graph, const FieldRef& field, const ErrorBound& bound, Device device,
                                 int repeat, const std::function<void()>& after_run) {
  CompressOptions copt;
  copt.bound = bound;
  copt.device = device;
  DecompressOptions dopt;
  dopt.device = device;

  // Points with a fill value are left out of every metric (they come back bit for bit).
  const std::vector<uint8_t> missing = missing_points(field, graph.missing_values(field.dtype));
  const uint8_t* mask = missing.empty() ? nullptr : missing.data();

  // End to end, host to host: what a file-based user gets. Run once to warm up.
  Buffer file = compress(graph, field, copt);
  Decompressed out = decompress(file, dopt);
  after_run();
  const RoundTripTimes host_to_host = time_round_trips(
      Device::cpu, repeat, [&] { file = compress(graph, field, copt); }, [&] { out = decompress(file, dopt); },
      after_run);
  // Kernel-only, as fzg bench measures it: field and file resident on the device, CUDA
  // events, median of `repeat` after a warm-up; and the peak device memory beyond the resident
  // field and file. The SSIM comes from the resident field and reconstruction there.
  nlohmann::json kernel_only = nlohmann::json::object();
  double similarity = 0;
  if (device == Device::cuda) {
    const Buffer host_view = Buffer::view(const_cast<void*>(field.data), field.size_bytes(), Location::host);
    const Buffer resident = to_device(host_view, nullptr);
    FieldRef on_device = field;
    on_device.data = resident.data();
    on_device.where = Location::device;
    copt.output = dopt.output = Location::device;
    reset_device_memory_peak();
    const size_t held = device_memory_stats().current_bytes;
    Buffer device_file = compress(graph, on_device, copt);
    Decompressed device_out = decompress(device_file, dopt);
    after_run();
    const uint64_t peak = device_memory_stats().peak_bytes - held;
    const RoundTripTimes times = time_round_trips(
        Device::cuda, repeat, [&] { device_file = compress(graph, on_device, copt); },
        [&] { device_out = decompress(device_file, dopt); }, after_run);
    kernel_only = {{"kernel_compress_gbps", double(field.size_bytes()) / (times.compress_ms * 1e6)},
                   {"kernel_decompress_gbps", double(field.size_bytes()) / (times.decompress_ms * 1e6)},
                   {"peak_device_bytes", peak}};
    const Buffer device_mask =
        mask ? to_device(Buffer::view(const_cast<uint8_t*>(mask), missing.size(), Location::host), nullptr) : Buffer();
    similarity = ssim_on(Device::cuda, Location::device, resident.data(), device_out.data.data(), field.dtype,
                         field.dims, 7, 2, mask ? device_mask.data() : nullptr);
  } else {
    similarity = ssim(field.data, out.data.data(), field.dtype, field.dims, 7, 2, mask);
  }

  nlohmann::json report = quality_report(field, out.data.data(), out.header.quant.error_bound, similarity, mask);
  const double bytes = double(field.size_bytes());
  // The FZ-GPU format ratio: the same quantization codes in FZ-GPU's lossless format
  // (bitshuffle + zero-block, which has no outlier handling), plus fzg's outlier stream.
  // 0 in lossless mode, which has no codes.
  double fzgpu_ratio = 0;
  if (bound.mode != ErrorMode::lossless) fzgpu_ratio = bytes / double(fzgpu_format_file_bytes(field, bound, graph));
  report.update({{"original_bytes", field.size_bytes()},
                 {"compressed_bytes", file.size()},
                 {"ratio", bytes / double(file.size())},
                 {"fzgpu_format_ratio", fzgpu_ratio},
                 {"bits_per_value", 8.0 * double(file.size()) / double(field.dims.count())},
                 {"compress_gbps", bytes / (host_to_host.compress_ms * 1e6)},
                 {"decompress_gbps", bytes / (host_to_host.decompress_ms * 1e6)}});
  if (bound.mode != ErrorMode::lossless) {  // as in info: a lossless run has no bound
    report["requested_bound"] = bound.value;
    report["absolute_bound"] = out.header.quant.error_bound;
  }
  report.update(kernel_only);
  return report;
}

int run_eval(const EvalArgs& a) {
  const ErrorBound bound = parse_bound(a.codec);
  const Device device = parse_device(a.codec.device);
  if (a.repeat < 1 || a.repeat > 1000) fail(ErrorCode::invalid_argument, "--repeat must be in [1, 1000]");
  Buffer storage;
  std::vector<double> file_fill_values;
  const FieldRef field = load_field(a.field, storage, &file_fill_values);
  const Graph graph = graph_for(a.codec, fill_values_for(a.codec, file_fill_values));

  const int runs_each_way = device == Device::cuda ? 2 : 1;  // end to end, then kernel-only
  Progress runs("eval of " + format_bytes(double(field.size_bytes())), ProgressUnit::count,
                double(runs_each_way * (a.repeat + 1)));
  runs.set_noun("round trips");
  double done = 0;
  nlohmann::json r = round_trip_report(graph, field, bound, device, a.repeat, [&] { runs.set(++done); });
  runs.finish();
  const std::string source = a.field.gen_kind.empty() ? a.field.input : "gen:" + a.field.gen_kind;
  const bool lossless = bound.mode == ErrorMode::lossless;
  nlohmann::json report = {{"field", source},
                           {"dtype", to_string(field.dtype)},
                           {"dims", field.dims.to_string()},
                           {"mode", a.codec.mode},
                           {"config", graph.name()},
                           {"device", device == Device::cuda ? "cuda" : "cpu"},
                           {"repeats", a.repeat}};
  report.update(r);
  const uint64_t violations = r["violations"];
  if (a.json) {
    std::cout << dump_json(report) << "\n";
  } else {
    const double absolute = lossless ? 0.0 : r["absolute_bound"].get<double>();
    char bound_text[96] = "lossless";
    if (!lossless)
      std::snprintf(bound_text, sizeof bound_text, "%s %g (absolute %.4g)", a.codec.mode.c_str(), bound.value, absolute);
    std::printf("fzg eval: %s, %s %s, %s, config %s, device %s\n", printable(source).c_str(),
                to_string(field.dtype).c_str(), field.dims.to_string().c_str(), bound_text,
                printable(graph.name()).c_str(), device == Device::cuda ? "cuda" : "cpu");
    std::printf("  ratio          %.3f  (%.3f bits/value, %llu -> %llu bytes)\n", r["ratio"].get<double>(),
                r["bits_per_value"].get<double>(), (unsigned long long)field.size_bytes(),
                (unsigned long long)r["compressed_bytes"].get<uint64_t>());
    if (r["fzgpu_format_ratio"].get<double>() > 0)
      std::printf("  FZ-GPU format  %.3f  (the same codes in FZ-GPU's bitshuffle + zero-block format, plus fzg's "
                  "outliers)\n",
                  r["fzgpu_format_ratio"].get<double>());
    if (r["missing_points"].get<uint64_t>())
      std::printf("  missing        %llu points hold a fill value: kept bit for bit, left out of every metric below\n",
                  (unsigned long long)r["missing_points"].get<uint64_t>());
    std::printf("  PSNR           %.2f dB   NRMSE %.3g\n", r["psnr_db"].get<double>(), r["nrmse"].get<double>());
    // NaN: no SSIM window free of missing and non-finite points, so nothing to measure.
    const double ssim_value = r["ssim"].get<double>();
    const std::string ssim_text = std::isnan(ssim_value) ? "n/a (no window without missing or non-finite points)"
                                                          : std::to_string(ssim_value);
    std::printf("  SSIM           %s   Pearson %.6f   error lag-1 autocorrelation %.3f\n", ssim_text.c_str(),
                r["pearson"].get<double>(), r["error_autocorrelation"].get<double>());
    if (lossless)
      std::printf("  exact          %s\n", violations ? "NO: the round trip changed the bytes" : "yes, byte for byte");
    else
      std::printf("  max error      %.4g absolute, %.4g of the value range; bound %.4g, points over it: %llu\n",
                  r["max_abs_error"].get<double>(), r["max_rel_error"].get<double>(), absolute,
                  (unsigned long long)violations);
    std::printf("  throughput     compress %.3f GB/s, decompress %.3f GB/s (host to host, median of %d, decimal)\n",
                r["compress_gbps"].get<double>(), r["decompress_gbps"].get<double>(), a.repeat);
    if (r.contains("kernel_compress_gbps"))
      std::printf("  kernel-only    compress %.3f GB/s, decompress %.3f GB/s (field and file on the device)\n",
                  r["kernel_compress_gbps"].get<double>(), r["kernel_decompress_gbps"].get<double>());
  }
  return violations ? 3 : 0;
}

int run_gen(const GenArgs& a) {
  if (a.output.empty()) fail(ErrorCode::invalid_argument, "an output is required (-o FILE)");
  if (a.field.gen_kind.empty()) fail(ErrorCode::invalid_argument, "a kind is required (--kind turbulent)");
  check_output(a.output, "");
  Buffer storage;
  load_field(a.field, storage);
  write_file(a.output, storage.data(), storage.size());
  return 0;
}

}  // namespace fzg::cli
