// Synthetic fields for demos, tests and benchmarks, deterministic for a seed.
//   smooth     a few long waves
//   turbulent  many waves with a Kolmogorov-like spectrum (amplitude ~ k^-5/6) plus fine noise
//   noisy      smooth plus 10% white noise
//   constant   one value everywhere
#pragma once
#include <cstdint>
#include <string>

#include "core/field.hh"
#include "runtime/buffer.hh"

namespace fzg {

enum class SynthKind { smooth, turbulent, noisy, constant };
SynthKind parse_synth_kind(const std::string& name);

// A host buffer of dims.count() values of `type` (f32 or f64).
Buffer synthesize(SynthKind kind, DType type, const Dims& dims, uint64_t seed = 1);

}  // namespace fzg
