// JSON of any options struct with a table (base/fields.h): what manifests, checkpoints and resume
// fingerprints are made of. Includes nlohmann/json: include it from .cc files and tests only,
// never from a library header.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "base/fields.h"
#include "base/status.h"
#include "loader/options.h"

namespace sluice::loader {

enum class Fields {
  kAll,   // every field of the table
  kWhat,  // only those that change the data or results (Affects::kWhat): a fingerprint
};

namespace options_json_internal {

// {key: leaf(field, member)} over the table of `s`, nested tables as objects.
template <class S, class Leaf>
nlohmann::json Walk(const S& s, Fields which, const Leaf& leaf) {
  nlohmann::json j = nlohmann::json::object();
  VisitFields(s, [&](const FieldInfo& f, const auto& m) {
    if (which == Fields::kWhat && f.affects != Affects::kWhat) return;
    if constexpr (HasFields<std::remove_reference_t<decltype(m)>>)
      j[f.key] = Walk(m, which, leaf);
    else
      j[f.key] = leaf(f, m);
  });
  return j;
}

template <class T>
nlohmann::json ValueJson(const T& v) {
  if constexpr (kIsOptional<T>) {
    return v.has_value() ? ValueJson(*v) : nlohmann::json();  // null: the context's default
  } else if constexpr (std::is_enum_v<T>) {
    for (const auto& n : EnumNames(v))
      if (n.value == v) return n.name;
    return static_cast<int>(v);  // unreachable for a value of the enum
  } else {
    return v;
  }
}

template <class T>
void ReadValue(const nlohmann::json& j, const std::string& path, T* v) {
  if constexpr (HasFields<T>) {
    if (!j.is_object()) throw std::invalid_argument(path + ": expected an object");
    VisitFields(*v, [&](const FieldInfo& f, auto& m) {
      if (j.contains(f.key)) ReadValue(j[f.key], path + "." + f.key, &m);
    });
  } else if constexpr (kIsOptional<T>) {
    if (j.is_null()) {
      v->reset();
    } else {
      typename T::value_type inner{};
      ReadValue(j, path, &inner);
      *v = inner;
    }
  } else if constexpr (std::is_enum_v<T>) {
    const std::string s = j.get<std::string>();
    for (const auto& n : EnumNames(*v)) {
      if (s == n.name) {
        *v = n.value;
        return;
      }
    }
    throw std::invalid_argument(path + ": unknown value '" + s + "'");
  } else {
    *v = j.get<T>();
  }
}

}  // namespace options_json_internal

// {key: value} for every field of `s` (or only the "what" ones); nested tables become objects,
// enums their names.
template <class S>
nlohmann::json ToJson(const S& s, Fields which = Fields::kAll) {
  return options_json_internal::Walk(s, which, [](const FieldInfo&, const auto& m) {
    return options_json_internal::ValueJson(m);
  });
}

// The same shape as ToJson(s, which) with each field's flag ("--num-mel-bins", or null) as its
// value: which flag sets the field at a path of a configuration.
template <class S>
nlohmann::json FlagsJson(const S& s, Fields which = Fields::kAll) {
  return options_json_internal::Walk(s, which, [](const FieldInfo& f, const auto&) {
    return f.flag != nullptr ? nlohmann::json(f.flag) : nlohmann::json();
  });
}

// Sets the fields of *s present in `j` (absent ones keep their values). InvalidArgument naming
// `where` and the field for a value of the wrong type or an unknown enum name.
template <class S>
Status FromJson(const nlohmann::json& j, const std::string& where, S* s) {
  try {
    options_json_internal::ReadValue(j, where, s);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(where + ": " + e.what());
  }
  return Status::OK();
}

// The first field, in key order (nlohmann::json sorts keys), whose value differs between `now` and
// `stored` (two objects of the same shape), as "a.b.c: <now> (<stored_name>: <stored>)", its path
// ("/a/b/c") in *path; "" when they agree. Keys only in `stored` count as differences too.
std::string FirstDifference(const nlohmann::json& now, const nlohmann::json& stored,
                            const std::string& stored_name, std::string* path);

// The loader's "what" configuration, resolved: the feature arguments as the computer of the kind
// in use resolves them at `sample_rate` Hz (the dataset's; 0 leaves the rate out) under its name
// ("fbank" or "spectrogram"), augmentation options only when the augmentation is on, packing
// only when it is on. Two loaders with equal LoaderConfigJson yield the same batches from the
// same dataset.
nlohmann::json LoaderConfigJson(const LoaderOptions& o, int sample_rate = 0);

}  // namespace sluice::loader
