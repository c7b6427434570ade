// Credential, region and endpoint lookup as the AWS CLI does it (storage/s3_credentials.h).
#include "storage/s3_credentials.h"

#include <gtest/gtest.h>

#include <map>

#include "assert_ok.h"
#include "test_util.h"

namespace sluice::storage {
namespace {

struct FakeEnv {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* n) {
      auto it = vars.find(n);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

TEST(IniTest, ParsesSectionsCommentsAndSpaces) {
  const IniFile ini = ParseIni(
      "# comment\n[default]\naws_access_key_id = AKIA1\r\nAWS_Secret_Access_Key=s1\n"
      "; other\n\n[profile dev]\n  region =  eu-west-1  \nnot a pair\n");
  ASSERT_EQ(ini.count("default"), 1u);
  EXPECT_EQ(ini.at("default").at("aws_access_key_id"), "AKIA1");
  EXPECT_EQ(ini.at("default").at("aws_secret_access_key"), "s1");
  EXPECT_EQ(ini.at("profile dev").at("region"), "eu-west-1");
  EXPECT_EQ(ini.at("profile dev").size(), 1u);
}

class CredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.vars["HOME"] = home_.path();
    sluice::testing::WriteFile(home_.Join("credentials"),
                               "[default]\naws_access_key_id=AKDEFAULT\naws_secret_access_key=sd\n"
                               "[dev]\naws_access_key_id=AKDEV\naws_secret_access_key=sv\n"
                               "aws_session_token=tok\n");
    sluice::testing::WriteFile(home_.Join("config"),
                               "[default]\nregion=us-west-2\n[profile cfg]\nregion=ap-south-1\n"
                               "aws_access_key_id=AKCFG\naws_secret_access_key=sc\n");
    env_.vars["AWS_SHARED_CREDENTIALS_FILE"] = home_.Join("credentials");
    env_.vars["AWS_CONFIG_FILE"] = home_.Join("config");
  }
  sluice::testing::TempDir home_;
  FakeEnv env_;
};

TEST_F(CredentialsTest, EnvironmentWinsOverFiles) {
  env_.vars["AWS_ACCESS_KEY_ID"] = "AKENV";
  env_.vars["AWS_SECRET_ACCESS_KEY"] = "se";
  env_.vars["AWS_SESSION_TOKEN"] = "te";
  AwsCredentials c;
  ASSERT_OK(ResolveCredentials(env_.lookup(), &c));
  EXPECT_EQ(c.access_key_id, "AKENV");
  EXPECT_EQ(c.secret_access_key, "se");
  EXPECT_EQ(c.session_token, "te");
}

TEST_F(CredentialsTest, KeyWithoutSecretIsAnError) {
  env_.vars["AWS_ACCESS_KEY_ID"] = "AKENV";
  AwsCredentials c;
  EXPECT_TRUE(ResolveCredentials(env_.lookup(), &c).IsInvalidArgument());
}

TEST_F(CredentialsTest, DefaultProfileFromTheCredentialsFile) {
  AwsCredentials c;
  ASSERT_OK(ResolveCredentials(env_.lookup(), &c));
  EXPECT_EQ(c.access_key_id, "AKDEFAULT");
  EXPECT_EQ(c.secret_access_key, "sd");
  EXPECT_NE(c.source.find("[default]"), std::string::npos) << c.source;
}

TEST_F(CredentialsTest, ProfileWithSessionToken) {
  env_.vars["AWS_PROFILE"] = "dev";
  AwsCredentials c;
  ASSERT_OK(ResolveCredentials(env_.lookup(), &c));
  EXPECT_EQ(c.access_key_id, "AKDEV");
  EXPECT_EQ(c.session_token, "tok");
}

TEST_F(CredentialsTest, ProfileOnlyInTheConfigFile) {
  env_.vars["AWS_PROFILE"] = "cfg";
  AwsCredentials c;
  ASSERT_OK(ResolveCredentials(env_.lookup(), &c));
  EXPECT_EQ(c.access_key_id, "AKCFG");
  EXPECT_EQ(ResolveRegion("", env_.lookup()), "ap-south-1");
}

TEST_F(CredentialsTest, UnknownProfileIsAnErrorNamingTheFiles) {
  env_.vars["AWS_PROFILE"] = "nope";
  AwsCredentials c;
  Status s = ResolveCredentials(env_.lookup(), &c);
  ASSERT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("nope"), std::string::npos);
  EXPECT_NE(s.message().find(home_.Join("credentials")), std::string::npos) << s.ToString();
}

TEST(CredentialsNoFilesTest, NoCredentialsAnywhereIsAnonymous) {
  sluice::testing::TempDir home;
  FakeEnv env;
  env.vars["HOME"] = home.path();
  AwsCredentials c;
  ASSERT_OK(ResolveCredentials(env.lookup(), &c));
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(ResolveRegion("", env.lookup()), "us-east-1");
  EXPECT_EQ(ResolveEndpoint("", env.lookup()), "");
}

TEST_F(CredentialsTest, RegionAndEndpointOrder) {
  EXPECT_EQ(ResolveRegion("", env_.lookup()), "us-west-2");  // config [default]
  env_.vars["AWS_DEFAULT_REGION"] = "eu-central-1";
  EXPECT_EQ(ResolveRegion("", env_.lookup()), "eu-central-1");
  env_.vars["AWS_REGION"] = "eu-north-1";
  EXPECT_EQ(ResolveRegion("", env_.lookup()), "eu-north-1");
  EXPECT_EQ(ResolveRegion("flag-region", env_.lookup()), "flag-region");
  env_.vars["AWS_ENDPOINT_URL"] = "http://generic";
  EXPECT_EQ(ResolveEndpoint("", env_.lookup()), "http://generic");
  env_.vars["AWS_ENDPOINT_URL_S3"] = "http://s3-only";
  EXPECT_EQ(ResolveEndpoint("", env_.lookup()), "http://s3-only");
  EXPECT_EQ(ResolveEndpoint("http://flag", env_.lookup()), "http://flag");
}

}  // namespace
}  // namespace sluice::storage
