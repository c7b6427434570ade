#include "loader_flags.h"

#include <algorithm>

#include "options_cli.h"

namespace sluice::tools {

void AddRefusedFlag(CLI::App* app, const std::string& flag, const std::string& reason,
                    bool hidden) {
  CLI::Option* opt = app->add_option_function<std::string>(
      flag, [](const std::string&) {}, reason);
  opt->check(CLI::Validator([reason](std::string&) { return reason; }, "", ""));
  if (hidden) opt->group("");
}

void AddLoaderOptions(CLI::App* app, loader::LoaderOptions* o, const LoaderFlagUse& use) {
  o->use_precomputed = false;
  const auto listed = [](const auto& list, const char* key) {
    return std::any_of(list.begin(), list.end(), [&](const auto& e) {
      if constexpr (std::is_same_v<std::decay_t<decltype(e)>, std::string>) return e == key;
      else return e.first == key;
    });
  };
  AddOptions(app, o, [&](const FieldInfo& f) {
    return !listed(use.own, f.key) && !listed(use.refused, f.key);
  });
  VisitFields(*o, [&](const FieldInfo& f, auto& m) {
    for (const auto& [key, reason] : use.refused) {
      if (key != f.key) continue;
      if constexpr (HasFields<std::remove_reference_t<decltype(m)>>) {
        for (const std::string& flag : Flags(m)) AddRefusedFlag(app, flag, reason, false);
      } else if (f.flag != nullptr) {
        AddRefusedFlag(app, f.flag, reason, false);
      }
    }
  });
  for (const loader::RenamedOption& r : loader::kRenamedFlags)
    AddRefusedFlag(app, r.old_name, std::string(r.old_name) + " was renamed " + r.new_name, true);
}

}  // namespace sluice::tools
