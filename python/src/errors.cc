#include "errors.h"

#include <pybind11/pybind11.h>

namespace sluice::python {

namespace py = pybind11;

void ThrowStatus(const Status& s) {
  const char* name = "Error";
  switch (s.code()) {
    case Status::Code::kNotFound: name = "NotFoundError"; break;
    case Status::Code::kCorruption: name = "CorruptionError"; break;
    case Status::Code::kInvalidArgument: name = "InvalidArgumentError"; break;
    case Status::Code::kIOError: name = "IOError"; break;
    case Status::Code::kUnsupported: name = "UnsupportedError"; break;
    case Status::Code::kOk: break;
  }
  // The classes live in Python (sluice/errors.py) so that each can also derive from the
  // builtin a caller already catches (FileNotFoundError, ValueError, OSError).
  py::object cls = py::module_::import("sluice.errors").attr(name);
  PyErr_SetString(cls.ptr(), s.message().c_str());
  throw py::error_already_set();
}

}  // namespace sluice::python
