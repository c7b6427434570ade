// A host project whose own base/ and storage/ headers sit on its include path beside sluice's
// install: each side gets its own headers, whichever -I comes first (install_test.sh).
#include "base/status.h"
#include "storage/options.h"

#include <sluice/loader/loader.h>

static_assert(HOST_BASE_STATUS_H && HOST_STORAGE_OPTIONS_H, "the host's own headers");

int main() {
  host::Status mine;
  host::StorageOptions storage;
  sluice::loader::LoaderOptions options;  // reaches sluice's storage/options.h
  const sluice::Status theirs = sluice::Status::OK();
  return mine.code + storage.replicas - 1 + (theirs.ok() ? 0 : 1) +
         (options.storage.cache_dir.empty() ? 0 : 1);
}
