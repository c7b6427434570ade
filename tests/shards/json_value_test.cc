#include "shards/json_value.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <utility>

#include "shards/manifest.h"

namespace sluice::shards {
namespace {

TEST(JsonValueTest, DefaultIsNullAndWritingMakesAValue) {
  JsonValue v;
  EXPECT_TRUE(v->is_null());
  (*v)["kind"] = "fbank";
  EXPECT_EQ((*v)["kind"], "fbank");
}

TEST(JsonValueTest, CopiesAreDeep) {
  JsonValue a(nlohmann::json{{"dim", 80}});
  JsonValue b = a;
  (*b)["dim"] = 40;
  EXPECT_EQ((*a)["dim"], 80);
  a = b;
  (*b)["dim"] = 1;
  EXPECT_EQ((*a)["dim"], 40);
  const JsonValue null;
  a = null;  // a copy of a null value is null, and null stays unshared
  EXPECT_TRUE(a->is_null());
  (*a)["x"] = 1;
  EXPECT_TRUE(null->is_null());
}

TEST(JsonValueTest, MovedFromIsNull) {
  JsonValue a(nlohmann::json{{"type", "char"}});
  JsonValue b = std::move(a);
  EXPECT_EQ((*b)["type"], "char");
  EXPECT_TRUE(a->is_null());  // NOLINT(bugprone-use-after-move): the documented state
}

// The manifest's sub-documents survive a round trip through manifest.json unchanged.
TEST(JsonValueTest, ManifestSubDocumentsRoundTrip) {
  Manifest m;
  m.kind = "audio";
  m.sample_rate = 16000;
  m.codec = "pcm16";
  *m.features = {{"kind", "fbank"}, {"num_mel_bins", 80}};
  *m.source = {{"manifest", "in.jsonl"}};
  Manifest back;
  ASSERT_TRUE(ManifestFromJson(ManifestToJson(m), "manifest.json", &back).ok());
  EXPECT_EQ(*back.features, *m.features);
  EXPECT_TRUE(back.tokenizer->is_null());
  EXPECT_EQ(*back.source, *m.source);
}

}  // namespace
}  // namespace sluice::shards
