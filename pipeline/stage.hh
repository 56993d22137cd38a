// The stage contract. A stage turns the buffers on its input ports into buffers on its output
// ports (encode) and back (decode). It declares its ports, bounds its output sizes before it
// runs, and reports the complete parameters a decoder needs; those travel in the file's graph.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/buffer.hh"
#include "pipeline/field.hh"

namespace fzg {

// What flows between stages. `bytes` accepts anything on an input port.
enum class PortType { field, codes_u16, bytes };
std::string to_string(PortType t);

struct PortSpec {
  std::string name;
  PortType type;
};

struct StageSpec {
  std::string type;               // registry name, e.g. "zero-block"
  std::vector<PortSpec> inputs;
  std::vector<PortSpec> outputs;
  bool predictor = false;         // consumes the field; dropped in lossless mode
  // A coder whose output may be replaced by its input when it would not be smaller. Transforms
  // (bitshuffle) keep their output: the next stage needs its layout.
  bool stores_raw_when_larger = false;
};

// What every stage may know about the run: where to compute and what the field is.
struct StageContext {
  Device device = Device::cpu;
  cudaStream_t stream = nullptr;
  DType dtype = DType::f32;
  Dims dims;
  Quantization quant;
  // Values a fused chain processes at a time (0: the backend's choice): the bound on its
  // intermediate buffers. Never changes the bytes.
  uint64_t slab_values = 0;
};

class Stage {
 public:
  virtual ~Stage() = default;
  virtual const StageSpec& spec() const = 0;
  // Every parameter, defaults filled in: enough to rebuild an identical stage.
  virtual nlohmann::json params() const = 0;
  // Worst-case size of each output for inputs of these sizes (the executor allocates from it).
  virtual std::vector<uint64_t> max_output_sizes(const StageContext& ctx,
                                                 const std::vector<uint64_t>& input_sizes) const = 0;
  // Inputs and outputs live on the device when ctx.device is cuda, on the host otherwise.
  // const: a stage is shared by every call and thread using its graph (and by the stored-graph
  // cache); what one call needs lives in that call.
  virtual std::vector<Buffer> encode(const StageContext& ctx, const std::vector<Buffer>& inputs) const = 0;
  // input_sizes are the sizes encode saw, recorded in the file.
  virtual std::vector<Buffer> decode(const StageContext& ctx, const std::vector<Buffer>& outputs,
                                     const std::vector<uint64_t>& input_sizes) const = 0;
};

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
