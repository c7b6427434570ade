// A host project's own base/status.h: the names sluice's folders have are common ones, and an
// installed sluice must not pick this file up for its own (nor hide it from the host).
#pragma once
#define HOST_BASE_STATUS_H 1
namespace host {
struct Status {
  int code = 0;
};
}  // namespace host
