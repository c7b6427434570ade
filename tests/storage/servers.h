// Real servers for the remote-storage tests, started on loopback by the test itself: nginx
// serving a directory, the fault-injecting proxy (fault_proxy.py) and moto's S3 server. Each
// stops its process when destroyed. Start() returns false with the reason when the program is
// missing or does not come up, so the test can GTEST_SKIP() << why.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace sluice::storage::testing {

// A child process with its stdout on a pipe; SIGTERM (then SIGKILL) and reaped on destruction.
class Child {
 public:
  Child() = default;
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  // `env` entries ("K=V") are added to this process's environment.
  bool Start(const std::vector<std::string>& argv, const std::vector<std::string>& env,
             const std::string& log_path, std::string* why);
  // The first line the child prints, waiting up to timeout_ms.
  bool ReadLine(int timeout_ms, std::string* line);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
};

// A free TCP port on 127.0.0.1 (bound and released: good enough on a test machine).
int FreePort();
// True once something accepts connections on 127.0.0.1:port.
bool WaitForPort(int port, int timeout_ms);
// The program's path: $ENV_NAME if set and executable, else `name` on PATH; "" if neither.
std::string FindProgram(const char* env_name, const std::string& name);

class Nginx {
 public:
  // Serves `root` (a dataset directory's parent is fine) on a free port; config and logs in
  // `work_dir`.
  bool Start(const std::string& root, const std::string& work_dir, std::string* why);
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  Child child_;
  int port_ = 0;
};

class FaultProxy {
 public:
  // fault_proxy.py in front of 127.0.0.1:upstream_port; `args` are its fault flags.
  bool Start(int upstream_port, const std::vector<std::string>& args, const std::string& log_dir,
             std::string* why);
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  Child child_;
  int port_ = 0;
};

// moto_server with SigV4 checking on (docs/remote.md), a bucket and an IAM user whose key may
// read it. `dataset_dir`'s files are uploaded under s3://bucket/prefix/.
class MotoS3 {
 public:
  bool Start(const std::string& dataset_dir, const std::string& bucket, const std::string& prefix,
             const std::string& work_dir, std::string* why);
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& access_key() const { return key_; }
  const std::string& secret_key() const { return secret_; }

 private:
  Child child_;
  int port_ = 0;
  std::string key_, secret_;
};

}  // namespace sluice::storage::testing
