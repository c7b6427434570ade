// One description per options struct, so its flags, JSON and checks cannot drift apart.
// Beside each options struct sits a
//
//   template <OptionsOf<S> O, class V> void VisitFields(O& o, V&& v)
//
// that calls v(FieldInfo, member) for every field in order: the table of its JSON key, flag, help
// and whether it changes the data ("what") or only the speed ("how"). Everything else is derived
// from it: command-line flags (tools/common/options_cli.h), JSON for manifests and checkpoints
// and the resume fingerprint (loader/options_json.h). This header stays free of CLI11 and JSON so
// that the library headers that hold the tables stay light.
#pragma once

#include <concepts>
#include <limits>
#include <optional>
#include <type_traits>

namespace sluice {

enum class Affects {
  kWhat,  // changes the data or the results: part of fingerprints, a resume must repeat it
  kHow,   // only speed, memory or where output goes: free to change
};

struct FieldInfo {
  const char* key;   // JSON key: the member's name
  const char* flag;  // command-line flag ("--num-mel-bins"); nullptr: set another way (a shared
                     // flag, the dataset), never a flag of its own
  const char* help;  // with the unit; the default is the member's initial value
  Affects affects = Affects::kWhat;
  double min = -std::numeric_limits<double>::infinity();  // accepted range of a number
  double max = std::numeric_limits<double>::infinity();
  bool is_switch =
      false;  // a bool given alone (--json) rather than with a value (--use-energy true)
};

// The name of one value of an enum. Each enum that appears in a table has an
// `EnumNames(E)` found by argument-dependent lookup, returning a range of these (the first
// name of a value is the one written).
template <class E>
struct EnumName {
  const char* name;
  E value;
};

// `O` is S or const S: one VisitFields serves readers and writers.
template <class O, class S>
concept OptionsOf = std::same_as<std::remove_const_t<O>, S>;

// std::optional members: "not given, the default of the context" (feature_options.h).
template <class T>
constexpr bool kIsOptional = false;
template <class T>
constexpr bool kIsOptional<std::optional<T>> = true;

// True for a member that is itself an options struct with a table (visited as a nested object).
template <class T>
concept HasFields = requires(T& t) {
  VisitFields(t, [](const FieldInfo&, auto&) {});
};

}  // namespace sluice
