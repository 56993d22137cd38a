// The size FZ-GPU's lossless format would give the same quantization codes: a yardstick for
// fzg's ratio, counted as FZ-GPU counts it (its flags and per-chunk offsets included).
//
// FZ-GPU pads the u16 codes to 4 KiB chunks (1024 u32 words), bit-transposes each 32-word row
// (natural plane order), keeps the 16-byte blocks (4 transposed words) that are non-zero, and
// stores one flag bit per block (32 bytes per chunk) and a 4-byte start offset per chunk.
#pragma once
#include <cstdint>

namespace fzg::bench {

uint64_t fzgpu_format_bytes(const uint16_t* codes, uint64_t count);

}  // namespace fzg::bench
