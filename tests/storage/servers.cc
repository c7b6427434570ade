#include "servers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace sluice::storage::testing {

Child::~Child() {
  if (out_fd_ >= 0) close(out_fd_);
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

bool Child::Start(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                  const std::string& log_path, std::string* why) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *why = "pipe failed";
    return false;
  }
  // Everything the child needs is built before fork: a threaded parent's child may only exec.
  std::vector<std::string> env_strings;
  for (char** e = ::environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  env_strings.insert(env_strings.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  pid_ = fork();
  if (pid_ < 0) {
    *why = "fork failed";
    return false;
  }
  if (pid_ == 0) {
    dup2(fds[1], 1);
    if (log >= 0) dup2(log, 2);
    close(fds[0]);
    execvpe(args[0], args.data(), envp.data());
    _exit(127);
  }
  if (log >= 0) close(log);
  close(fds[1]);
  out_fd_ = fds[0];
  return true;
}

bool Child::ReadLine(int timeout_ms, std::string* line) {
  line->clear();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{out_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char c;
    if (read(out_fd_, &c, 1) != 1) return false;
    if (c == '\n') return true;
    *line += c;
  }
  return false;
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

bool WaitForPort(int port, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(fd);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::string FindProgram(const char* env_name, const std::string& name) {
  const char* e = std::getenv(env_name);
  if (e != nullptr && *e != 0 && access(e, X_OK) == 0) return e;
  const char* path = std::getenv("PATH");
  std::string dirs = std::string(path ? path : "") + ":/usr/sbin:/sbin";
  std::stringstream ss(dirs);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    const std::string p = dir + "/" + name;
    if (!dir.empty() && access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

bool Nginx::Start(const std::string& root, const std::string& work_dir, std::string* why) {
  const std::string nginx = FindProgram("NGINX", "nginx");
  if (nginx.empty()) {
    *why = "nginx is not installed (Debian: nginx-light; ./run.sh installs it)";
    return false;
  }
  for (int attempt = 0; attempt < 3; ++attempt) {
    port_ = FreePort();
    const std::string conf = work_dir + "/nginx.conf";
    std::ofstream(conf) << "daemon off;\nmaster_process off;\nworker_processes 1;\n"
                        << "pid " << work_dir << "/nginx.pid;\n"
                        << "error_log " << work_dir << "/nginx-error.log;\n"
                        << "events { worker_connections 256; }\n"
                        << "http {\n  access_log off;\n"
                        << "  client_body_temp_path " << work_dir << "/body;\n"
                        << "  proxy_temp_path " << work_dir << "/proxy;\n"
                        << "  fastcgi_temp_path " << work_dir << "/fastcgi;\n"
                        << "  uwsgi_temp_path " << work_dir << "/uwsgi;\n"
                        << "  scgi_temp_path " << work_dir << "/scgi;\n"
                        << "  keepalive_requests 100000;\n"
                        << "  server { listen 127.0.0.1:" << port_ << "; root " << root
                        << "; }\n}\n";
    if (!child_.Start({nginx, "-p", work_dir, "-c", conf, "-e", work_dir + "/nginx-error.log"}, {},
                      work_dir + "/nginx-stderr.log", why))
      return false;
    if (WaitForPort(port_, 5000)) return true;
    child_.~Child();
    new (&child_) Child();
  }
  *why = "nginx did not start; see " + work_dir + "/nginx-error.log";
  return false;
}

bool FaultProxy::Start(int upstream_port, const std::vector<std::string>& args,
                       const std::string& log_dir, std::string* why) {
  const std::string python = FindProgram("PYTHON3", "python3");
  const char* script = std::getenv("FAULT_PROXY");
  if (python.empty() || script == nullptr) {
    *why = "python3 or $FAULT_PROXY (tests/storage/fault_proxy.py) missing";
    return false;
  }
  std::vector<std::string> argv = {python, script, "--upstream",
                                   "127.0.0.1:" + std::to_string(upstream_port)};
  argv.insert(argv.end(), args.begin(), args.end());
  if (!child_.Start(argv, {}, log_dir + "/proxy.log", why)) return false;
  std::string line;
  if (!child_.ReadLine(10000, &line) || (port_ = std::atoi(line.c_str())) <= 0) {
    *why = "fault_proxy.py did not start; see " + log_dir + "/proxy.log";
    return false;
  }
  return WaitForPort(port_, 5000);
}

bool MotoS3::Start(const std::string& dataset_dir, const std::string& bucket,
                   const std::string& prefix, const std::string& work_dir, std::string* why) {
  const std::string moto = FindProgram("MOTO_SERVER", "moto_server");
  const char* fixture = std::getenv("S3_FIXTURE");
  if (moto.empty() || fixture == nullptr) {
    *why = "moto_server is not installed (./run.sh installs moto[server] into build/venv-tools)";
    return false;
  }
  // The fixture runs with the Python moto_server's venv has (boto3 comes with moto[server]).
  const std::string bin = moto.substr(0, moto.rfind('/'));
  const std::string python =
      access((bin + "/python3").c_str(), X_OK) == 0 ? bin + "/python3" : "python3";
  port_ = FreePort();
  // The first three requests (create the IAM user, its key and its policy) are let through
  // unsigned; every later one must carry a valid SigV4 signature by a key moto knows.
  if (!child_.Start({moto, "-H", "127.0.0.1", "-p", std::to_string(port_)},
                    {"INITIAL_NO_AUTH_ACTION_COUNT=3"}, work_dir + "/moto.log", why))
    return false;
  if (!WaitForPort(port_, 30000)) {
    *why = "moto_server did not start; see " + work_dir + "/moto.log";
    return false;
  }
  const std::string cmd = python + " " + fixture + " --endpoint " + endpoint() + " --bucket " +
                          bucket + " --prefix " + prefix + " --dir " + dataset_dir + " 2>" +
                          work_dir + "/s3_fixture.log";
  FILE* p = popen(cmd.c_str(), "r");
  char buf[512] = {};
  const bool got = p != nullptr && std::fgets(buf, sizeof(buf), p) != nullptr;
  const int rc = p ? pclose(p) : -1;
  std::istringstream in(buf);
  in >> key_ >> secret_;
  if (!got || rc != 0 || secret_.empty()) {
    *why = "s3_fixture.py failed; see " + work_dir + "/s3_fixture.log";
    return false;
  }
  return true;
}

}  // namespace sluice::storage::testing
