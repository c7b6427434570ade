#include "kwargs.h"

#include <pybind11/stl.h>

#include <cmath>
#include <cstring>

namespace sluice::python {

namespace {

std::string TypeName(py::handle v) { return py::str(py::type::handle_of(v).attr("__name__")); }

std::string Num(double x) {
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  if (x == std::floor(x) && std::fabs(x) < 1e18) return std::to_string(static_cast<long long>(x));
  return py::str(py::float_(x));
}

void CheckRange(double x, const std::string& name, double min, double max, py::handle v) {
  if (x < min || x > max)
    throw py::value_error(name + "=" + std::string(py::repr(v)) + ": out of range [" + Num(min) +
                          ", " + Num(max) + "]");
}

}  // namespace

std::string KeywordOf(const FieldInfo& f) {
  if (f.flag == nullptr) return "";
  std::string s = f.flag;
  size_t start = s.rfind("--");  // "-o,--output" style flags: the long name
  s = start == std::string::npos ? s : s.substr(start + 2);
  for (char& c : s)
    if (c == '-') c = '_';
  return s;
}

bool IsKeyOnlyKeyword(const FieldInfo& f) { return std::strcmp(f.key, "shuffle") == 0; }

bool ToBool(py::handle v, const std::string& name) {
  if (!py::isinstance<py::bool_>(v))
    throw py::type_error(name + ": expected bool, got " + TypeName(v));
  return v.cast<bool>();
}

int64_t ToInt(py::handle v, const std::string& name, double min, double max) {
  if (py::isinstance<py::bool_>(v) || !py::isinstance<py::int_>(v))
    throw py::type_error(name + ": expected int, got " + TypeName(v));
  int64_t x = 0;
  try {
    x = v.cast<int64_t>();
  } catch (const py::cast_error&) {
    throw py::value_error(name + "=" + std::string(py::repr(v)) + ": too large");
  }
  CheckRange(static_cast<double>(x), name, min, max, v);
  return x;
}

uint64_t ToUnsigned(py::handle v, const std::string& name, double min, double max) {
  if (py::isinstance<py::bool_>(v) || !py::isinstance<py::int_>(v))
    throw py::type_error(name + ": expected int, got " + TypeName(v));
  if (v.cast<py::int_>() < py::int_(0)) CheckRange(-1, name, min, max, v);
  uint64_t x = 0;
  try {
    x = v.cast<uint64_t>();
  } catch (const py::cast_error&) {
    throw py::value_error(name + "=" + std::string(py::repr(v)) + ": too large");
  }
  CheckRange(static_cast<double>(x), name, min, max, v);
  return x;
}

double ToFloat(py::handle v, const std::string& name, double min, double max) {
  if (py::isinstance<py::bool_>(v) ||
      !(py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v)))
    throw py::type_error(name + ": expected float, got " + TypeName(v));
  const double x = v.cast<double>();
  if (std::isnan(x)) throw py::value_error(name + ": NaN");
  CheckRange(x, name, min, max, v);
  return x;
}

std::string ToStr(py::handle v, const std::string& name) {
  if (!py::isinstance<py::str>(v))
    throw py::type_error(name + ": expected str, got " + TypeName(v));
  return v.cast<std::string>();
}

std::vector<double> ToFloatList(py::handle v, const std::string& name, double min, double max) {
  if (py::isinstance<py::str>(v) || !py::isinstance<py::sequence>(v))
    throw py::type_error(name + ": expected a sequence of floats, got " + TypeName(v));
  std::vector<double> out;
  for (py::handle x : v.cast<py::sequence>())
    out.push_back(ToFloat(x, name + "[" + std::to_string(out.size()) + "]", min, max));
  if (out.empty()) throw py::value_error(name + ": empty");
  return out;
}

std::vector<std::string> ToStrList(py::handle v, const std::string& name) {
  if (py::isinstance<py::str>(v) || !py::isinstance<py::sequence>(v))
    throw py::type_error(name + ": expected a sequence of str, got " + TypeName(v));
  std::vector<std::string> out;
  for (py::handle x : v.cast<py::sequence>())
    out.push_back(ToStr(x, name + "[" + std::to_string(out.size()) + "]"));
  if (out.empty()) throw py::value_error(name + ": empty");
  return out;
}

void ThrowBadEnum(const std::string& name, const std::string& got,
                  const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  throw py::value_error(name + "='" + got + "': expected one of " + list);
}

std::set<std::string> KeysOf(const py::dict& kwargs) {
  std::set<std::string> keys;
  for (auto item : kwargs) keys.insert(py::str(item.first));
  return keys;
}

void ThrowIfUnused(const std::set<std::string>& unused, const char* function,
                   const std::vector<std::string>& accepted) {
  if (unused.empty()) return;
  const std::string& name = *unused.begin();
  std::string message =
      std::string(function) + "() got an unexpected keyword argument '" + name + "'";
  const py::list close =
      py::module_::import("difflib").attr("get_close_matches")(name, py::cast(accepted), 3, 0.6);
  std::string list;  // 'a', 'b' or 'c'
  for (size_t i = 0; i < close.size(); ++i) {
    if (i > 0) list += i + 1 == close.size() ? " or " : ", ";
    list += "'" + close[i].cast<std::string>() + "'";
  }
  if (!list.empty()) message += "; did you mean " + list + "?";
  throw py::type_error(message);
}

}  // namespace sluice::python
