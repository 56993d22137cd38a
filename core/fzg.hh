// fzg's public API: compress a field through a graph into one .fzg file, and back.
//
//   fzg::Graph graph = fzg::Graph::from_file("configs/fz.json");
//   fzg::FieldRef field{data, fzg::Location::host, fzg::DType::f32, fzg::Dims::make({500, 500, 100})};
//   fzg::CompressOptions options;           // rel 1e-3 on the CPU by default
//   fzg::Buffer file = fzg::compress(graph, field, options);
//   fzg::Decompressed out = fzg::decompress(file, {});
//
// With options.device = Device::cuda the field and the file may live in device memory
// (in-situ use on the caller's stream) or on the host (staged through the GPU).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/container.hh"
#include "core/error.hh"
#include "core/field.hh"
#include "core/graph.hh"
#include "runtime/buffer.hh"

namespace fzg {

struct FieldRef {
  const void* data = nullptr;
  Location where = Location::host;
  DType dtype = DType::f32;
  Dims dims;
  uint64_t size_bytes() const { return dims.count() * dtype_size(dtype); }
};

struct StageTime {
  // "<id> encode", "<id> decode", or a named step such as "value range"; a compress's second
  // pass, which codes the field exactly when the lossy file came out under ratio 2, names its
  // steps behind exact_pass_label ("exact pass: lz encode").
  std::string stage;
  double milliseconds = 0;
};
inline constexpr const char* exact_pass_label = "exact pass: ";

struct CompressOptions {
  ErrorBound bound;
  Device device = Device::cpu;
  cudaStream_t stream = nullptr;
  Location output = Location::host;          // where the file is written
  std::vector<StageTime>* stage_times = nullptr;  // filled when given (synchronizes per step, summed over chunks)
  // Device bytes the call may hold (0: the device's free memory). A host field that does not
  // fit beside its chunks' work is compressed from the host, a chunk at a time per lane.
  uint64_t device_memory_budget = 0;
  // Fill values marking missing points (1e20, nan, ...), when not empty and the mode is lossy:
  // the graph's predictor takes them instead of its own (Graph::with_fill_values_for). Missing
  // points stay out of the value range and the bound and come back bit for bit.
  std::vector<double> fill_values;
};

struct DecompressOptions {
  Device device = Device::cpu;
  cudaStream_t stream = nullptr;
  Location output = Location::host;
  std::vector<StageTime>* stage_times = nullptr;
  // Device bytes the call may hold (0: the device's free memory). Decompressing to the host
  // holds a few chunks; to the device, the field too.
  uint64_t device_memory_budget = 0;
  // When given: called with the file's header once the metadata is read and checked, before
  // anything is decoded or written. A caller that expects a certain field throws here, where
  // inspecting the file first would read its metadata twice (from device memory, a copy to
  // the host and a synchronization each time).
  std::function<void(const Header&)> check_header;
};

struct Decompressed {
  Buffer data;
  Header header;
};

Buffer compress(const Graph& graph, const FieldRef& field, const CompressOptions& options);
Decompressed decompress(const Buffer& file, const DecompressOptions& options);
// The same into caller memory at options.output (a host array, or device memory for in-situ
// use), `capacity_bytes` long: no output buffer is allocated, and a reused host array is
// not faulted in again. Throws invalid_argument when the field does not fit.
Header decompress_into(const Buffer& file, void* destination, uint64_t capacity_bytes,
                       const DecompressOptions& options);
// A sub-box of a field: [x0, x1) x [y0, y1) x [z0, z1), x fastest (ends past the field are
// clipped to it).
struct Box {
  uint64_t x0 = 0, x1 = ~uint64_t(0), y0 = 0, y1 = ~uint64_t(0), z0 = 0, z1 = ~uint64_t(0);
  std::string to_string() const;
};
// Reads bytes [offset, offset + size) of a file into `into` (a file on disk, an object store).
using FileReader = std::function<void(uint64_t offset, uint64_t size, void* into)>;
// inspect() of a file read through `read`: its metadata alone (`fzg info` of a file of any size).
Container inspect(const FileReader& read, uint64_t file_bytes);
// The values of `box` (x fastest, box extents) from a file read through `read`: the metadata,
// then the payload of only the chunks whose slices of the slowest axis meet the box (their
// streams alone are checksummed). The header is the file's.
Decompressed decompress_box(const FileReader& read, uint64_t file_bytes, const Box& box, const DecompressOptions& options);
Decompressed decompress_box(const Buffer& file, const Box& box, const DecompressOptions& options);

// Reads the metadata alone (for `fzg info`); the file may be on the host or the device. The
// stored graph is loaded and every stage header checked; header.quant is the predictor's.
Container inspect(const Buffer& file, cudaStream_t stream = nullptr);
// Each stage header described by its stage ({"predict": {"absolute_bound": ...}}).
nlohmann::json describe_stage_headers(const Container& c);

// Worst-case file size for a field of this type and shape: no input expands past it.
uint64_t max_compressed_size(const Graph& graph, DType dtype, const Dims& dims, ErrorMode mode);

Device default_device();  // cuda when a device is present, else cpu

}  // namespace fzg
