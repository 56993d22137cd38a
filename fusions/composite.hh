// Composite steps: two adjacent stages run as one kernel chain, where the first stage's only
// output is the second's only input. The planner substitutes a composite wherever the two
// stages' fusion roles (Stage::fusion_role) match one registered here for the device; the
// stored bytes are exactly those of the two stages run in turn (the CPU reference), the
// intermediate buffer just never exists.
#pragma once
#include <cstdint>
#include <memory>

#include "core/stage.hh"

namespace fzg {

class Composite {
 public:
  virtual ~Composite() = default;
  virtual const char* name() const = 0;
  virtual FusionRole first() const = 0;
  virtual FusionRole second() const = 0;
  virtual bool runs_on(Device device) const = 0;
  // The size the first stage's output would have for an input of `input_bytes`.
  virtual uint64_t intermediate_size(uint64_t input_bytes) const = 0;
  // The second stage's output from the first stage's input.
  virtual Buffer encode(const StageContext& ctx, const Buffer& input) const = 0;
  // Fills the first stage's input (allocated at its recorded size) from the second's output.
  virtual void decode(const StageContext& ctx, const Buffer& encoded, Buffer& input) const = 0;
};

// The composite joining these roles on this device, or nullptr (fusions/registry.cc).
const Composite* find_composite(FusionRole first, FusionRole second, Device device);

}  // namespace fzg
