#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/checksum.hh"
#include "predictors/lorenzo/quantization.hh"
#include "test_util.hh"

namespace fzg {
namespace {

TEST(Dims, FastestFirstAndTrailingOnesDropped) {
  const Dims d = parse_dims("360x330x1");
  EXPECT_EQ(d.x, 360u);
  EXPECT_EQ(d.y, 330u);
  EXPECT_EQ(d.rank, 2);
  const Dims z = parse_dims("100x500x500", true);
  EXPECT_EQ(z.x, 500u);
  EXPECT_EQ(z.z, 100u);
  EXPECT_EQ(z.rank, 3);
}

TEST(Dims, MalformedTextIsAnInvalidArgument) {
  for (const char* bad : {"", "x", "10x", "10xx5", "0x5", "1x2x3x4", "a", "-5", "99999999999999999999"}) {
    try {
      parse_dims(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << bad;
    }
  }
}

// A slice is a window on its buffer's bytes that keeps the whole allocation alive.
TEST(Buffer, SliceSharesTheBytesAndOutlivesItsParent) {
  Buffer slice;
  {
    Buffer whole = Buffer::host(16);
    for (int i = 0; i < 16; ++i) whole.data()[i] = uint8_t(i);
    slice = whole.slice(4, 8);
    whole.data()[5] = 99;
  }
  ASSERT_EQ(slice.size(), 8u);
  EXPECT_EQ(slice.data()[0], 4);
  EXPECT_EQ(slice.data()[1], 99);
  EXPECT_EQ(slice.data()[7], 11);
  EXPECT_THROW(slice.slice(4, 5), Error);
  EXPECT_EQ(slice.slice(8, 0).size(), 0u);
}

// Large host buffers start on a 2 MiB boundary (so the kernel can back them with huge pages)
// and are whole from their first byte to their last.
TEST(Buffer, LargeHostBuffersAreHugePageAligned) {
  const size_t size = (size_t(16) << 20) + 3;
  Buffer b = Buffer::host(size);
  ASSERT_EQ(b.size(), size);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % (size_t(2) << 20), 0u);
  std::memset(b.data(), 0x5a, size);
  EXPECT_EQ(b.data()[0], 0x5a);
  EXPECT_EQ(b.data()[size - 1], 0x5a);
}

// Host copies split into pieces on the destination's 1 MiB boundaries: every byte lands,
// whatever the offsets of source and destination, and nothing past the range is touched.
TEST(Buffer, HostCopiesAtAnyOffsetCopyEveryByte) {
  const size_t size = (size_t(6) << 20) + 123;
  Buffer source = Buffer::host(size + 64), target = Buffer::host(size + 8192);
  for (size_t i = 0; i < source.size(); ++i) source.data()[i] = uint8_t(i * 131 + 7);
  for (const size_t to : {size_t(0), size_t(1), size_t(4095), size_t(33)})
    for (const size_t from : {size_t(0), size_t(5)})
      for (const size_t bytes : {size_t(0), size_t(1), size_t(1) << 20, size - 40}) {
        std::memset(target.data(), 0xee, target.size());
        copy_bytes(target.data() + to, Location::host, source.data() + from, Location::host, bytes, nullptr);
        EXPECT_EQ(std::memcmp(target.data() + to, source.data() + from, bytes), 0) << to << " " << from << " " << bytes;
        const size_t after = to + bytes;
        EXPECT_EQ(std::count(target.data(), target.data() + to, uint8_t(0xee)), std::ptrdiff_t(to));
        EXPECT_EQ(std::count(target.data() + after, target.data() + target.size(), uint8_t(0xee)),
                  std::ptrdiff_t(target.size() - after));
      }
}

TEST(Quantization, RelIsBoundTimesRangeAndStepLeavesRoomForRounding) {
  const Quantization q = lorenzo::resolve_quantization({ErrorMode::rel, 1e-4}, DType::f32, 287.3, 289.1);
  EXPECT_DOUBLE_EQ(q.error_bound, 1e-4 * (289.1 - 287.3));
  // Half an f32 ulp at 289 is 2^-16: the step shrinks by exactly that on each side.
  EXPECT_DOUBLE_EQ(q.step, 2 * (q.error_bound - std::ldexp(1.0, -16)));
}

TEST(Quantization, PsnrBoundFollowsUniformErrorModel) {
  const Quantization q = lorenzo::resolve_quantization({ErrorMode::psnr, 60}, DType::f64, 0, 10);
  EXPECT_NEAR(q.error_bound, std::sqrt(3.0) * 10 * 1e-3, 1e-15);
}

TEST(Quantization, ZeroRangeAsksForExactValues) {
  const Quantization q = lorenzo::resolve_quantization({ErrorMode::rel, 1e-3}, DType::f32, 3.7, 3.7);
  EXPECT_EQ(q.error_bound, 0.0);
  EXPECT_GT(q.step, 0.0);
}

TEST(Quantization, NegativeOrNonFiniteBoundIsRejected) {
  EXPECT_THROW(lorenzo::resolve_quantization({ErrorMode::abs, -1}, DType::f32, 0, 1), Error);
  EXPECT_THROW(lorenzo::resolve_quantization({ErrorMode::abs, NAN}, DType::f32, 0, 1), Error);
}

TEST(FiniteRange, IgnoresNanAndInf) {
  std::vector<double> v = {NAN, 2.0, INFINITY, -3.0, -INFINITY};
  double lo, hi;
  finite_range(v.data(), DType::f64, v.size(), &lo, &hi);
  EXPECT_EQ(lo, -3.0);
  EXPECT_EQ(hi, 2.0);
}

TEST(Checksum, DetectsEverySingleBitFlipOfASmallBuffer) {
  std::vector<uint8_t> bytes(37);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 31);
  const uint64_t base = checksum_host(bytes.data(), bytes.size());
  for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    bytes[bit / 8] ^= uint8_t(1u << (bit % 8));
    EXPECT_NE(checksum_host(bytes.data(), bytes.size()), base) << bit;
    bytes[bit / 8] ^= uint8_t(1u << (bit % 8));
  }
  EXPECT_NE(checksum_host(bytes.data(), bytes.size() - 1), base);  // length matters
}

}  // namespace
}  // namespace fzg
