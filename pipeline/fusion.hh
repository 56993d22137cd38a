// Fusion: a backend may run two adjacent stages as one kernel chain when the first stage's
// only output feeds the second. The stored bytes are exactly those of the two stages run in
// turn (the CPU reference); the intermediate buffer just never exists. The executor asks
// find_fusion() and falls back to the stages themselves when none applies.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "pipeline/graph.hh"

namespace fzg {

class Fusion {
 public:
  virtual ~Fusion() = default;
  virtual bool matches(const GraphNode& first, const GraphNode& second, Device device) const = 0;
  // The size the first stage's output would have for an input of `input_bytes`.
  virtual uint64_t intermediate_size(uint64_t input_bytes) const = 0;
  // The second stage's output from the first stage's input.
  virtual Buffer encode(const StageContext& ctx, const Buffer& input) const = 0;
  // The first stage's input (of `input_bytes`) from the second stage's output.
  virtual Buffer decode(const StageContext& ctx, const Buffer& encoded, uint64_t input_bytes) const = 0;
};

// The fusion for this pair on this device, or nullptr.
const Fusion* find_fusion(const GraphNode& first, const GraphNode& second, Device device);

// A chain set up for one field: what needs no quantization (buffers, zeroed state) is done,
// so that the host does it while the device still reduces the field's value range.
class PreparedChain {
 public:
  virtual ~PreparedChain() = default;
  // The outputs, or nothing when the chain declines (for data whose stream would not fit
  // its scratch, or that a node would store raw). ctx.quant is final by now. Called once:
  // the chain gives its buffers back on the way.
  virtual std::vector<Buffer> encode(const StageContext& ctx) = 0;
};

// A chain: a predictor and the lossless stages after it, run a slab of the field at a time so
// that no intermediate ever exists whole (the device holds the field, one slab's
// intermediates and the streams). It covers the graph's nodes [first, first + length()),
// each with a single input, the first reading the field; the bytes are exactly those of the
// nodes run in turn, and where a chain cannot promise that it declines and the executor runs
// the nodes themselves.
class ChainFusion {
 public:
  virtual ~ChainFusion() = default;
  virtual size_t length() const = 0;
  virtual bool matches(const Graph& graph, size_t first, Device device) const = 0;
  // The ports the chain leaves (stored, or read by later nodes): the order of encode's
  // results and of decode's arguments.
  virtual std::vector<PortRef> outputs(size_t first) const = 0;
  // Each node's input size, as the nodes run in turn would record it.
  virtual std::vector<uint64_t> input_sizes(const StageContext& ctx) const = 0;
  // Set up to encode `field`; ctx.quant may not be known yet. The field must stay as it is.
  virtual std::unique_ptr<PreparedChain> prepare(const StageContext& ctx, const Buffer& field) const = 0;
  // Decodes into `field` (the whole field's bytes, on the device or the host): a chain
  // decoding to the host moves each slab off the device while the next is decoded, so the
  // device never holds the whole field.
  virtual void decode(const StageContext& ctx, const std::vector<Buffer>& outputs, Buffer& field) const = 0;
};

// The chain fusion that starts at node `first` (or ends at node `last`), or nullptr.
const ChainFusion* find_chain_starting(const Graph& graph, size_t first, Device device);
const ChainFusion* find_chain_ending(const Graph& graph, size_t last, Device device);

}  // namespace fzg
