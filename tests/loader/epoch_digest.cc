// One loader epoch in a process of its own, for the tests that change process-wide limits:
//   epoch_digest DATASET_DIR NOFILE
// sets the soft RLIMIT_NOFILE to NOFILE (0: leave it), runs epoch 0 and prints
// "digest HEX batches N shards S". Exit 1 with the error on failure.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "loader/digest.h"
#include "loader/loader.h"
#include "shards/manifest.h"

namespace {

sluice::Status Run(const std::string& dir) {
  sluice::loader::LoaderOptions o;
  o.threads = 2;
  o.seed = 17;
  o.batching.max_frames = 1500;
  o.batching.shuffle_window = 32;
  std::unique_ptr<sluice::Loader> l;
  SLUICE_RETURN_IF_ERROR(sluice::Loader::Open(dir, o, &l));
  SLUICE_RETURN_IF_ERROR(l->Start(0));
  sluice::loader::BatchDigest digest;
  uint64_t batches = 0;
  while (true) {
    const sluice::loader::Batch* b = nullptr;
    SLUICE_RETURN_IF_ERROR(l->Next(&b));
    if (b == nullptr) break;
    digest.Add(*b);
    ++batches;
  }
  sluice::shards::Manifest m;
  SLUICE_RETURN_IF_ERROR(sluice::shards::LoadManifest(dir, &m));
  std::printf("digest %s batches %llu shards %zu\n", digest.hex().c_str(),
              static_cast<unsigned long long>(batches), m.shards.size());
  return sluice::Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s DATASET_DIR NOFILE\n", argv[0]);
    return 2;
  }
  const long nofile = std::atol(argv[2]);
  if (nofile > 0) {
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = static_cast<rlim_t>(nofile);
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
      std::perror("setrlimit");
      return 1;
    }
  }
  const sluice::Status s = Run(argv[1]);
  if (!s.ok()) {
    std::fprintf(stderr, "epoch_digest: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
