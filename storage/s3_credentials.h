// AWS credentials, region and endpoint the way the AWS CLI finds them: environment variables
// first, then the shared files ~/.aws/credentials and ~/.aws/config (docs/remote.md). Only the
// static-key forms: no SSO, instance metadata or credential_process.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "base/status.h"

namespace sluice::storage {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // sent as x-amz-security-token when set
  std::string source;         // "environment" or "<file> [profile]": what error messages name
  bool empty() const { return access_key_id.empty(); }
};

// getenv, or a fake one in tests.
using EnvLookup = std::function<const char*(const char*)>;
EnvLookup ProcessEnv();

// INI as the AWS files write it: "[section]" lines, "key = value" lines, '#' and ';' comments.
// Keys are lower-cased; later duplicates win.
using IniFile = std::map<std::string, std::map<std::string, std::string>>;
IniFile ParseIni(std::string_view text);

// AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN); else the profile
// ($AWS_PROFILE, else "default") of $AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials), then of
// $AWS_CONFIG_FILE (~/.aws/config, section "[profile NAME]"). None at all: empty credentials
// (unsigned requests: public buckets). InvalidArgument when $AWS_PROFILE names a profile no file
// has, or a profile has a key id without a secret.
Status ResolveCredentials(const EnvLookup& env, AwsCredentials* out);

// `flag`, else $AWS_REGION, $AWS_DEFAULT_REGION, the profile's region in the config file,
// else "us-east-1".
std::string ResolveRegion(const std::string& flag, const EnvLookup& env);

// `flag`, else $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else "" (AWS itself).
std::string ResolveEndpoint(const std::string& flag, const EnvLookup& env);

}  // namespace sluice::storage
