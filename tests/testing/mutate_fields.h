// Test helpers over the options tables (base/fields.h): visit every leaf field of a struct, nested
// tables included, with its path, and change one field to another valid-looking value, so that a
// test can check a property for every field without naming them (a field added to a table is
// covered by the same test).
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "base/fields.h"

namespace sluice::testing {

// fn(path, FieldInfo, member&) for every leaf of `s` in table order; `path` is "a.b.key".
template <class S, class Fn>
void ForEachLeaf(S& s, const Fn& fn, const std::string& prefix = "") {
  VisitFields(s, [&](const FieldInfo& f, auto& m) {
    using T = std::remove_reference_t<decltype(m)>;
    const std::string path = prefix.empty() ? f.key : prefix + "." + f.key;
    if constexpr (HasFields<T>)
      ForEachLeaf(m, fn, path);
    else
      fn(path, f, m);
  });
}

// A value other than *v that passes the field's range: bools flip, numbers move inside
// [min, max], enums take another name, strings and vectors grow. std::optional<bool> takes
// !fallback (the value that applies when it is empty) so that it always changes the result.
template <class T>
void Change(const FieldInfo& f, T* v, bool fallback = true) {
  if constexpr (std::is_same_v<T, bool>) {
    *v = !*v;
  } else if constexpr (kIsOptional<T>) {
    *v = !v->value_or(fallback);
  } else if constexpr (std::is_enum_v<T>) {
    for (const auto& n : EnumNames(*v)) {
      if (n.value != *v) {
        *v = n.value;
        return;
      }
    }
  } else if constexpr (std::is_integral_v<T>) {
    *v = static_cast<double>(*v) + 1 <= f.max ? *v + 1 : *v - 1;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (*v != 0)
      *v = *v / 2;
    else
      *v = f.min >= 0 ? (std::isfinite(f.max) ? f.max / 4 : 0.25) : -0.5;
  } else if constexpr (std::is_same_v<T, std::string>) {
    *v += "x";
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    v->push_back("x");
  } else {
    v->push_back(v->empty() ? 1.25 : v->back() + 0.05);
  }
}

}  // namespace sluice::testing
