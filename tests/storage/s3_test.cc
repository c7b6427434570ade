// Datasets in S3, from moto_server on loopback with SigV4 checking on: libcurl's signing is
// accepted, the epoch digest equals the local one, and a bad secret is a clear 403
// (docs/remote.md, "The S3 server in the tests").
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "assert_ok.h"
#include "loader/digest.h"
#include "loader/loader.h"
#include "servers.h"
#include "shards/manifest.h"
#include "storage/open.h"
#include "test_dataset.h"
#include "test_util.h"

namespace sluice::storage {
namespace {

std::string Digest(const std::string& location, const loader::LoaderOptions& o, Status* st) {
  std::unique_ptr<loader::Loader> l;
  *st = loader::Loader::Open(location, o, &l);
  if (!st->ok()) return "";
  *st = l->Start(0);
  if (!st->ok()) return "";
  loader::BatchDigest digest;
  const loader::Batch* b;
  while ((*st = l->Next(&b)).ok() && b != nullptr) digest.Add(*b);
  return digest.hex();
}

// Every AWS variable this test sets, cleared again so the cases do not leak into each other.
class AwsEnv {
 public:
  ~AwsEnv() {
    for (const char* v :
         {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
          "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_ENDPOINT_URL", "AWS_REGION"})
      unsetenv(v);
  }
  void Set(const char* k, const std::string& v) { setenv(k, v.c_str(), 1); }
};

class S3StorageTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new sluice::testing::TempDir;
    loader::testing::AudioDatasetSpec spec;
    spec.records = 60;
    std::filesystem::create_directories(dir_->Join("ds"));
    loader::testing::WriteAudioDataset(dir_->Join("ds"), spec);
    moto_ = new testing::MotoS3;
    if (!moto_->Start(dir_->Join("ds"), "sluice-test", "corpora/en", dir_->path(), &why_)) return;
  }
  static void TearDownTestSuite() {
    delete moto_;
    delete dir_;
  }
  void SetUp() override {
    if (!why_.empty()) GTEST_SKIP() << why_;
  }
  static loader::LoaderOptions Options() {
    loader::LoaderOptions o;
    o.threads = 2;
    o.batching.max_frames = 1500;
    o.batching.shuffle_window = 16;
    o.storage.endpoint = moto_->endpoint();
    o.storage.retries = 2;
    return o;
  }
  static sluice::testing::TempDir* dir_;
  static testing::MotoS3* moto_;
  static std::string why_;
};
sluice::testing::TempDir* S3StorageTest::dir_ = nullptr;
testing::MotoS3* S3StorageTest::moto_ = nullptr;
std::string S3StorageTest::why_;

TEST_F(S3StorageTest, EpochDigestFromS3EqualsLocal) {
  AwsEnv env;
  env.Set("AWS_ACCESS_KEY_ID", moto_->access_key());
  env.Set("AWS_SECRET_ACCESS_KEY", moto_->secret_key());
  Status st;
  const std::string local = Digest(dir_->Join("ds"), Options(), &st);
  ASSERT_OK(st);
  const std::string remote = Digest("s3://sluice-test/corpora/en", Options(), &st);
  ASSERT_OK(st);
  EXPECT_EQ(remote, local);
}

TEST_F(S3StorageTest, CredentialsFileProfileAndEndpointFromTheEnvironment) {
  AwsEnv env;
  sluice::testing::WriteFile(dir_->Join("credentials"),
                             "[other]\naws_access_key_id = " + moto_->access_key() +
                                 "\naws_secret_access_key = " + moto_->secret_key() + "\n");
  env.Set("AWS_SHARED_CREDENTIALS_FILE", dir_->Join("credentials"));
  env.Set("AWS_CONFIG_FILE", dir_->Join("no-config"));
  env.Set("AWS_PROFILE", "other");
  env.Set("AWS_ENDPOINT_URL", moto_->endpoint());
  std::shared_ptr<const shards::Storage> storage;
  ASSERT_OK(OpenStorage("s3://sluice-test/corpora/en/", StorageOptions{}, &storage));
  shards::VerifyReport report;
  ASSERT_OK(shards::VerifyDataset(*storage, &report));
  EXPECT_TRUE(report.ok()) << report.problems[0].message;
  shards::Manifest local;
  ASSERT_OK(shards::LoadManifest(dir_->Join("ds"), &local));
  EXPECT_EQ(report.shards, local.shards.size());
  EXPECT_EQ(report.records, 60u);
  EXPECT_GT(storage->Counters().requests, 0u);
}

TEST_F(S3StorageTest, WrongSecretIsA403NamingTheCredentials) {
  AwsEnv env;
  env.Set("AWS_ACCESS_KEY_ID", moto_->access_key());
  env.Set("AWS_SECRET_ACCESS_KEY", "not-the-secret");
  std::unique_ptr<shards::Dataset> ds;
  StorageOptions so;
  so.endpoint = moto_->endpoint();
  const Status s = OpenDataset("s3://sluice-test/corpora/en", so, {}, &ds);
  ASSERT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.message().find("HTTP 403"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("SignatureDoesNotMatch"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("AWS_ACCESS_KEY_ID"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("1 attempt"), std::string::npos) << s.ToString();  // not retried
}

TEST_F(S3StorageTest, MissingPrefixIsNotFound) {
  AwsEnv env;
  env.Set("AWS_ACCESS_KEY_ID", moto_->access_key());
  env.Set("AWS_SECRET_ACCESS_KEY", moto_->secret_key());
  std::unique_ptr<shards::Dataset> ds;
  StorageOptions so;
  so.endpoint = moto_->endpoint();
  const Status s = OpenDataset("s3://sluice-test/no/such/prefix", so, {}, &ds);
  ASSERT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_NE(s.message().find("/sluice-test/no/such/prefix/manifest.json"), std::string::npos)
      << s.ToString();
}

}  // namespace
}  // namespace sluice::storage
