#include "base/cpus.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace sluice {
namespace {

std::string Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

bool ParsePositive(const std::string& s, double* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && *v > 0 && std::isfinite(*v);
}

// Empty when the file cannot be read (no such controller at this level).
std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The tightest of `limit_at(dir)` over dir = root/rel and its parents up to root.
template <typename F>
double TightestUpTo(const std::string& root, std::string rel, F limit_at) {
  double best = 0;
  while (true) {
    const double v = limit_at(root + rel);
    if (v > 0 && (best == 0 || v < best)) best = v;
    if (rel.empty() || rel == "/") break;
    const size_t slash = rel.find_last_of('/');
    rel = slash == std::string::npos ? "" : rel.substr(0, slash);
  }
  return best;
}

}  // namespace

double ParseCpuMax(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string quota, period;
  in >> quota >> period;
  if (quota == "max") return 0;
  double q = 0, p = 0;
  if (!ParsePositive(quota, &q)) return 0;
  if (period.empty()) period = "100000";  // the kernel's default period, when only a quota is given
  if (!ParsePositive(period, &p)) return 0;
  return q / p;
}

double ParseCfsQuota(std::string_view quota, std::string_view period) {
  double q = 0, p = 0;
  if (!ParsePositive(Trim(quota), &q) || !ParsePositive(Trim(period), &p)) return 0;  // -1: none
  return q / p;
}

double CgroupCpuLimit(std::string_view proc_cgroup, const std::string& root) {
  double best = 0;
  auto tighten = [&](double v) {
    if (v > 0 && (best == 0 || v < best)) best = v;
  };
  std::istringstream in{std::string(proc_cgroup)};
  std::string line;
  while (std::getline(in, line)) {
    // "hierarchy-id:controllers:path"; v2 is "0::/path".
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = Trim(line.substr(b + 1));
    if (path == "/") path.clear();
    if (controllers.empty()) {
      tighten(TightestUpTo(root, path, [](const std::string& dir) {
        return ParseCpuMax(ReadSmallFile(dir + "/cpu.max"));
      }));
      continue;
    }
    std::vector<std::string> names;
    std::stringstream cs(controllers);
    for (std::string c; std::getline(cs, c, ',');) names.push_back(c);
    if (std::find(names.begin(), names.end(), "cpu") == names.end()) continue;
    // v1 mounts the cpu controller as "cpu,cpuacct" or "cpu" (a link to it on most systems).
    for (const std::string& mount : {controllers, std::string("cpu")}) {
      tighten(TightestUpTo(root + "/" + mount, path, [](const std::string& dir) {
        return ParseCfsQuota(ReadSmallFile(dir + "/cpu.cfs_quota_us"),
                             ReadSmallFile(dir + "/cpu.cfs_period_us"));
      }));
    }
  }
  return best;
}

int CombineCoreLimits(int affinity_cpus, double cgroup_cpus) {
  int n = std::max(1, affinity_cpus);
  if (cgroup_cpus > 0) n = std::min(n, static_cast<int>(std::ceil(cgroup_cpus - 1e-9)));
  return std::max(1, n);
}

int UsableCores() {
  int affinity = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) affinity = CPU_COUNT(&set);
  return CombineCoreLimits(affinity,
                           CgroupCpuLimit(ReadSmallFile("/proc/self/cgroup"), "/sys/fs/cgroup"));
}

}  // namespace sluice
