// libFuzzer target: fzg::inspect and fzg::decompress (CPU device) on arbitrary bytes.
//
// A damaged file must end in fzg::Error or in a correct result. Anything else is a finding:
// a sanitizer report, a crash, another exception type (std::bad_alloc, a JSON exception), or
// a result that breaks an invariant below (the harness aborts with "fzg-fuzz: FINDING").
//
// Each input runs twice:
//   1. as given, so that the reader's own checks (magic, version, sizes, checksums) are
//      exercised on the raw bytes; the bytes lie at an odd address (as in a caller's larger
//      buffer), so the library takes its path for unaligned files;
//   2. with its checksums repaired (stream checksums, payload size, header checksum, and in a
//      version 2 to 4 file the metadata size, recomputed as a writer would), so that mutations
//      reach the graph loader (and from version 3 on its code) and the stage decoders instead of
//      stopping at a checksum; 8-byte aligned. Skipped when nothing changed. Files of every
//      version are repaired (each by its own layout).
//
// FZG_FUZZ_REPAIRED=PATH writes the repaired bytes of each input to PATH (for one input:
// the file that `fzg decompress` or a unit test can then be given).
//
// With FZG_FUZZ_STRICT=1 an accepted file must also have zero padding (after the graph, after
// each stage header and after each stream) and zero reserved fields, as docs/FORMAT.md says a
// writer leaves them.
//
// Declared sizes are capped (FZG_FUZZ_MAX_BYTES, default 32 MiB): a file may claim a field
// of up to 2^62 values, and the library allocates the declared sizes of the field and of the
// stage inputs as it decodes (no option limits them), so such a file is inspected but not
// decoded. See fuzz/README.md.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include "core/checksum.hh"
#include "core/fzg.hh"

namespace {

uint64_t max_bytes = uint64_t(32) << 20;
bool strict = false;
const char* repaired_path = nullptr;

[[noreturn]] void finding(const char* what, const char* detail = "") {
  std::fprintf(stderr, "fzg-fuzz: FINDING: %s%s%s\n", what, *detail ? ": " : "", detail);
  std::fflush(stderr);
  std::abort();
}

template <typename T> T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T> void store(uint8_t* p, T v) { std::memcpy(p, &v, sizeof(T)); }

uint64_t pad8(uint64_t n) { return (n + 7) & ~uint64_t(7); }

// Each stream's checksum in the table at `table` (its records 16 bytes apart, the first
// stream at `metadata`); returns the payload size the sizes give.
uint64_t checksum_streams(std::vector<uint8_t>& f, uint64_t table, uint64_t streams, uint64_t metadata) {
  const uint64_t size = f.size();
  uint64_t offset = metadata;
  uint64_t payload = 0;
  bool fits = true;
  for (uint64_t s = 0; s < streams; ++s) {
    const uint64_t n = load<uint64_t>(&f[table + 16 * s]);
    payload += pad8(n);  // wraps as a writer's sum would; the reader rejects it either way
    if (!fits || n > size - offset) {
      fits = false;
      continue;
    }
    store<uint64_t>(&f[table + 16 * s + 8], fzg::checksum_host(f.data() + offset, n));
    offset += pad8(n);
    if (offset > size) fits = false;
  }
  return payload;
}

void checksum_header(std::vector<uint8_t>& f, uint64_t at, uint64_t metadata) {
  store<uint64_t>(&f[at], 0);
  store<uint64_t>(&f[at], fzg::checksum_host(f.data(), metadata));
}

// Version 1: fixed header 112 bytes (stage count 80, stream count 84, payload size 88, header
// checksum 96), the graph, one stage table, one stream table.
bool repair_v1(std::vector<uint8_t>& f) {
  const uint64_t size = f.size();
  if (size < 112) return false;
  const uint64_t graph_bytes = load<uint32_t>(&f[12]);
  const uint32_t stages = load<uint32_t>(&f[80]), streams = load<uint32_t>(&f[84]);
  if (stages >= 4096 || streams >= 4096) return false;
  uint64_t pos = 112 + pad8(graph_bytes);
  for (uint32_t i = 0; i < stages; ++i) {
    if (pos > size || size - pos < 8) return false;
    const uint32_t inputs = load<uint32_t>(&f[pos + 4]);
    if (inputs > 16) return false;
    pos += 8 + 8 * uint64_t(inputs);
  }
  if (pos > size || size - pos < 16 * uint64_t(streams)) return false;
  const uint64_t table = pos, metadata = pos + 16 * uint64_t(streams);
  store<uint64_t>(&f[88], checksum_streams(f, table, streams, metadata));
  checksum_header(f, 96, metadata);
  return true;
}

// Versions 2 to 4 (the layout is the same; the graph's bytes differ from 3 on): fixed header 96
// bytes (graph size 12, stage count S 56, streams per chunk N 60,
// chunk count C 64, metadata size 72, payload size 80, header checksum 88), the graph, S stage
// headers {u64 length, bytes, padding}, C x S stage records, C x N stream records (chunk-major),
// then the payload, chunk after chunk.
bool repair_v2_v3(std::vector<uint8_t>& f) {
  const uint64_t size = f.size();
  if (size < 96) return false;
  const uint64_t graph_bytes = load<uint32_t>(&f[12]);
  const uint32_t stages = load<uint32_t>(&f[56]), streams = load<uint32_t>(&f[60]);
  const uint64_t chunks = load<uint64_t>(&f[64]);
  if (stages >= 4096 || streams >= 4096) return false;
  // Each chunk takes at least 8 bytes per stage and 16 per stream of the metadata; with
  // neither, the chunk count changes no offset.
  const uint64_t per_chunk = 8 * uint64_t(stages) + 16 * uint64_t(streams);
  if (per_chunk && chunks > size / per_chunk) return false;
  uint64_t pos = 96 + pad8(graph_bytes);
  for (uint32_t i = 0; i < stages; ++i) {
    if (pos > size || size - pos < 8) return false;
    const uint64_t bytes = load<uint64_t>(&f[pos]);
    if (bytes > size - pos - 8) return false;
    pos += 8 + pad8(bytes);
  }
  if (per_chunk)
    for (uint64_t i = 0; i < chunks * stages; ++i) {
      if (pos > size || size - pos < 8) return false;
      const uint32_t inputs = load<uint32_t>(&f[pos + 4]);
      if (inputs > 16) return false;
      pos += 8 + 8 * uint64_t(inputs);
    }
  const uint64_t records = per_chunk ? chunks * streams : 0;
  if (pos > size || (size - pos) / 16 < records) return false;
  const uint64_t table = pos, metadata = pos + 16 * records;
  store<uint64_t>(&f[72], metadata);
  store<uint64_t>(&f[80], checksum_streams(f, table, records, metadata));
  checksum_header(f, 88, metadata);
  return true;
}

// Rewrites what a writer computes from the rest of the file (docs/FORMAT.md): each stream's
// fzg64 over its own bytes (padding excluded), the payload size and the header checksum; in a
// version 2, 3 or 4 file also the metadata size (where the layout puts the payload). Streams are taken
// at the offsets their sizes give; one that does not fit is left as is, as is every later one.
// Returns false where the layout cannot be followed (no change).
bool repair_checksums(std::vector<uint8_t>& f) {
  static const uint8_t magic[4] = {0x89, 'F', 'Z', 'G'};
  if (f.size() < 6 || std::memcmp(f.data(), magic, 4) != 0) return false;
  switch (load<uint16_t>(&f[4])) {
    case 1: return repair_v1(f);
    case 2:
    case 3:
    case 4: return repair_v2_v3(f);  // versions 3 and 4 differ in a stage's stream, not in layout
    default: return false;
  }
}

// The most bytes one allocation of a decode may take, from the metadata: the field (its size
// as the library computes it, modulo 2^64), the Lorenzo codes in a lossy file, and every
// stage input the stage table records (each decoder allocates its input's recorded size).
uint64_t largest_allocation(const fzg::Container& c) {
  const uint64_t values = c.header.dims.count();
  uint64_t most = values * fzg::dtype_size(c.header.dtype);
  if (c.header.mode != fzg::ErrorMode::lossless) most = std::max(most, values > (uint64_t(1) << 62) ? ~uint64_t(0) : 2 * values);
  for (const auto& chunk : c.chunks)
    for (const auto& stage : chunk.stages)
      for (uint64_t bytes : stage.input_sizes) most = std::max(most, bytes);
  return most;
}

// Bytes a writer leaves zero: the reserved fields, the graph's padding, each stage header's
// padding (versions 2 to 4), each stream's padding.
void check_zero_fill(const fzg::Container& c, const fzg::Buffer& file) {
  const uint8_t* f = file.data();
  const uint64_t header = c.header.version == 1 ? 112 : 96;
  if (f[11] != 0 || (c.header.version == 1 && load<uint64_t>(f + 104) != 0))
    finding("accepted a file with non-zero reserved header bytes");
  for (uint64_t i = header + c.graph_bytes; i < header + pad8(c.graph_bytes); ++i)
    if (f[i] != 0) finding("accepted a file with non-zero graph padding");
  if (c.header.version != 1) {
    uint64_t pos = header + pad8(c.graph_bytes);
    for (const auto& h : c.stage_headers) {
      if (load<uint64_t>(f + pos) != h.size()) finding("stage header length differs from the file's");
      pos += 8;
      for (uint64_t i = pos + h.size(); i < pos + pad8(h.size()); ++i)
        if (f[i] != 0) finding("accepted a file with non-zero stage header padding");
      pos += pad8(h.size());
    }
  }
  for (const auto& chunk : c.chunks)
    for (size_t s = 0; s < chunk.streams.size(); ++s)
      for (uint64_t i = chunk.stream_offsets[s] + chunk.streams[s].size;
           i < chunk.stream_offsets[s] + pad8(chunk.streams[s].size); ++i)
        if (f[i] != 0) finding("accepted a file with non-zero stream padding");
}

void check_result(const fzg::Container& c, const fzg::Decompressed& out, const fzg::Buffer& file) {
  // The field has exactly the size its header declares, without wrapping.
  uint64_t field_bytes = 0;
  if (__builtin_mul_overflow(c.header.dims.count(), uint64_t(fzg::dtype_size(c.header.dtype)), &field_bytes))
    finding("decompress returned a field whose declared size overflows 64 bits");
  if (out.data.size() != field_bytes) finding("decompressed size differs from the header's dims x dtype");
  if (out.data.location() != fzg::Location::host) finding("decompressed field is not on the host");
  if (out.header.dtype != c.header.dtype || out.header.mode != c.header.mode || out.header.dims.x != c.header.dims.x ||
      out.header.dims.y != c.header.dims.y || out.header.dims.z != c.header.dims.z ||
      out.header.dims.rank != c.header.dims.rank)
    finding("decompress reports another header than inspect");
  // Into caller memory: the same bytes (a second path through the executor).
  if (field_bytes <= (uint64_t(1) << 20)) {
    std::vector<uint8_t> again(field_bytes ? field_bytes : 1);
    try {
      fzg::decompress_into(file, again.data(), field_bytes, {});
    } catch (const fzg::Error& e) {
      finding("decompress_into failed where decompress succeeded", e.what());
    }
    if (field_bytes && std::memcmp(again.data(), out.data.data(), field_bytes) != 0)
      finding("decompress_into wrote other bytes than decompress");
  }
  if (strict) check_zero_fill(c, file);
}

void run(const uint8_t* data, size_t size) {
  // A view of libFuzzer's exactly sized copy: ASan sees any read past its end.
  const fzg::Buffer file = fzg::Buffer::view(const_cast<uint8_t*>(data), size, fzg::Location::host);
  try {
    const fzg::Container c = fzg::inspect(file);
    if (largest_allocation(c) > max_bytes) return;  // declared too large to decode here
    const fzg::Decompressed out = fzg::decompress(file, {});
    check_result(c, out, file);
  } catch (const fzg::Error&) {
    // The expected outcome for damaged input.
  } catch (const std::exception& e) {
    finding("exception other than fzg::Error", e.what());
  } catch (...) {
    finding("exception of unknown type");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // One OpenMP thread: the fuzzer itself is the parallelism (-jobs/-workers), and the
  // library's parallel loops then run in the fuzzer's thread (deterministic coverage).
  setenv("OMP_NUM_THREADS", "1", 0);
  if (const char* cap = std::getenv("FZG_FUZZ_MAX_BYTES")) max_bytes = std::strtoull(cap, nullptr, 0);
  if (const char* s = std::getenv("FZG_FUZZ_STRICT")) strict = std::strcmp(s, "0") != 0;
  repaired_path = std::getenv("FZG_FUZZ_REPAIRED");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::vector<uint8_t> odd(size + 1);  // ends where the input ends: ASan still sees overreads
    if (size) std::memcpy(odd.data() + 1, data, size);
    run(odd.data() + 1, size);
  }
  std::vector<uint8_t> repaired(data, data + size);
  const bool changed = repair_checksums(repaired) && !std::equal(repaired.begin(), repaired.end(), data);
  if (repaired_path) {
    if (FILE* f = std::fopen(repaired_path, "wb")) {
      std::fwrite(repaired.data(), 1, repaired.size(), f);
      std::fclose(f);
    }
  }
  if (changed) run(repaired.data(), repaired.size());
  return 0;
}
