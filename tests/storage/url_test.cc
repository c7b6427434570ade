// Remote locations, object URLs and Range / Content-Range values (storage/url.h).
#include "storage/url.h"

#include <gtest/gtest.h>

#include "assert_ok.h"

namespace sluice::storage {
namespace {

TEST(UrlTest, HttpLocationKeepsHostPortAndPrefix) {
  RemoteLocation loc;
  ASSERT_OK(ParseRemoteLocation("http://127.0.0.1:8080/data/set/", &loc));
  EXPECT_EQ(loc.kind, RemoteLocation::Kind::kHttp);
  EXPECT_EQ(loc.location, "http://127.0.0.1:8080/data/set");
  EXPECT_EQ(ObjectUrl(loc, "", "", "manifest.json"),
            "http://127.0.0.1:8080/data/set/manifest.json");
}

TEST(UrlTest, S3WithoutEndpointIsVirtualHostedAtAws) {
  RemoteLocation loc;
  ASSERT_OK(ParseRemoteLocation("s3://my-bucket/corpora/en/", &loc));
  EXPECT_EQ(loc.kind, RemoteLocation::Kind::kS3);
  EXPECT_EQ(loc.bucket, "my-bucket");
  EXPECT_EQ(loc.prefix, "corpora/en");
  EXPECT_EQ(loc.location, "s3://my-bucket/corpora/en");
  EXPECT_EQ(ObjectUrl(loc, "", "eu-west-1", "shard-00001.sluice"),
            "https://my-bucket.s3.eu-west-1.amazonaws.com/corpora/en/shard-00001.sluice");
}

TEST(UrlTest, S3WithEndpointIsPathStyle) {
  RemoteLocation loc;
  ASSERT_OK(ParseRemoteLocation("s3://b1", &loc));
  EXPECT_EQ(loc.prefix, "");
  EXPECT_EQ(ObjectUrl(loc, "http://127.0.0.1:9000/", "us-east-1", "manifest.json"),
            "http://127.0.0.1:9000/b1/manifest.json");
}

TEST(UrlTest, NamesArePercentEncoded) {
  RemoteLocation loc;
  ASSERT_OK(ParseRemoteLocation("s3://b/a prefix", &loc));
  EXPECT_EQ(ObjectUrl(loc, "http://h", "r", "x+y.json"), "http://h/b/a%20prefix/x%2By.json");
  EXPECT_EQ(EncodePath("a/b~c_d-e.f"), "a/b~c_d-e.f");
}

TEST(UrlTest, RejectsWhatIsNotARemoteDataset) {
  RemoteLocation loc;
  for (const char* bad : {"s3://", "s3:///x", "http://", "http:///path", "ftp://h/x",
                          "http://h/x?y=1", "/local/dir"}) {
    Status s = ParseRemoteLocation(bad, &loc);
    EXPECT_TRUE(s.IsInvalidArgument()) << bad;
    EXPECT_NE(s.message().find(bad), std::string::npos) << s.ToString();
  }
}

TEST(UrlTest, RedactUrlHidesThePasswordOfEveryUrlInTheText) {
  EXPECT_EQ(RedactUrl("http://user:hunter2@host:8080/data/set"),
            "http://user:***@host:8080/data/set");
  EXPECT_EQ(RedactUrl("https://u:p@h"), "https://u:***@h");
  // A password with an unencoded '@' or ':' is hidden whole: the last '@' ends the user info.
  EXPECT_EQ(RedactUrl("http://u:p@ss:w@h/x"), "http://u:***@h/x");
  // User info without a password is a token ("https://TOKEN@host").
  EXPECT_EQ(RedactUrl("https://ghp_token@h/x"), "https://***@h/x");
  EXPECT_EQ(RedactUrl("http://:secret@h/x?y#z"), "http://:***@h/x?y#z");
  // Messages: every URL in them, wherever it stands.
  EXPECT_EQ(RedactUrl("GET http://a:b@h/x/manifest.json (bytes=0-9): HTTP 404; mixture: "
                      "http://c:d@h2:2/y and /local disagree"),
            "GET http://a:***@h/x/manifest.json (bytes=0-9): HTTP 404; mixture: "
            "http://c:***@h2:2/y and /local disagree");
  EXPECT_EQ(RedactUrl("{\"dir\":\"http://a:b@h\"}"), "{\"dir\":\"http://a:***@h\"}");
  const std::string once = RedactUrl("http://u:p@h/x http://t@h");
  EXPECT_EQ(RedactUrl(once), once);
}

TEST(UrlTest, RedactUrlLeavesWhatHoldsNoCredentials) {
  for (const char* same :
       {"", "/data/set", "http://127.0.0.1:8080/data/set", "s3://bucket/prefix",
        "http://h/path/with@sign", "https://h/x?user=a@b", "no url: here", "://x@y", "a@b:c"})
    EXPECT_EQ(RedactUrl(same), same);
}

TEST(UrlTest, ParsedLocationShowsNoPasswordButItsRequestsCarryIt) {
  RemoteLocation loc;
  ASSERT_OK(ParseRemoteLocation("http://reader:s3cr3t@127.0.0.1:8080/data/", &loc));
  EXPECT_EQ(loc.location, "http://reader:***@127.0.0.1:8080/data");
  EXPECT_EQ(ObjectUrl(loc, "", "", "manifest.json"),
            "http://reader:s3cr3t@127.0.0.1:8080/data/manifest.json");
  const Status bad = ParseRemoteLocation("http://reader:s3cr3t@127.0.0.1/x?y=1", &loc);
  EXPECT_TRUE(bad.IsInvalidArgument()) << bad.ToString();
  EXPECT_EQ(bad.message().find("s3cr3t"), std::string::npos) << bad.ToString();
  EXPECT_NE(bad.message().find("http://reader:***@127.0.0.1/x?y=1"), std::string::npos)
      << bad.ToString();
}

TEST(UrlTest, RangeHeaderIsInclusive) {
  EXPECT_EQ(RangeHeaderValue(0, 1), "bytes=0-0");
  EXPECT_EQ(RangeHeaderValue(4096, 100), "bytes=4096-4195");
  EXPECT_EQ(RangeHeaderValue(5000000000ull, 2), "bytes=5000000000-5000000001");
}

TEST(UrlTest, ContentRangeParses) {
  uint64_t a = 0, b = 0;
  ASSERT_TRUE(ParseContentRange("bytes 4096-4195/100000\r\n", &a, &b));
  EXPECT_EQ(a, 4096u);
  EXPECT_EQ(b, 4195u);
  EXPECT_TRUE(ParseContentRange("bytes 0-9/*", &a, &b));
  EXPECT_FALSE(ParseContentRange("bytes */100", &a, &b));
  EXPECT_FALSE(ParseContentRange("bytes 9-0/100", &a, &b));
  EXPECT_FALSE(ParseContentRange("items 0-9/100", &a, &b));
  EXPECT_FALSE(ParseContentRange("", &a, &b));
}

}  // namespace
}  // namespace sluice::storage
