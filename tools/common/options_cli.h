// Command-line flags of any options struct with a table (base/fields.h): one add_option per field
// that has a flag, its help, its range and, for enumerations, a CheckedTransformer from the names
// in EnumNames. Only the tools include CLI11; library headers hold the tables alone.
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "base/fields.h"

namespace sluice::tools {

// What a front end returns after CLI11 refused its command line or answered --help: the message
// is printed by CLI11, and the status is the tools' documented one (0 after --help, 2 for a bad
// command line) instead of CLI11's own codes (105, 109, ...), which scripts cannot tell from a
// crash's.
inline int CommandLineExit(const CLI::App& app, const CLI::ParseError& e) {
  return app.exit(e) == 0 ? 0 : 2;
}

// Fields for which `keep` returns false are left out (a tool that sets them itself); for a
// nested table, all of its fields.
template <class S, class Keep>
void AddOptions(CLI::App* app, S* s, Keep&& keep) {
  VisitFields(*s, [&](const FieldInfo& f, auto& m) {
    using T = std::remove_reference_t<decltype(m)>;
    if (!keep(f)) return;
    if constexpr (HasFields<T>) {
      AddOptions(app, &m, keep);
    } else {
      if (f.flag == nullptr) return;
      if constexpr (std::is_same_v<T, bool>) {
        if (f.is_switch) {
          app->add_flag(f.flag, m, f.help);
          return;
        }
      }
      CLI::Option* opt = app->add_option(f.flag, m, f.help);
      if constexpr (kIsOptional<T>) {
        // no default: left out, the option means "the default of the kind" (feature_options.h)
      } else if constexpr (std::is_same_v<T, bool>) {
        opt->default_str(m ? "true" : "false");
      } else if constexpr (std::is_enum_v<T>) {
        std::map<std::string, T> names;
        std::string shown, value;  // "{fbank,spectrogram}" and the default's name, not numbers
        for (const auto& n : EnumNames(m)) {
          names.emplace(n.name, n.value);
          shown += (shown.empty() ? "{" : ",") + std::string(n.name);
          if (n.value == m && value.empty()) value = n.name;
        }
        opt->transform(CLI::CheckedTransformer(names).description(""));
        opt->type_name(shown + "}");
        opt->default_str(value);
      } else if constexpr (std::is_arithmetic_v<T>) {
        opt->capture_default_str();
        if (std::isfinite(f.min) || std::isfinite(f.max)) opt->check(CLI::Range(f.min, f.max));
      } else {
        opt->capture_default_str();
      }
    }
  });
}

template <class S>
void AddOptions(CLI::App* app, S* s) {
  AddOptions(app, s, [](const FieldInfo&) { return true; });
}

// Every flag of `s`'s table (nested tables included), for tests and docs that check --help.
template <class S>
std::vector<std::string> Flags(S& s) {
  std::vector<std::string> out;
  VisitFields(s, [&](const FieldInfo& f, auto& m) {
    using T = std::remove_reference_t<decltype(m)>;
    if constexpr (HasFields<T>) {
      for (std::string& flag : Flags(m)) out.push_back(std::move(flag));
    } else if (f.flag != nullptr) {
      out.emplace_back(f.flag);
    }
  });
  return out;
}

}  // namespace sluice::tools
