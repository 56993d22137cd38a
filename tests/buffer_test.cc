// Buffers made later (Buffer::deferred) and read-backs read later (QueuedReadBack).
#include <cstring>
#include <stdexcept>
#include <vector>

#include "runtime/buffer.hh"
#include "test_util.hh"

namespace fzg {
namespace {

Buffer bytes_of(std::vector<uint8_t> values) {
  Buffer b = Buffer::host(values.size());
  std::memcpy(b.data(), values.data(), values.size());
  return b;
}

TEST(DeferredBuffer, IsMadeOnceWhenFirstUsedForEveryCopy) {
  int made = 0;
  const Buffer deferred = Buffer::deferred([&made] {
    ++made;
    return bytes_of({1, 2, 3, 4, 5});
  });
  Buffer copy = deferred;
  EXPECT_EQ(made, 0);  // copying makes nothing
  EXPECT_EQ(copy.size(), 5u);
  EXPECT_EQ(made, 1);
  EXPECT_EQ(deferred.size(), 5u);  // another copy takes the same buffer
  EXPECT_EQ(deferred.data(), copy.data());
  EXPECT_EQ(made, 1);
  EXPECT_EQ(deferred.location(), Location::host);
  EXPECT_EQ(deferred.data()[4], 5);
}

TEST(DeferredBuffer, SlicesAndShrinksWhatItStandsFor) {
  const Buffer deferred = Buffer::deferred([] { return bytes_of({1, 2, 3, 4, 5}); });
  const Buffer middle = deferred.slice(1, 3);
  ASSERT_EQ(middle.size(), 3u);
  EXPECT_EQ(middle.data()[0], 2);
  Buffer shortened = Buffer::deferred([] { return bytes_of({7, 8, 9}); });
  shortened.shrink(2);
  EXPECT_EQ(shortened.size(), 2u);
  EXPECT_EQ(shortened.data()[1], 8);
}

TEST(DeferredBuffer, MakesADeferredResultToo) {
  const Buffer inner = Buffer::deferred([] { return bytes_of({4, 2}); });
  const Buffer outer = Buffer::deferred([inner] { return inner; });
  ASSERT_EQ(outer.size(), 2u);
  EXPECT_EQ(outer.data()[0], 4);
}

TEST(DeferredBuffer, StaysDeferredWhenMakingThrows) {
  int calls = 0;
  const Buffer deferred = Buffer::deferred([&calls] {
    if (++calls == 1) throw std::runtime_error("not yet");
    return bytes_of({6});
  });
  EXPECT_THROW(deferred.size(), std::runtime_error);
  EXPECT_EQ(deferred.size(), 1u);  // asked again, it is made
  EXPECT_EQ(calls, 2);
}

#ifdef FZG_HAVE_CUDA  // QueuedReadBack reads back in CUDA builds only
// The bytes read back are those the device held when the read-back was queued, even when work
// queued after it rewrites them before the host asks.
TEST(QueuedReadBack, ReadsTheBytesAsTheyWereWhenQueued) {
  FZG_REQUIRE_GPU();
  const Buffer device = to_device(bytes_of({10, 20, 30, 40}), nullptr);
  QueuedReadBack read(device.data(), 4, nullptr);
  const Buffer other = to_device(bytes_of({0, 0, 0, 0}), nullptr);
  copy_bytes_async(const_cast<uint8_t*>(device.data()), Location::device, other.data(), Location::device, 4, nullptr);
  const auto* bytes = static_cast<const uint8_t*>(read.wait());
  EXPECT_EQ(bytes[0], 10);
  EXPECT_EQ(bytes[3], 40);
  EXPECT_EQ(static_cast<const uint8_t*>(read.wait())[1], 20);  // waiting again reads the same
  synchronize(nullptr);
}

// One never waited for gives its memory back safely; the next read-backs work.
TEST(QueuedReadBack, CanBeDroppedUnread) {
  FZG_REQUIRE_GPU();
  const Buffer device = to_device(bytes_of({1, 2, 3}), nullptr);
  for (int i = 0; i < 4; ++i) QueuedReadBack dropped(device.data(), 3, nullptr);
  QueuedReadBack read(device.data(), 3, nullptr);
  EXPECT_EQ(static_cast<const uint8_t*>(read.wait())[2], 3);
  EXPECT_THROW(QueuedReadBack(device.data(), (size_t(64) << 10) + 1, nullptr), Error);
}
#endif

}  // namespace
}  // namespace fzg
