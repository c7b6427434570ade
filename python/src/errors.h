// A non-OK sluice::Status as a Python exception of sluice.errors, by code (NotFound ->
// sluice.NotFoundError, Corruption -> sluice.CorruptionError, ...), carrying the C++ message as
// is: it already names the file, block, offset and any HINT.
#pragma once

#include "base/status.h"

namespace sluice::python {

// Sets the Python error and throws pybind11::error_already_set. Needs the GIL.
[[noreturn]] void ThrowStatus(const Status& s);

// ThrowStatus when `s` is not OK.
inline void Check(const Status& s) {
  if (!s.ok()) ThrowStatus(s);
}

}  // namespace sluice::python
