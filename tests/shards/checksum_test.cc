#include "shards/checksum.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace sluice::shards {
namespace {

TEST(Checksum, MatchesPublishedXxh3OfEmptyInput) {
  // XXH3_64bits("", 0) with seed 0, from the xxHash reference test vectors.
  EXPECT_EQ(Checksum("", 0), 0x2D06800538D394C2ull);
}

TEST(Checksum, StreamingEqualsOneShot) {
  const std::string data = testing::RandomBytes(7, 100000);
  StreamingChecksum s;
  for (size_t off = 0; off < data.size(); off += 777)
    s.Update(data.data() + off, std::min<size_t>(777, data.size() - off));
  EXPECT_EQ(s.Digest(), Checksum(data.data(), data.size()));
}

TEST(Checksum, HexIsSixteenLowercaseDigits) {
  EXPECT_EQ(ChecksumHex(0xABCull), "0000000000000abc");
}

}  // namespace
}  // namespace sluice::shards
