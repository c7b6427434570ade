// A host project's own storage/options.h (see base/status.h beside it).
#pragma once
#define HOST_STORAGE_OPTIONS_H 1
namespace host {
struct StorageOptions {
  int replicas = 1;
};
}  // namespace host
