#include "storage/s3_credentials.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "base/file.h"

namespace sluice::storage {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string Env(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  return v == nullptr ? std::string() : std::string(v);
}

std::string Home(const EnvLookup& env) { return Env(env, "HOME"); }

std::string CredentialsPath(const EnvLookup& env) {
  const std::string f = Env(env, "AWS_SHARED_CREDENTIALS_FILE");
  return f.empty() ? Home(env) + "/.aws/credentials" : f;
}

std::string ConfigPath(const EnvLookup& env) {
  const std::string f = Env(env, "AWS_CONFIG_FILE");
  return f.empty() ? Home(env) + "/.aws/config" : f;
}

std::string Profile(const EnvLookup& env) {
  const std::string p = Env(env, "AWS_PROFILE");
  return p.empty() ? "default" : p;
}

// The profile's section of a file, or null; a missing or unreadable file has no sections.
const std::map<std::string, std::string>* Section(const IniFile& ini, const std::string& name) {
  auto it = ini.find(name);
  return it == ini.end() ? nullptr : &it->second;
}

IniFile LoadIni(const std::string& path) {
  std::string text;
  if (!ReadFileToString(path, &text).ok()) return {};
  return ParseIni(text);
}

// The config file names profiles "[profile NAME]", except "[default]".
std::string ConfigSection(const std::string& profile) {
  return profile == "default" ? profile : "profile " + profile;
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const char* name) { return static_cast<const char*>(std::getenv(name)); };
}

IniFile ParseIni(std::string_view text) {
  IniFile ini;
  std::string section;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = Trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = std::string(Trim(line.substr(1, line.size() - 2)));
      ini[section];
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    std::string key(Trim(line.substr(0, eq)));
    std::transform(key.begin(), key.end(), key.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    ini[section][key] = std::string(Trim(line.substr(eq + 1)));
  }
  return ini;
}

Status ResolveCredentials(const EnvLookup& env, AwsCredentials* out) {
  AwsCredentials c;
  c.access_key_id = Env(env, "AWS_ACCESS_KEY_ID");
  if (!c.access_key_id.empty()) {
    c.secret_access_key = Env(env, "AWS_SECRET_ACCESS_KEY");
    c.session_token = Env(env, "AWS_SESSION_TOKEN");
    c.source = "environment (AWS_ACCESS_KEY_ID)";
    if (c.secret_access_key.empty())
      return Status::InvalidArgument(
          "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not. HINT: set both");
    *out = std::move(c);
    return Status::OK();
  }
  const std::string profile = Profile(env);
  const std::string cred_path = CredentialsPath(env), config_path = ConfigPath(env);
  const IniFile creds = LoadIni(cred_path), config = LoadIni(config_path);
  const auto* s = Section(creds, profile);
  std::string path = cred_path;
  if (s == nullptr || !s->contains("aws_access_key_id")) {
    s = Section(config, ConfigSection(profile));
    path = config_path;
  }
  if (s == nullptr) {
    if (!Env(env, "AWS_PROFILE").empty()) {
      return Status::InvalidArgument("AWS_PROFILE=" + profile + ": no such profile in " +
                                     cred_path + " or " + config_path +
                                     ". HINT: add it, or unset AWS_PROFILE");
    }
    *out = AwsCredentials{};  // anonymous: unsigned requests
    return Status::OK();
  }
  auto get = [&](const char* k) {
    auto it = s->find(k);
    return it == s->end() ? std::string() : it->second;
  };
  c.access_key_id = get("aws_access_key_id");
  c.secret_access_key = get("aws_secret_access_key");
  c.session_token = get("aws_session_token");
  c.source = path + " [" + profile + "]";
  if (!c.access_key_id.empty() && c.secret_access_key.empty()) {
    return Status::InvalidArgument(c.source + ": aws_access_key_id without aws_secret_access_key");
  }
  *out = std::move(c);
  return Status::OK();
}

std::string ResolveRegion(const std::string& flag, const EnvLookup& env) {
  if (!flag.empty()) return flag;
  for (const char* name : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
    const std::string v = Env(env, name);
    if (!v.empty()) return v;
  }
  const IniFile config = LoadIni(ConfigPath(env));
  if (const auto* s = Section(config, ConfigSection(Profile(env)))) {
    auto it = s->find("region");
    if (it != s->end() && !it->second.empty()) return it->second;
  }
  return "us-east-1";
}

std::string ResolveEndpoint(const std::string& flag, const EnvLookup& env) {
  if (!flag.empty()) return flag;
  for (const char* name : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
    const std::string v = Env(env, name);
    if (!v.empty()) return v;
  }
  return "";
}

}  // namespace sluice::storage
