// How many cores this process may really use: the default thread count of the
// loader and of shardify. std::thread::hardware_concurrency() counts the host's
// cores; under Slurm, a container or taskset the process gets fewer, and a
// pool sized for the host oversubscribes them (every thread then runs at a
// fraction of a core and the pipeline's serial stages stall behind them).
#pragma once

#include <string>
#include <string_view>

namespace sluice {

// min(CPUs in the affinity mask, the cgroup CPU quota rounded up), at least 1.
// The quota is read from cgroup v2 cpu.max or v1 cpu.cfs_quota_us /
// cpu.cfs_period_us of this process's cgroup and of each ancestor (a parent's
// limit binds its children). Falls back to hardware_concurrency() where
// neither can be read.
int UsableCores();

// The pieces, separated from the file system so tests need no real cgroup.
// cgroup v2 cpu.max ("200000 100000" = 2 CPUs; "max 100000" = none): the CPUs
// it allows, or 0 when unlimited or unparsable.
double ParseCpuMax(std::string_view text);
// cgroup v1 cpu.cfs_quota_us ("-1" = none) and cpu.cfs_period_us: as above.
double ParseCfsQuota(std::string_view quota, std::string_view period);
// The tightest CPU limit of the cgroup that /proc/self/cgroup (`proc_cgroup`)
// names, looked up under `root` (normally /sys/fs/cgroup) for v2 and v1
// layouts, walking up to the root; 0 when there is none.
double CgroupCpuLimit(std::string_view proc_cgroup, const std::string& root);
// min(affinity, ceil(cgroup_cpus)) with cgroup_cpus 0 meaning no limit; at least 1.
int CombineCoreLimits(int affinity_cpus, double cgroup_cpus);

}  // namespace sluice
