// The stage contract (version 2). A stage turns the buffers on its input ports into buffers on
// its output ports (encode) and back (decode), one chunk of the field at a time. It declares
// typed ports, bounds its output sizes before it runs, reports the complete parameters a
// decoder needs (they travel in the file's graph) and may write a header of its own once per
// file (data-dependent state such as a quantization or a codebook), handed back to every
// encode and decode call and described by `fzg info`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/field.hh"
#include "core/missing_values.hh"
#include "runtime/buffer.hh"

namespace fzg {

class DeviceChecks;

// What flows between stages: the field (its values, of the field's type), symbols (fixed-width
// unsigned integers, such as a predictor's quantization codes) or bytes. `width` is the element
// size in bytes (0 for a field: the field's own). An input port of bytes accepts anything; the
// others accept only their own kind and width.
enum class PortKind : uint8_t { field, symbols, bytes };
struct PortType {
  PortKind kind = PortKind::bytes;
  uint8_t width = 1;
  bool operator==(const PortType& o) const { return kind == o.kind && width == o.width; }
  bool operator!=(const PortType& o) const { return !(*this == o); }
};
constexpr PortType field_port{PortKind::field, 0};
constexpr PortType symbols_port(uint8_t width) { return {PortKind::symbols, width}; }
constexpr PortType bytes_port{PortKind::bytes, 1};
std::string to_string(PortType t);  // "field", "symbols<u16>", "bytes"
// Whether an input port of type `input` takes what an output port of type `output` produces.
bool accepts(PortType input, PortType output);

struct PortSpec {
  std::string name;
  PortType type;
};

// How a stage may be run together with its neighbour in one composite kernel (see
// fusions/composite.hh). A composite names the roles it joins, never stage types, so a new
// stage with the same layout joins the same composite.
enum class FusionRole : uint8_t {
  none,
  bitplanes_32x32,  // a transform to 32x32-bit tiles of bit planes (one u32 word per plane)
  word_zero_pack,   // a coder that drops all-zero u32 words, flagged per 32
};

struct StageSpec {
  std::string type;  // registry name, e.g. "zero-block"
  std::vector<PortSpec> inputs;
  std::vector<PortSpec> outputs;
  // Consumes the field and owns the lossy step (value range, bound, quantization); dropped in
  // lossless mode, and its chunks are whole tile rows of `chunk_rows` (see Stage).
  bool predictor = false;
  // A coder whose outputs may be replaced by its inputs when they would not be smaller: output
  // port p then holds input port p unchanged and the outputs past the inputs are empty. Needs
  // at least as many outputs as inputs. Transforms (bitshuffle) keep their output: the next
  // stage needs its layout.
  bool stores_raw_when_larger = false;
  // Needs the finite value range of the whole field to make its header (the executor reduces
  // it once, beside the field's upload), or to resolve on the device (resolve_on_device).
  bool needs_value_range = false;
};

// What every stage may know about the run: where to compute and which part of which field.
struct StageContext {
  Device device = Device::cpu;
  cudaStream_t stream = nullptr;
  DType dtype = DType::f32;
  Dims field_dims;   // the whole field
  Dims dims;         // this chunk: whole slices of the slowest axis of field_dims
  uint64_t chunk_first_value = 0;  // the chunk's first value in the field's order
  const std::vector<uint8_t>* header = nullptr;  // this stage's header (empty when it has none)
  // On the GPU with fill values, where the executor made them beside the value range: the whole
  // field's data bits (DataBits, core/missing_values.hh) in device memory; null otherwise.
  const uint32_t* data_bits = nullptr;
  // On the GPU, a decode's checks left on the device for the call's end (core/device_checks.hh);
  // null where a stage runs on its own (it then reads back checks of its own when done).
  DeviceChecks* checks = nullptr;
  // On the GPU, what this stage's resolve_on_device made for the call (device memory), which
  // its encode reads in place of the header's quantization; null otherwise.
  const void* resolved = nullptr;
};

// What a header is made from: the request and what the executor knows of the whole field.
struct FieldSummary {
  ErrorBound bound;       // as asked; lossless mode never reaches a predictor
  // The finite value range, when spec().needs_value_range, unless it stayed on the device
  // (below): 0, 0 then.
  double min = 0, max = 0;
  const Buffer* field = nullptr;  // the whole field, where the executor holds it (null: unknown)
  // For resolve_on_device: the range in device memory (min, max as two f64), never read back;
  // null where min and max are given.
  const double* device_range = nullptr;
  // Where make_header follows resolve_on_device: a host copy of what that made, which the
  // header records (the encode used it), and the header made before the chunks is the
  // context's (ctx.header), whose other choices it keeps. Null otherwise.
  const void* resolved = nullptr;
};

class Stage {
 public:
  virtual ~Stage() = default;
  virtual const StageSpec& spec() const = 0;
  // Every parameter, defaults filled in: enough to rebuild an identical stage.
  virtual nlohmann::json params() const = 0;
  virtual FusionRole fusion_role() const { return FusionRole::none; }

  // The header, made once per file before any chunk is encoded (ctx.dims is the whole field),
  // or, after resolve_on_device, once more when the chunks are: the file keeps that one.
  virtual std::vector<uint8_t> make_header(const StageContext&, const FieldSummary&) const { return {}; }
  // A predictor that resolves its lossy step on the GPU from summary.device_range, so that the
  // chunks are queued without the host waiting for the range in between: queues on ctx.stream
  // what its encode then reads (StageContext::resolved) and returns it. The executor makes the
  // header twice: before the chunks from a summary without the range (the encode must not
  // read the header's quantization), and after them from a host copy of what this returned
  // (FieldSummary::resolved), keeping the first header's other choices. What it resolves must
  // be what the host resolves from the same range, bit for bit (the backends write the same
  // files). Empty (the default): the stage needs the range on the host first.
  virtual Buffer resolve_on_device(const StageContext&, const FieldSummary&) const { return Buffer(); }
  // Checks a stored header (throws corrupt_data) and describes it for `fzg info`.
  virtual nlohmann::json describe_header(const StageContext&, const std::vector<uint8_t>& header) const;
  // A predictor's fill values in the field's type: its missing points, left out of the value
  // range the executor reduces for make_header (and restored bit for bit by decode).
  virtual MissingValues missing_values(DType) const { return {}; }
  // A predictor's quantization, read from its header (the bound every point honours).
  virtual Quantization quantization(const std::vector<uint8_t>&) const { return {}; }
  // Slices of the slowest axis a chunk is a multiple of (a predictor's tile extent).
  virtual uint64_t chunk_rows(const Dims&) const { return 1; }

  // Worst-case size of each output for a chunk of ctx.dims with inputs of these sizes.
  virtual std::vector<uint64_t> max_output_sizes(const StageContext& ctx,
                                                 const std::vector<uint64_t>& input_sizes) const = 0;
  // Inputs and outputs live on the device when ctx.device is cuda, on the host otherwise.
  // const: a stage is shared by every call and thread using its graph (and by the plan
  // cache); what one call needs lives in that call.
  virtual std::vector<Buffer> encode(const StageContext& ctx, const std::vector<Buffer>& inputs) const = 0;
  // What can be checked of the outputs before the executor allocates the inputs at their
  // recorded sizes (throws corrupt_data): a small stream may not claim a huge input.
  virtual void check_outputs(const StageContext&, const std::vector<Buffer>& /*outputs*/,
                             const std::vector<uint64_t>& /*input_sizes*/) const {}
  // Fills `inputs`, which the executor allocated at the sizes encode saw (recorded in the
  // file), from the outputs. Every inconsistency in the outputs throws corrupt_data.
  virtual void decode(const StageContext& ctx, const std::vector<Buffer>& outputs, std::vector<Buffer>& inputs) const = 0;
};

constexpr bool cuda_built() {
#ifdef FZG_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

// Runs `cpu()` or `cuda()` by ctx.device: the one place that knows whether this build has a
// CUDA backend. A stage's CUDA entry points are declared in every build and defined only in
// CUDA builds; `cuda` is never instantiated into a call without them.
template <typename Cpu, typename Cuda>
decltype(auto) on_backend(const StageContext& ctx, Cpu&& cpu, Cuda&& cuda) {
#ifdef FZG_HAVE_CUDA
  if (ctx.device == Device::cuda) return cuda();
#else
  (void)ctx, (void)cuda;
#endif
  return cpu();
}

// Reads a stage's JSON parameters; each reader returns `fallback` when the key is absent and
// fails with invalid_config, naming the stage and the key, when its value is of another kind
// or out of range. finish() rejects any key nobody asked for.
class StageParams {
 public:
  StageParams(std::string stage_type, const nlohmann::json& params);
  int64_t integer(const std::string& key, int64_t fallback, int64_t min, int64_t max);
  bool boolean(const std::string& key, bool fallback);
  std::string text(const std::string& key, const std::string& fallback);
  // An enumeration spelled as strings: one of `choices`.
  std::string choice(const std::string& key, const std::string& fallback, const std::vector<std::string>& choices);
  // A list of integers, each in [min, max].
  std::vector<int64_t> integers(const std::string& key, const std::vector<int64_t>& fallback, int64_t min, int64_t max);
  // A list of fill values: numbers, or "nan", "-nan", "inf", "-inf" (empty when absent).
  std::vector<double> fill_values(const std::string& key);
  void finish() const;

 private:
  // The key's value, or null when absent; either way the key counts as read.
  const nlohmann::json* find(const std::string& key);
  [[noreturn]] void reject(const std::string& key, const std::string& what) const;
  int64_t checked_integer(const std::string& key, const nlohmann::json& value, int64_t min, int64_t max) const;

  std::string stage_type_;
  nlohmann::json params_;
  std::vector<std::string> read_;
};

}  // namespace fzg
