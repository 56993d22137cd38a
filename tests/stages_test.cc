// Unit tests of the stages, each on its own.
#include <algorithm>
#include <random>

#include "bitshuffle/bitshuffle.hh"
#include "core/registry.hh"
#include "lossless/zeroblock/zeroblock.hh"
#include "predictors/lorenzo/lorenzo.hh"
#include "predictors/lorenzo/quantization.hh"
#include "predictors/lorenzo/quantizer.hh"
#include "test_util.hh"

namespace fzg {
namespace {

TEST(Quantizer, SignMagnitudeCodesRoundTripAndEscapeBeyond15Bits) {
  for (int32_t d : {0, 1, -1, 5, -5, 32767, -32767}) {
    uint16_t code;
    ASSERT_TRUE(lorenzo::encode_delta(d, &code)) << d;
    EXPECT_EQ(lorenzo::decode_delta(code), d);
    EXPECT_EQ(code >> 15, d < 0 ? 1 : 0);
  }
  uint16_t code = 123;
  EXPECT_FALSE(lorenzo::encode_delta(32768, &code));
  EXPECT_EQ(code, 0);
  EXPECT_FALSE(lorenzo::encode_delta(-32768, &code));
}

// A stored quantization as writers make it: a finite step above 0, a finite range in order;
// the bound may be inf (a range past DBL_MAX at a large rel bound). Anything else is damage.
TEST(Quantizer, StoredQuantizationIsCheckedAsWritersMakeIt) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NO_THROW(lorenzo::read_quantization(lorenzo::write_quantization({0.5, 1.0, -3.0, 4.0})));
  EXPECT_NO_THROW(lorenzo::read_quantization(lorenzo::write_quantization({inf, 1e308, -1e308, 1e308})));
  EXPECT_NO_THROW(lorenzo::read_quantization(lorenzo::write_quantization(
      lorenzo::resolve_quantization({ErrorMode::rel, 0.9}, DType::f64, -1e308, 1e308))));
  for (const Quantization& bad : {Quantization{0.5, inf, -3.0, 4.0}, Quantization{0.5, nan, -3.0, 4.0},
                                  Quantization{0.5, 0.0, -3.0, 4.0}, Quantization{-1.0, 1.0, -3.0, 4.0},
                                  Quantization{0.5, 1.0, -inf, 4.0}, Quantization{0.5, 1.0, -3.0, nan},
                                  Quantization{0.5, 1.0, 4.0, -3.0}}) {
    try {
      lorenzo::read_quantization(lorenzo::write_quantization(bad));
      ADD_FAILURE() << "accepted step " << bad.step << ", range [" << bad.min << ", " << bad.max << "]";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::corrupt_data) << e.what();
    }
  }
}

TEST(Quantizer, NanInfAndHugeValuesAreExact) {
  int32_t q = 99;
  EXPECT_TRUE(lorenzo::prequantize(std::numeric_limits<float>::quiet_NaN(), 10.0, 0.1, 0.05, -1.0, &q));
  EXPECT_EQ(q, 0);
  EXPECT_TRUE(lorenzo::prequantize(std::numeric_limits<double>::infinity(), 10.0, 0.1, 0.05, -1.0, &q));
  EXPECT_TRUE(lorenzo::prequantize(1e30f, 10.0, 0.1, 0.05, -1.0, &q));
  EXPECT_FALSE(lorenzo::prequantize(1.0f, 10.0, 0.1, 0.05, -1.0, &q));
  EXPECT_EQ(q, 10);
}

TEST(Quantizer, RoundingFailureIsCaughtWhereTheStepIsTooCoarseForTheType) {
  // Near 1000, f32 spacing is 6.1e-5: with a bound of 1e-4 and the full step 2e-4, the
  // rounding of q * step to f32 can land one spacing further than the bound allows.
  int rejected = 0;
  for (int i = 0; i < 1000; ++i) {
    const float v = 1000.0f + float(i) * 0.0173f;
    int32_t q;
    const bool exact = lorenzo::prequantize(v, 1.0 / 2e-4, 2e-4, 1e-4, -1.0, &q);
    if (!exact) {
      EXPECT_LE(std::fabs(double(v) - double(lorenzo::reconstruct<float>(q, 2e-4))), 1e-4);
    }
    rejected += exact;
  }
  EXPECT_GT(rejected, 0);
}

// For each bound and magnitude the shortcut applies to (a threshold >= 0), random f32 values
// in [-magnitude, magnitude]: the shortcut and the full check agree on every one, and a kept
// point's reconstruction is within the bound. Returns the settings checked.
int expect_shortcut_agrees(std::initializer_list<double> bounds, std::initializer_list<double> magnitudes, int values,
                           uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int checked_settings = 0;
  for (double eb : bounds)
    for (double magnitude : magnitudes) {
      const double step = 2 * eb * (1 - 1e-7);
      const double threshold = lorenzo::acceptance_threshold(true, eb, -magnitude, magnitude);
      if (threshold < 0) continue;  // f32 spacing too coarse for a shortcut: always checked fully
      ++checked_settings;
      for (int i = 0; i < values; ++i) {
        const float v = float((unit(rng) * 2 - 1) * magnitude);
        int32_t q_fast, q_full;
        const bool fast = lorenzo::prequantize(v, 1.0 / step, step, eb, threshold, &q_fast);
        const bool full = lorenzo::prequantize(v, 1.0 / step, step, eb, -1.0, &q_full);
        EXPECT_EQ(fast, full) << v << " eb " << eb;
        EXPECT_EQ(q_fast, q_full);
        if (fast != full || q_fast != q_full) return checked_settings;
        if (!fast) {
          EXPECT_LE(std::fabs(double(v) - double(lorenzo::reconstruct<float>(q_fast, step))), eb);
        }
      }
    }
  return checked_settings;
}

TEST(Quantizer, AcceptanceShortcutNeverChangesTheAnswer) {
  // Adversarial f32 values near binade edges and at the bound's edge.
  EXPECT_GE(expect_shortcut_agrees({1e-4, 3e-3, 0.5}, {2.0, 1024.0}, 100000, 41), 4);
  EXPECT_LT(lorenzo::acceptance_threshold(true, 1e-4, -1024.0, 1024.0), 0.0);
  EXPECT_EQ(lorenzo::acceptance_threshold(false, 1e-4, -1024.0, 1024.0), 1e-4);
}

TEST(Quantizer, AcceptanceShortcutNeverChangesTheAnswerBelowFltMin) {
  // A field of f32 subnormals and a bound of a few of their spacings (2^-149): the rounding of
  // q * step to f32 is half that spacing, not half an ulp of the field's own binade.
  const double spacing = double(std::numeric_limits<float>::denorm_min());
  EXPECT_GE(expect_shortcut_agrees({7.3 * spacing, 10.8 * spacing, 100.5 * spacing}, {3e-39, 1e-40}, 20000, 43), 4);
}

TEST(Lorenzo, TileShapesMatchTheFormat) {
  EXPECT_EQ(lorenzo::tile_shape(1).volume(), 2048u);
  EXPECT_EQ(lorenzo::tile_shape(2).volume(), 1024u);
  EXPECT_EQ(lorenzo::tile_shape(3).volume(), 2048u);
}

TEST(Lorenzo, LinearRampCodesAreZeroInsideTiles3D) {
  // q = x + y + z is annihilated by the 3D Lorenzo operator away from the tile's low faces.
  const Dims d = Dims::make({32, 8, 8});
  std::vector<double> v(d.count());
  for (uint64_t i = 0; i < v.size(); ++i) v[i] = double(i % 32 + (i / 32) % 8 + i / 256);
  std::vector<uint16_t> codes(d.count());
  Quantization quant;
  quant.error_bound = 0.25;
  quant.step = 0.5;
  uint64_t coded = 0;
  lorenzo::encode_cpu(v.data(), DType::f64, d, quant, codes.data(), &coded);
  for (uint64_t z = 1; z < 8; ++z)
    for (uint64_t y = 1; y < 8; ++y)
      for (uint64_t x = 1; x < 32; ++x) EXPECT_EQ(codes[x + 32 * (y + 8 * z)], 0) << x << "," << y << "," << z;
}

TEST(Lorenzo, LargeJumpsBecomeEscapesAndRoundTrip) {
  const Dims d = Dims::make({5000});
  std::vector<float> v(d.count());
  for (uint64_t i = 0; i < v.size(); ++i) v[i] = (i % 2) ? 1e4f : -1e4f;
  Quantization quant;
  quant.error_bound = 0.01;
  quant.step = 0.02;
  std::vector<uint16_t> codes(d.count());
  uint64_t coded = 0;
  const Buffer outliers = lorenzo::encode_cpu(v.data(), DType::f32, d, quant, codes.data(), &coded);
  const lorenzo::OutlierView view = lorenzo::parse_outliers(outliers.data(), outliers.size(), DType::f32);
  EXPECT_GT(view.counts.escapes, 4000u);
  EXPECT_EQ(view.counts.exacts, 0u);
  std::vector<float> back(d.count());
  lorenzo::decode_cpu(codes.data(), coded, outliers.data(), outliers.size(), DType::f32, d, quant, back.data());
  EXPECT_EQ(testing::count_violations(v.data(), back.data(), v.size(), quant.error_bound), 0u);
}

// An outlier stream of its two counts alone claiming outliers: every backend refuses it (the
// GPU decoder once took such a stream for no outliers without reading it).
TEST(Lorenzo, CountsThatTheirStreamCannotHoldAreCorruptData) {
  const Dims d = Dims::make({40, 30});
  std::vector<float> v(d.count());
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i % 40) * 0.0625f + float(i / 40) * 0.03125f;  // exact steps
  const auto stage = make_stage("lorenzo", nlohmann::json::object());
  StageContext ctx;
  ctx.dtype = DType::f32;
  ctx.field_dims = ctx.dims = d;
  FieldSummary summary;
  summary.bound = {ErrorMode::abs, 1e-2};
  finite_range(v.data(), DType::f32, v.size(), &summary.min, &summary.max);
  const std::vector<uint8_t> header = stage->make_header(ctx, summary);
  ctx.header = &header;
  const std::vector<Buffer> outputs = stage->encode(ctx, {Buffer::view(v.data(), 4 * v.size(), Location::host)});
  ASSERT_EQ(outputs.at(1).size(), 16u);  // no outlier: the counts alone
  for (const uint64_t claimed : {0u, 1u}) {  // three escapes, then three exact values
    std::vector<uint8_t> damaged = testing::bytes_of(outputs[1]);
    const uint64_t three = 3;
    std::memcpy(damaged.data() + 8 * claimed, &three, 8);
    for (Device device : {Device::cpu, Device::cuda}) {
      if (device == Device::cuda && !cuda_available()) continue;
      StageContext on = ctx;
      on.device = device;
      const Location where = device == Device::cuda ? Location::device : Location::host;
      std::vector<Buffer> outs{outputs[0], testing::host_buffer(damaged)};
      for (Buffer& b : outs) b = where == Location::device ? to_device(b, nullptr) : b;
      std::vector<Buffer> inputs{where == Location::device ? Buffer::device(4 * v.size(), nullptr) : Buffer::host(4 * v.size())};
      testing::expect_error([&] { stage->decode(on, outs, inputs); }, ErrorCode::corrupt_data, "outlier");
    }
  }
}

TEST(Lorenzo, UnsortedOutlierKeysAreCorruptData) {
  const Dims d = Dims::make({100});
  std::vector<float> v(100, 0.0f);
  v[10] = NAN;
  v[20] = NAN;
  Quantization quant;
  quant.error_bound = 0.1;
  quant.step = 0.2;
  std::vector<uint16_t> codes(100);
  uint64_t coded = 0;
  Buffer outliers = lorenzo::encode_cpu(v.data(), DType::f32, d, quant, codes.data(), &coded);
  uint64_t* keys = reinterpret_cast<uint64_t*>(outliers.data() + 16);
  std::swap(keys[0], keys[1]);
  std::vector<float> back(100);
  EXPECT_THROW(lorenzo::decode_cpu(codes.data(), coded, outliers.data(), outliers.size(), DType::f32, d, quant, back.data()),
               Error);
  std::swap(keys[0], keys[1]);
  keys[1] = 100;  // past the field's end
  EXPECT_THROW(lorenzo::decode_cpu(codes.data(), coded, outliers.data(), outliers.size(), DType::f32, d, quant, back.data()),
               Error);
}

TEST(Bitshuffle, RoundTripsAnyByteLength) {
  std::mt19937 rng(5);
  for (uint64_t size : {0ull, 1ull, 3ull, 4ull, 127ull, 128ull, 129ull, 1000ull, 4099ull}) {
    std::vector<uint8_t> in(size);
    for (auto& b : in) b = uint8_t(rng());
    std::vector<uint32_t> shuffled(bitshuffle::shuffled_size(size) / 4);
    bitshuffle::encode_cpu(in.data(), size, shuffled.data());
    std::vector<uint8_t> back(size);
    bitshuffle::decode_cpu(shuffled.data(), back.data(), size);
    EXPECT_EQ(back, in) << size;
  }
}

// The format's definition, a bit at a time: output word p of a tile holds bit plane_at(p) of
// the tile's 32 input words (zero-padded), bit i from word i.
TEST(Bitshuffle, EachOutputWordIsOnePlaneOfTheTile) {
  std::mt19937 rng(11);
  for (uint64_t size : {1ull, 5ull, 128ull, 200ull, 4096ull, 4100ull}) {
    for (unsigned shift : {0u, 13u, 24u}) {  // dense bits, and sparse high planes
      std::vector<uint8_t> in(size);
      for (auto& b : in) b = uint8_t(rng() >> shift);
      std::vector<uint32_t> out(bitshuffle::shuffled_size(size) / 4);
      bitshuffle::encode_cpu(in.data(), size, out.data());
      for (uint64_t t = 0; t < out.size() / 32; ++t) {
        uint32_t words[32] = {};
        for (uint64_t at = 128 * t; at < std::min(size, 128 * (t + 1)); ++at)
          words[(at % 128) / 4] |= uint32_t(in[at]) << (8 * (at % 4));
        for (uint32_t p = 0; p < 32; ++p) {
          uint32_t plane = 0;
          for (uint32_t i = 0; i < 32; ++i) plane |= (words[i] >> bitshuffle::plane_at(p) & 1u) << i;
          ASSERT_EQ(out[32 * t + p], plane) << "size " << size << ", tile " << t << ", word " << p;
        }
      }
    }
  }
}

TEST(Bitshuffle, SmallCodesLeaveTheTileTailZero) {
  // 64 codes of magnitude < 4 with signs: only the 2 sign planes and planes 0-1 of both
  // halves are non-zero, and the plane order puts them in the first 6 words.
  std::vector<uint16_t> codes(64);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = uint16_t(((i / 2) % 4) | ((i % 3 == 0) ? 0x8000 : 0));
  std::vector<uint32_t> out(32);
  bitshuffle::encode_cpu(reinterpret_cast<const uint8_t*>(codes.data()), 128, out.data());
  for (int p = 0; p < 6; ++p) EXPECT_NE(out[p], 0u) << p;
  for (int p = 6; p < 32; ++p) EXPECT_EQ(out[p], 0u) << p;
}

TEST(Bitshuffle, PlaneOrderIsAPermutation) {
  uint32_t seen = 0;
  for (uint32_t p = 0; p < 32; ++p) seen |= 1u << bitshuffle::plane_at(p);
  EXPECT_EQ(seen, 0xffffffffu);
}

TEST(ZeroBlock, AllZeroGroupCostsOneBit) {
  const uint64_t words = 32 * 32 * 64;  // 64 full flag words of groups
  std::vector<uint32_t> in(words, 0);
  std::vector<uint32_t> out(zeroblock::Layout(words * 4, 1).max_encoded_bytes() / 4);
  const uint64_t size = zeroblock::encode_cpu(reinterpret_cast<uint8_t*>(in.data()), words * 4, 1, out.data());
  EXPECT_EQ(size, 4 * words / (32 * 32));  // one bit per group of 32 words
}

TEST(ZeroBlock, RoundTripsSparseDataForEveryBlockSize) {
  std::mt19937 rng(11);
  for (uint32_t bw : {1u, 2u, 4u, 8u})
    for (uint64_t size : {1ull, 5ull, 4096ull, 10003ull}) {
      std::vector<uint8_t> in(size, 0);
      for (auto& b : in)
        if (rng() % 50 == 0) b = uint8_t(rng());
      const zeroblock::Layout L(size, bw);
      std::vector<uint32_t> out(L.max_encoded_bytes() / 4 + 1);
      const uint64_t encoded = zeroblock::encode_cpu(in.data(), size, bw, out.data());
      EXPECT_LE(encoded, L.max_encoded_bytes());
      std::vector<uint8_t> back(size, 0xAA);
      zeroblock::decode_cpu(out.data(), encoded, bw, back.data(), size);
      EXPECT_EQ(back, in) << "bw " << bw << " size " << size;
    }
}

TEST(ZeroBlock, InconsistentFlagsAreCorruptData) {
  std::vector<uint8_t> in(4096, 0);
  in[100] = 1;
  std::vector<uint32_t> out(zeroblock::Layout(4096, 1).max_encoded_bytes() / 4);
  const uint64_t encoded = zeroblock::encode_cpu(in.data(), 4096, 1, out.data());
  std::vector<uint8_t> back(4096);
  EXPECT_THROW(zeroblock::decode_cpu(out.data(), encoded - 4, 1, back.data(), 4096), Error);  // a block missing
  out[0] |= 1u << 7;  // flags a group whose block flags are not there
  EXPECT_THROW(zeroblock::decode_cpu(out.data(), encoded, 1, back.data(), 4096), Error);
}

TEST(ZeroBlock, BlockWordsOutOfRangeIsAConfigError) {
  EXPECT_THROW(make_stage("zero-block", {{"block_words", 3}}), Error);
  EXPECT_THROW(make_stage("zero-block", {{"block_words", 0}}), Error);
  EXPECT_THROW(make_stage("zero-block", {{"block_words", "4"}}), Error);
  EXPECT_THROW(make_stage("zero-block", {{"blok_words", 4}}), Error);
  EXPECT_NO_THROW(make_stage("zero-block", {{"block_words", 8}}));
}

}  // namespace
}  // namespace fzg
