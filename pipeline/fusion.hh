// Fusion: a backend may run two adjacent stages as one kernel chain when the first stage's
// only output feeds the second. The stored bytes are exactly those of the two stages run in
// turn (the CPU reference); the intermediate buffer just never exists. The executor asks
// find_fusion() and falls back to the stages themselves when none applies.
#pragma once
#include <cstdint>

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

}  // namespace fzg
