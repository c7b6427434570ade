// An exclusive lock on an output directory (`shardify audio|text -o DIR`, `shardify merge -o DIR`).
//
// Two runs writing one directory at once both pass its checks (empty, or an interrupted run to
// resume) and then interleave their files: one exited 0 over a shard the other had replaced, or
// both exited 0 with the directory holding the other's dataset. So a run first takes flock(2) on
// DIR/.shardify.lock, without waiting, and writes its pid, host, start time and command into the
// file; a second run refuses, naming the first. The kernel drops the lock when its holder dies
// (a crash, kill -9, a preempted node), so a stale file never blocks a rerun; the holder removes
// the file when it is done, so a finished dataset does not carry it. flock is per open file, on
// the local host and, on Linux, on NFS (as a whole-file fcntl lock): the Slurm parts of one array
// each lock their own directory.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "shards/manifest.h"

namespace sluice::shardify {

// shards/manifest.h's name: a reader that finds it where no manifest is says "resume".
inline constexpr const char* kLockName = shards::kShardifyLockName;

class OutDirLock {
 public:
  OutDirLock(const OutDirLock&) = delete;
  OutDirLock& operator=(const OutDirLock&) = delete;
  // Removes the lock file, then releases the lock.
  ~OutDirLock();

  // Creates `dir` if it does not exist and locks it for this process; `command` ("shardify
  // audio") is recorded for whoever finds the directory locked. InvalidArgument naming the holder
  // (pid, host, start time, command) when another process holds the lock; IOError, naming the
  // lock file, when a call fails.
  static Status Acquire(const std::string& dir, const std::string& command,
                        std::unique_ptr<OutDirLock>* out);

  const std::string& path() const { return path_; }

 private:
  OutDirLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
};

}  // namespace sluice::shardify
