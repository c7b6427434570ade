// base/status.h: Prefixed adds where an error happened and keeps what kind of error it is.
#include "base/status.h"
#include "assert_ok.h"

#include <gtest/gtest.h>

#include <vector>

namespace sluice {
namespace {

TEST(Prefixed, KeepsEveryCode) {
  const std::vector<Status> all = {
      Status::NotFound("m"),   Status::Corruption("m"),  Status::InvalidArgument("m"),
      Status::IOError("m"),    Status::Unsupported("m"),
  };
  for (const Status& s : all) {
    const Status p = Prefixed(s, "shard-00001.sluice: record 7");
    EXPECT_EQ(p.code(), s.code()) << p.ToString();
    EXPECT_FALSE(p.ok());
  }
}

TEST(Prefixed, PutsTheContextBeforeTheMessage) {
  const Status p = Prefixed(Status::Corruption("checksum mismatch"), "shard-00003.sluice: block 7");
  EXPECT_EQ(p.message(), "shard-00003.sluice: block 7: checksum mismatch");
  EXPECT_EQ(p.ToString(), "Corruption: shard-00003.sluice: block 7: checksum mismatch");
}

TEST(Prefixed, NestsOutermostFirst) {
  const Status inner = Prefixed(Status::NotFound("no such file"), "tokenizer.model");
  const Status outer = Prefixed(inner, "manifest.json");
  EXPECT_TRUE(outer.IsNotFound());
  EXPECT_EQ(outer.message(), "manifest.json: tokenizer.model: no such file");
}

TEST(Prefixed, OkStaysOkWithoutAMessage) {
  const Status p = Prefixed(Status::OK(), "anything");
  EXPECT_OK(p);
  EXPECT_EQ(p.message(), "");
}

}  // namespace
}  // namespace sluice
