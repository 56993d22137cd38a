// CPU reference of GPULZ: each chunk probed (a distance at a time, probe_by_distance, and in
// wide chunks each position's far candidate) and parsed in turn (chunks in parallel, by the
// chunked-stream scaffold), decoded token by token.
#include <cstring>
#include <vector>

#include "core/error.hh"
#include "lossless/gpulz/gpulz.hh"
#include "lossless/gpulz/gpulz_parse.hh"
#include "varlen/chunked_stream.hh"

namespace fzg::gpulz {

namespace {

// Each keyed position's far candidates (gpulz_parse.hh), the hash table updated position by
// position, the best in place of its probe where one is taken.
template <typename Sym>
void add_far_candidates(const Sym* x, const uint8_t* bytes, uint32_t m, uint32_t window, uint32_t min_match,
                        uint32_t* probes) {
  constexpr uint32_t none = ~0u;
  std::vector<uint32_t> latest(far_table_size, none);
  for (uint32_t i = 0, keyed = keyed_positions(m, sizeof(Sym)); i < keyed; ++i) {
    uint32_t* bucket = &latest[far_hash(bytes + uint64_t(i) * sizeof(Sym)) * far_ways];
    const uint32_t far = best_far(x, i, m, window, probes[i] & 0xffu, min_match, [&](uint32_t k, uint32_t& j) {
      j = bucket[k];
      return j != none;
    });
    if (far) probes[i] = far;
    std::memmove(bucket + 1, bucket, (far_ways - 1) * sizeof *bucket);
    bucket[0] = i;
  }
}

template <typename Sym>
uint32_t encode_as(const Params& p, const uint8_t* in, uint32_t n, uint8_t* out, uint32_t capacity) {
  const uint32_t m = n / sizeof(Sym);
  std::vector<Sym> x(m);
  if (m) std::memcpy(x.data(), in, m * sizeof(Sym));
  std::vector<uint32_t> probes(m);
  probe_by_distance(x.data(), m, p.window, probes.data());
  const uint32_t min_match = min_match_of(p, sizeof(Sym));
  for (uint32_t& v : probes) v = probe_of(v);
  std::vector<uint8_t> flags((m + 7) / 8);
  uint32_t longest = 0;
  const auto write = [&](const std::vector<uint32_t>& probe, bool wide, uint8_t* to) {
    return write_chunk(x.data(), m, [&](uint32_t i) { return probe[i]; }, min_match, wide, in + m * sizeof(Sym),
                       n % sizeof(Sym), to, capacity, flags.data(), &longest);
  };
  if (!p.wide()) return write(probes, false, out);
  std::vector<uint32_t> far = probes;
  add_far_candidates(x.data(), in, m, p.window, min_match, far.data());
  const uint32_t size = write(far, true, out);
  if (size > capacity || !try_narrow(longest, m)) return size;
  std::vector<uint8_t> narrow(capacity);
  const uint32_t narrow_size = write(probes, false, narrow.data());
  if (narrow_size >= size) return size;
  std::memcpy(out, narrow.data(), narrow_size);
  return narrow_size;
}

class Coder final : public chunked::ChunkCoder {
 public:
  explicit Coder(const Params& p) : p_(p) {}
  uint32_t chunk_bytes() const override { return p_.chunk_bytes; }

  uint64_t encode_chunk(const uint8_t* in, uint32_t n, uint8_t* out, uint32_t capacity) const override {
    if (p_.symbol) return encode_with(p_.symbol, in, n, out, capacity);
    // Every width; the smallest code wins, the narrower on a tie.
    uint64_t best = uint64_t(capacity) + 1;
    std::vector<uint8_t> trial(capacity);
    for (uint32_t S : {1u, 2u, 4u}) {
      const uint64_t size = encode_with(S, in, n, trial.data(), capacity);
      if (size < best) best = size, std::memcpy(out, trial.data(), size);
    }
    return best;
  }

  void decode_chunk(const uint8_t* in, uint32_t size, uint8_t* out, uint32_t n) const override {
    ChunkShape s;
    require_data(chunk_shape(in, size, n, s), "gpulz chunk header");
    const uint32_t S = s.S, min_match = min_match_of(p_, S);
    const uint8_t* flags = in + s.tokens_end;
    uint32_t pos = header_bytes, o = 0;  // o: symbols written
    for (uint32_t t = 0; t < s.tokens; ++t) {
      if (flags[t / 8] >> (t % 8) & 1u) {
        require_data(pos + 2 <= s.tokens_end, "gpulz tokens");
        uint32_t extra, d;
        get_match(in + pos, s.wide, extra, d);
        const uint32_t len = extra + min_match;
        require_data(d <= o && len <= s.symbols - o, "gpulz match");
        // Byte by byte, forwards: a source that overlaps the match repeats its last d symbols.
        uint8_t* to = out + uint64_t(o) * S;
        const uint8_t* from = to - uint64_t(d) * S;
        for (uint32_t b = 0; b < len * S; ++b) to[b] = from[b];
        pos += 2, o += len;
      } else {
        require_data(pos + S <= s.tokens_end && o < s.symbols, "gpulz literal");
        std::memcpy(out + uint64_t(o) * S, in + pos, S);
        pos += S, o += 1;
      }
    }
    require_data(pos == s.tokens_end && o == s.symbols, "gpulz chunk size");
    std::memcpy(out + uint64_t(s.symbols) * S, in + size - s.tail, s.tail);
  }

 private:
  uint64_t encode_with(uint32_t S, const uint8_t* in, uint32_t n, uint8_t* out, uint32_t capacity) const {
    if (n < S) return uint64_t(capacity) + 1;
    switch (S) {
      case 1: return encode_as<uint8_t>(p_, in, n, out, capacity);
      case 2: return encode_as<uint16_t>(p_, in, n, out, capacity);
      default: return encode_as<uint32_t>(p_, in, n, out, capacity);
    }
  }
  Params p_;
};

}  // namespace

Buffer encode_cpu(const Params& p, const uint8_t* input, uint64_t input_bytes) {
  return chunked::encode_cpu(Coder(p), input, input_bytes);
}

void decode_cpu(const Params& p, const uint8_t* stream, uint64_t stream_bytes, uint8_t* output, uint64_t output_bytes) {
  chunked::decode_cpu(Coder(p), stream, stream_bytes, output, output_bytes);
}

}  // namespace fzg::gpulz
