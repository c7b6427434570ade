// The encode/decode pair of each fixed-size shard structure (shards/format.h): what one encodes
// the other decodes to the same values, and a short or garbled buffer is a Corruption (or
// Unsupported) that names the structure and what is wrong with it.
#include "shards/format.h"

#include <gtest/gtest.h>

#include <string>

#include "assert_ok.h"
#include "shards/checksum.h"

namespace sluice::shards {
namespace {

// Encodes `in`, checks the size, decodes the bytes into `out` and checks that all were used.
template <class T>
void RoundTrip(const T& in, size_t size, T* out) {
  std::string bytes = "prefix";  // EncodeTo appends
  in.EncodeTo(&bytes);
  ASSERT_EQ(bytes.size(), 6 + size);
  bytes += "next";  // DecodeFrom takes only its own bytes
  std::string_view view(bytes);
  view.remove_prefix(6);
  ASSERT_OK(out->DecodeFrom(&view));
  EXPECT_EQ(view, "next");
}

template <class T>
std::string Encoded(const T& v) {
  std::string bytes;
  v.EncodeTo(&bytes);
  return bytes;
}

template <class T>
Status Decode(const std::string& bytes) {
  T decoded;
  std::string_view view(bytes);
  return decoded.DecodeFrom(&view);
}

// `s` is a Corruption whose message holds `what`.
::testing::AssertionResult CorruptionSaying(const Status& s, const std::string& what) {
  if (!s.IsCorruption())
    return ::testing::AssertionFailure() << "not a Corruption: " << s.ToString();
  if (s.message().find(what) == std::string::npos) {
    return ::testing::AssertionFailure() << "'" << what << "' not in: " << s.ToString();
  }
  return ::testing::AssertionSuccess();
}

TEST(ShardHeader, RoundTrips) {
  ShardHeader out;
  out.version = 0;
  RoundTrip(ShardHeader(), kHeaderSize, &out);
  EXPECT_EQ(out.version, kFormatVersion);
}

TEST(ShardHeader, ShortOrGarbledIsCorruption) {
  const std::string good = Encoded(ShardHeader());
  EXPECT_TRUE(
      CorruptionSaying(Decode<ShardHeader>(good.substr(0, 15)), "header: 15 bytes, it takes 16"));
  std::string bad = good;
  bad[0] ^= 1;
  EXPECT_TRUE(CorruptionSaying(Decode<ShardHeader>(bad), "header: bad magic: not a sluice shard"));
  bad = good;
  bad[13] = 1;
  EXPECT_TRUE(CorruptionSaying(Decode<ShardHeader>(bad), "header: reserved bytes 12..15"));
}

TEST(ShardHeader, OtherVersionIsUnsupportedWithAHint) {
  ShardHeader v2;
  v2.version = 2;
  const Status s = Decode<ShardHeader>(Encoded(v2));
  EXPECT_TRUE(s.IsUnsupported()) << s.ToString();
  EXPECT_NE(s.message().find("version 2"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("HINT"), std::string::npos) << s.ToString();
}

TEST(Footer, RoundTrips) {
  const Footer in{0x0102030405060708ull, 0x1112131415161718ull, 0x2122232425262728ull};
  Footer out;
  RoundTrip(in, kFooterSize, &out);
  EXPECT_EQ(out.index_offset, in.index_offset);
  EXPECT_EQ(out.index_size, in.index_size);
  EXPECT_EQ(out.index_xxh3, in.index_xxh3);
  EXPECT_EQ(out.version, kFormatVersion);
}

TEST(Footer, ShortOrGarbledIsCorruption) {
  const std::string good = Encoded(Footer{100, 200, 300});
  EXPECT_TRUE(
      CorruptionSaying(Decode<Footer>(good.substr(0, 47)), "footer: 47 bytes, it takes 48"));
  EXPECT_TRUE(CorruptionSaying(Decode<Footer>(""), "footer: 0 bytes"));
  std::string bad = good;
  bad[47] ^= 0x80;
  EXPECT_TRUE(CorruptionSaying(Decode<Footer>(bad), "no footer magic"));
  for (size_t byte : {0u, 9u, 17u, 24u, 28u, 32u, 39u}) {
    bad = good;
    bad[byte] ^= 1;
    EXPECT_TRUE(CorruptionSaying(Decode<Footer>(bad), "footer checksum mismatch")) << byte;
  }
}

TEST(Footer, ReservedFlagsAndOtherVersionsAreRefused) {
  // Non-zero flags under a checksum that matches them (the spec: XXH3-64 of bytes 0..31):
  // EncodeTo cannot write such a footer, so the test seals it by hand.
  std::string flags = Encoded(Footer{100, 200, 300});
  flags[24] = 1;
  const uint64_t sum = Checksum(flags.data(), 32);
  flags.replace(32, 8, reinterpret_cast<const char*>(&sum), 8);
  EXPECT_TRUE(CorruptionSaying(Decode<Footer>(flags), "footer: reserved flags are 0x1, not zero"));

  const Status s = Decode<Footer>(Encoded(Footer{100, 200, 300, 2}));
  EXPECT_TRUE(s.IsUnsupported()) << s.ToString();
  EXPECT_NE(s.message().find("footer says format version 2"), std::string::npos) << s.ToString();
}

TEST(IndexHeader, RoundTrips) {
  const IndexHeader in{7, 0x0102030405060708ull, 0x1112131415161718ull, 0x2122232425262728ull};
  IndexHeader out;
  RoundTrip(in, kIndexHeaderSize, &out);
  EXPECT_EQ(out.num_blocks, in.num_blocks);
  EXPECT_EQ(out.num_records, in.num_records);
  EXPECT_EQ(out.key_bytes, in.key_bytes);
  EXPECT_EQ(out.aux_bytes, in.aux_bytes);
}

TEST(IndexHeader, ShortOrGarbledIsCorruption) {
  const std::string good = Encoded(IndexHeader{1, 2, 3});
  EXPECT_TRUE(CorruptionSaying(Decode<IndexHeader>(good.substr(0, 31)),
                               "index header: 31 bytes, it takes 32"));
  std::string bad = good;
  bad[3] ^= 1;
  EXPECT_TRUE(CorruptionSaying(Decode<IndexHeader>(bad), "bad index magic"));
}

TEST(BlockInfo, RoundTrips) {
  const BlockInfo in{0x0102030405060708ull, 0x11121314u, 0x00222324u, 0x3132333435363738ull};
  BlockInfo out;
  RoundTrip(in, kBlockEntrySize, &out);
  EXPECT_EQ(out.offset, in.offset);
  EXPECT_EQ(out.compressed_size, in.compressed_size);
  EXPECT_EQ(out.raw_size, in.raw_size);
  EXPECT_EQ(out.checksum, in.checksum);
}

TEST(BlockInfo, ShortOrOutOfRangeIsCorruption) {
  EXPECT_TRUE(CorruptionSaying(Decode<BlockInfo>(Encoded(BlockInfo{16, 5, 9, 0}).substr(0, 23)),
                               "block entry: 23 bytes, it takes 24"));
  EXPECT_TRUE(CorruptionSaying(Decode<BlockInfo>(Encoded(BlockInfo{16, 0, 9, 0})),
                               "block entry: compressed_size is 0"));
  EXPECT_TRUE(CorruptionSaying(Decode<BlockInfo>(Encoded(BlockInfo{16, 5, 0, 0})),
                               "block entry: raw_size 0 is outside 1..1073741824"));
  EXPECT_TRUE(
      CorruptionSaying(Decode<BlockInfo>(Encoded(BlockInfo{16, 5, kMaxBlockRawSize + 1, 0})),
                       "block entry: raw_size 1073741825"));
  EXPECT_OK(Decode<BlockInfo>(Encoded(BlockInfo{16, 5, kMaxBlockRawSize, 0})));
}

TEST(RecordEntry, RoundTrips) {
  const RecordEntry in{1, 2, 3, 4, kMaxKeySize, 6, 0x0102030405060708ull};
  RecordEntry out;
  RoundTrip(in, kRecordEntrySize, &out);
  EXPECT_EQ(out.block, in.block);
  EXPECT_EQ(out.offset, in.offset);
  EXPECT_EQ(out.size, in.size);
  EXPECT_EQ(out.key_offset, in.key_offset);
  EXPECT_EQ(out.key_size, in.key_size);
  EXPECT_EQ(out.tokens, in.tokens);
  EXPECT_EQ(out.duration, in.duration);
}

TEST(RecordEntry, ShortOrOutOfRangeIsCorruption) {
  EXPECT_TRUE(CorruptionSaying(Decode<RecordEntry>(Encoded(RecordEntry{}).substr(0, 31)),
                               "record entry: 31 bytes, it takes 32"));
  EXPECT_TRUE(
      CorruptionSaying(Decode<RecordEntry>(Encoded(RecordEntry{0, 0, 1, 0, kMaxKeySize + 1})),
                       "record entry: key_size 4097 exceeds 4096"));
}

}  // namespace
}  // namespace sluice::shards
