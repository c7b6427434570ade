// Python keyword arguments -> options structs, through the options tables (base/fields.h). A
// keyword is the field's command-line flag without its dashes, '-' read as '_' (--num-mel-bins:
// num_mel_bins, --max-frames: max_frames), so one name means the same thing in shardify,
// sluice-bench, sluice-train and Python; ranges and enum names are the table's, as on the CLI.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "base/fields.h"

namespace sluice::python {

namespace py = pybind11;

// "num_mel_bins" for --num-mel-bins; "" for a field without a flag.
std::string KeywordOf(const FieldInfo& f);

// Checked conversions; each throws py::type_error or py::value_error naming `name`.
bool ToBool(py::handle v, const std::string& name);
int64_t ToInt(py::handle v, const std::string& name, double min, double max);
uint64_t ToUnsigned(py::handle v, const std::string& name, double min, double max);
double ToFloat(py::handle v, const std::string& name, double min, double max);
std::string ToStr(py::handle v, const std::string& name);
std::vector<double> ToFloatList(py::handle v, const std::string& name, double min, double max);
std::vector<std::string> ToStrList(py::handle v, const std::string& name);
[[noreturn]] void ThrowBadEnum(const std::string& name, const std::string& got,
                               const std::vector<std::string>& names);

// One keyword of a table, for sluice.loader_options() and the docs.
struct KeywordDoc {
  std::string name;
  std::string help;
  std::string type;  // "int", "float", "bool", "str", "list[float]", "list[str]", or the enum's
                     // names
};

// Fields whose table entry has no flag but that Python users set all the same (the trainer sets
// them from its own flags): exposed under their JSON key.
bool IsKeyOnlyKeyword(const FieldInfo& f);

// Visits every field of `s` that a keyword can set, nested tables included, calling
// fn(FieldInfo, keyword, member). `keep(f)` false leaves a field (and a nested table) out.
template <class S, class Keep, class Fn>
void VisitKeywords(S* s, Keep&& keep, Fn&& fn) {
  VisitFields(*s, [&](const FieldInfo& f, auto& m) {
    using T = std::remove_reference_t<decltype(m)>;
    if (!keep(f)) return;
    if constexpr (HasFields<T>) {
      VisitKeywords(&m, keep, fn);
    } else {
      std::string name = KeywordOf(f);
      if (name.empty() && IsKeyOnlyKeyword(f)) name = f.key;
      if (!name.empty()) fn(f, name, m);
    }
  });
}

// Sets member `m` from Python value `v` with the table's checks.
template <class T>
void SetFromPython(const FieldInfo& f, const std::string& name, py::handle v, T& m) {
  if constexpr (kIsOptional<T>) {
    if (v.is_none()) {
      m.reset();
      return;
    }
    typename T::value_type inner{};
    SetFromPython(f, name, v, inner);
    m = inner;
  } else if constexpr (std::is_same_v<T, bool>) {
    m = ToBool(v, name);
  } else if constexpr (std::is_enum_v<T>) {
    const std::string got = ToStr(v, name);
    std::vector<std::string> names;
    for (const auto& n : EnumNames(m)) {
      if (got == n.name) {
        m = n.value;
        return;
      }
      names.emplace_back(n.name);
    }
    ThrowBadEnum(name, got, names);
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    const double lo = std::max(f.min, static_cast<double>(std::numeric_limits<T>::min()));
    const double hi = std::min(f.max, static_cast<double>(std::numeric_limits<T>::max()));
    m = static_cast<T>(ToInt(v, name, lo, hi));
  } else if constexpr (std::is_integral_v<T>) {
    const double lo = std::max(f.min, 0.0);
    const double hi = std::min(f.max, static_cast<double>(std::numeric_limits<T>::max()));
    m = static_cast<T>(ToUnsigned(v, name, lo, hi));
  } else if constexpr (std::is_floating_point_v<T>) {
    m = static_cast<T>(ToFloat(v, name, f.min, f.max));
  } else if constexpr (std::is_same_v<T, std::string>) {
    m = ToStr(v, name);
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    m = ToFloatList(v, name, f.min, f.max);
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    m = ToStrList(v, name);
  } else {
    static_assert(sizeof(T) == 0, "an options table field of a type Python cannot set");
  }
}

// Sets the fields of `s` named in `kwargs`, erasing each name used from `unused`.
template <class S, class Keep>
void ApplyKwargs(const py::dict& kwargs, S* s, Keep&& keep, std::set<std::string>* unused) {
  VisitKeywords(s, keep, [&](const FieldInfo& f, const std::string& name, auto& m) {
    if (!kwargs.contains(name)) return;
    SetFromPython(f, name, kwargs[py::str(name)], m);
    unused->erase(name);
  });
}

// The keys of `kwargs`, to pass to ApplyKwargs and then to ThrowIfUnused.
std::set<std::string> KeysOf(const py::dict& kwargs);
// TypeError "`function`() got an unexpected keyword argument 'x'" for a name left in `unused`,
// with "did you mean 'y'?" for the names of `accepted` close to it (difflib's measure, as
// Python's own NameError suggestions), so that a typo is not read as an unknown option alone.
void ThrowIfUnused(const std::set<std::string>& unused, const char* function,
                   const std::vector<std::string>& accepted);

// The keywords VisitKeywords visits: what a caller of ApplyKwargs accepts.
template <class S, class Keep>
std::vector<std::string> KeywordsOf(S* s, Keep&& keep) {
  std::vector<std::string> names;
  VisitKeywords(s, keep,
                [&](const FieldInfo&, const std::string& name, auto&) { names.push_back(name); });
  return names;
}

// The table's keywords, types and help.
template <class S, class Keep>
void DescribeKeywords(S* s, Keep&& keep, std::vector<KeywordDoc>* out) {
  VisitKeywords(s, keep, [&](const FieldInfo& f, const std::string& name, auto& m) {
    using T = std::remove_reference_t<decltype(m)>;
    KeywordDoc d{name, f.help, ""};
    if constexpr (kIsOptional<T>) {
      d.type = "bool | None";
    } else if constexpr (std::is_same_v<T, bool>) {
      d.type = "bool";
    } else if constexpr (std::is_enum_v<T>) {
      for (const auto& n : EnumNames(m))
        d.type += (d.type.empty() ? "" : "|") + std::string(n.name);
    } else if constexpr (std::is_integral_v<T>) {
      d.type = "int";
    } else if constexpr (std::is_floating_point_v<T>) {
      d.type = "float";
    } else if constexpr (std::is_same_v<T, std::string>) {
      d.type = "str";
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      d.type = "list[str]";
    } else {
      d.type = "list[float]";
    }
    out->push_back(std::move(d));
  });
}

}  // namespace sluice::python
