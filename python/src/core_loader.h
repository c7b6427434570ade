// CoreLoader: sluice._sluice.Loader, a sluice::Loader driven from Python (sluice/loader.py wraps
// it with iteration, rank defaults and state_dict).
//
// Zero copy and lifetime. Each batch handed out holds a BatchLease (batch_lease.h) that its
// Batch object and every array exported from it share. The Loader reuses a batch buffer in
// three places, and none of them may touch memory a lease still holds:
//   Next()   recycles the batch handed out consumer_batches calls ago;
//   Start()  takes back every batch handed out;
//   ~Loader  frees the pool.
// The last is LeaseAllocator's deferred free. For the first two CoreLoader checks the leases of
// the batches the Loader still counts as held; if one is alive it *retires* the Loader: notes
// its ResumeState, destroys it (the pipeline stops; the held buffers stay allocated for their
// leases) and opens a fresh one that resumes at that state, which by the resume contract yields
// exactly the batches the old one would have. So nothing a Python object references is ever
// overwritten, whatever the user keeps; holding more than consumer_batches batches at once only
// costs a pipeline restart (counted in restarts()) and the memory of the batches kept.
//
// fork(). A child forked while the Loader runs (multiprocessing's "fork", a DataLoader worker)
// has a copy of the Loader but none of its pipeline threads; their mutexes may be copied locked.
// Stopping that copy would join threads that do not exist there and wait forever, so in a child
// every call raises a RuntimeError saying to create the Loader in the child instead, and
// close() and the destructor abandon the copy (its memory is the child's copy of the parent's,
// reclaimed when the child exits) without touching its threads or locks.
#pragma once

#include <sys/types.h>

#include <pybind11/pybind11.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "batch_lease.h"
#include "loader/digest.h"
#include "loader/loader.h"

namespace sluice::python {

namespace py = pybind11;

class CoreLoader {
 public:
  // sources: (dataset directory or URL, weight); one source with epoch_records 0 is that
  // dataset alone, more make a weighted mixture (loader::MixOptions). options: keyword -> value,
  // the CLI's names (kwargs.h); InvalidArgument from Loader::Open and TypeError/ValueError for a
  // bad keyword raise.
  // Opening waits without the GIL for the manifest and the shard indexes (over the network for
  // a URL); Ctrl-C raises KeyboardInterrupt within kSignalPoll (core_loader.cc), and the opening
  // goes on in the background and drops its result.
  CoreLoader(const std::vector<std::pair<std::string, double>>& sources, uint64_t epoch_records,
             const py::dict& options, bool digest, bool pin);
  ~CoreLoader();

  // Starts where `state` stopped (Loader::Start(ResumeState)): the whole state, world and
  // earlier stretches included, so that a resume at another world size takes the rest of the
  // epoch exactly once.
  void Start(const loader::ResumeState& state);
  // The next batch as a sluice._sluice.Batch, or None at the end of the epoch. Waits without
  // the GIL, looking for signals between short waits: Ctrl-C raises KeyboardInterrupt at once and
  // takes nothing, so the next call waits for the same batch (and close() still works; at
  // interpreter exit it abandons a pipeline that may be stuck on a read, as in a forked child).
  py::object Next();
  // Stops the epoch and releases the loader; batches handed out stay valid.
  void Close();

  loader::ResumeState state() const;
  loader::EpochStats stats() const;
  uint64_t num_batches() const;
  uint64_t CountBatches(uint64_t epoch) const;
  const loader::FeatureInfo& feature_info() const {
    CheckOpen();
    return loader_->feature_info();
  }
  loader::BatchShape max_batch_shape() const {
    CheckOpen();
    return loader_->max_batch_shape();
  }
  const loader::LoaderOptions& options() const {
    CheckProcess();
    return options_;
  }
  uint64_t restarts() const {
    CheckProcess();
    return restarts_;
  }
  std::string digest() const;
  LeaseAllocator& allocator() {
    CheckProcess();
    return *allocator_;
  }
  // The process that created the Loader: the only one whose threads run it.
  pid_t owner_pid() const { return owner_pid_; }

 private:
  // Loader::Open of a dataset or a mixture; call without the GIL.
  static Status OpenLoader(const loader::MixOptions& mix, const loader::LoaderOptions& options,
                           std::unique_ptr<loader::Loader>* out);
  // Destroys the Loader on a thread of its own, waiting at most `limit` (without the GIL): at
  // exit, where a read stuck on remote storage must not hold the process.
  void CloseWithin(std::chrono::milliseconds limit);
  // Destroys the Loader (without the GIL) and opens a new one; `resume` restarts it there.
  void Reopen(const std::optional<loader::ResumeState>& resume);
  bool AnyHandedOutAlive() const;
  // RuntimeError in a process forked from the owner; CheckOpen also after close().
  void CheckProcess() const;
  void CheckOpen() const;

  loader::MixOptions mix_;
  loader::LoaderOptions options_;
  std::shared_ptr<LeaseAllocator> allocator_;
  std::unique_ptr<loader::Loader> loader_;
  bool started_ = false;
  // The batches the Loader counts as held by its consumer, oldest first (at most
  // consumer_batches): the one at the front is recycled by the next Next().
  std::deque<std::weak_ptr<BatchLease>> handed_out_;
  uint64_t restarts_ = 0;
  // Ctrl-C cut the last wait of Next() short: the pipeline may be stuck on a read.
  bool wait_cut_ = false;
  std::optional<loader::BatchDigest> digest_;
  const pid_t owner_pid_;
};

void RegisterLoader(py::module_& m);

}  // namespace sluice::python
