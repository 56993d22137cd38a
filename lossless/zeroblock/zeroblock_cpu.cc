// CPU reference of zero-block: flags per group in parallel, a prefix sum over groups for
// the offsets, then the blocks copied in parallel to their places.
#include <cstring>
#include <vector>

#include "core/error.hh"
#include "lossless/zeroblock/zeroblock.hh"
#include "varlen/scan.hh"

namespace fzg::zeroblock {

Layout::Layout(uint64_t input_bytes, uint32_t block_words_) : block_words(block_words_) {
  words = (input_bytes + 3) / 4;
  blocks = (words + block_words - 1) / block_words;
  groups = (blocks + blocks_per_group - 1) / blocks_per_group;
  group_flag_words = (groups + 31) / 32;
}

namespace {

uint32_t load_word(const uint8_t* input, uint64_t input_bytes, uint64_t i) {
  uint32_t w = 0;
  if (4 * i + 4 <= input_bytes) std::memcpy(&w, input + 4 * i, 4);
  else if (4 * i < input_bytes) std::memcpy(&w, input + 4 * i, input_bytes - 4 * i);
  return w;
}

uint32_t block_flags_of_group(const uint8_t* input, uint64_t input_bytes, const Layout& L, uint64_t g) {
  uint32_t flags = 0;
  for (uint32_t b = 0; b < blocks_per_group; ++b) {
    const uint64_t block = g * blocks_per_group + b;
    if (block >= L.blocks) break;
    for (uint32_t w = 0; w < L.block_words; ++w)
      if (load_word(input, input_bytes, block * L.block_words + w)) {
        flags |= 1u << b;
        break;
      }
  }
  return flags;
}

// Exclusive prefix sums over groups (offsets[groups] holds the totals): where each group's
// flag word and first block go.
template <typename FlagsOf>
std::vector<GroupOffset> scan_groups(uint64_t groups, FlagsOf flags_of) {
  std::vector<GroupOffset> offsets(groups + 1);
  varlen::exclusive_scan(
      [&](uint64_t g) {
        const uint32_t flags = flags_of(g);
        return GroupOffset{flags != 0, uint64_t(__builtin_popcount(flags))};
      },
      groups, offsets.data());
  return offsets;
}

}  // namespace

uint64_t encode_cpu(const uint8_t* input, uint64_t input_bytes, uint32_t block_words, uint32_t* output) {
  const Layout L(input_bytes, block_words);
  std::vector<uint32_t> flags(L.groups);
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < int64_t(L.groups); ++g) flags[g] = block_flags_of_group(input, input_bytes, L, uint64_t(g));
  const std::vector<GroupOffset> o = scan_groups(L.groups, [&](uint64_t g) { return flags[g]; });
  const GroupOffset total = o[L.groups];

  uint32_t* group_flags = output;
  uint32_t* block_flags = group_flags + L.group_flag_words;
  uint32_t* blocks = block_flags + total.flag;
  std::memset(group_flags, 0, 4 * L.group_flag_words);
  for (uint64_t g = 0; g < L.groups; ++g)
    if (flags[g]) group_flags[g / 32] |= 1u << (g % 32);
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < int64_t(L.groups); ++g) {
    if (!flags[g]) continue;
    block_flags[o[g].flag] = flags[g];
    uint64_t next = o[g].block;
    for (uint32_t b = 0; b < blocks_per_group; ++b) {
      if (!(flags[g] >> b & 1)) continue;
      const uint64_t block = uint64_t(g) * blocks_per_group + b;
      for (uint32_t w = 0; w < block_words; ++w)
        blocks[next * block_words + w] = load_word(input, input_bytes, block * block_words + w);
      ++next;
    }
  }
  return 4 * (L.group_flag_words + total.flag + total.block * block_words);
}

void decode_cpu(const uint32_t* input, uint64_t input_bytes, uint32_t block_words, uint8_t* output,
                uint64_t output_bytes) {
  const Layout L(output_bytes, block_words);
  require_data(input_bytes % 4 == 0 && input_bytes / 4 >= L.group_flag_words, "zero-block flags");
  const uint32_t* group_flags = input;
  const uint32_t* block_flags = input + L.group_flag_words;
  const uint64_t available = input_bytes / 4 - L.group_flag_words;
  auto group_set = [&](uint64_t g) { return (group_flags[g / 32] >> (g % 32)) & 1u; };
  // Unused bits must be clear: a set one would place a block outside the output.
  if (L.groups % 32) require_data((group_flags[L.group_flag_words - 1] >> (L.groups % 32)) == 0, "zero-block group flags");
  uint64_t seen_groups = 0;
  const std::vector<GroupOffset> o = scan_groups(L.groups, [&](uint64_t g) -> uint32_t {
    if (!group_set(g)) return 0;
    require_data(seen_groups < available, "zero-block block flags");
    const uint32_t flags = block_flags[seen_groups++];
    require_data(flags != 0, "zero-block empty group");
    const uint64_t valid = L.blocks - g * blocks_per_group;
    if (valid < blocks_per_group) require_data((flags >> valid) == 0, "zero-block block flags");
    return flags;
  });
  const GroupOffset total = o[L.groups];
  require_data(available == total.flag + total.block * block_words, "zero-block stream size");
  const uint32_t* blocks = block_flags + total.flag;
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < int64_t(L.groups); ++g) {
    const uint32_t flags = group_set(uint64_t(g)) ? block_flags[o[g].flag] : 0;
    uint64_t next = o[g].block;
    for (uint32_t b = 0; b < blocks_per_group; ++b) {
      const uint64_t block = uint64_t(g) * blocks_per_group + b;
      if (block >= L.blocks) break;
      const bool stored = flags >> b & 1;
      for (uint32_t w = 0; w < block_words; ++w) {
        const uint64_t word = block * block_words + w;
        if (4 * word >= output_bytes) break;
        const uint32_t value = stored ? blocks[next * block_words + w] : 0;
        const uint64_t n = output_bytes - 4 * word < 4 ? output_bytes - 4 * word : 4;
        std::memcpy(output + 4 * word, &value, n);
      }
      next += stored;
    }
  }
}

}  // namespace fzg::zeroblock
