// Which datasets each Loader keyword applies to. A keyword that does not apply where it is given
// (batch_size, packing's rows per batch, on padded audio batches; num_mel_bins on a text dataset
// or with spectrogram features) would otherwise be read and ignored, so sluice.Loader refuses it
// after opening the dataset, naming what it applies to and, where there is one, the keyword that
// does apply ("use max_batch_size"). One table, by the option's path in LoaderOptions' table
// (loader/options.h); the first entry that is the path or a prefix of it decides.
// Header-only: included by core_loader.cc alone.
#pragma once

#include <pybind11/pybind11.h>

#include <map>
#include <set>
#include <string>
#include <type_traits>

#include "base/fields.h"
#include "kwargs.h"
#include "loader/loader.h"
#include "loader/options.h"

namespace sluice::python {

enum class Scope {
  kAny,          // every dataset
  kAudio,        // audio datasets
  kComputed,     // audio with features computed by the loader (fbank or spectrogram)
  kFbank,        // audio with fbank features
  kSpectrogram,  // audio with spectrogram features
  kPadded,       // padded batches: a row per record (seq_len 0)
  kPacked,       // packed text sequences (seq_len > 0)
};

struct ScopeRule {
  const char* path;     // an option's key path in LoaderOptions' table, or a nested table's
  Scope scope;          // where it applies
  const char* instead;  // the keyword that does what the user likely meant elsewhere, or nullptr
};

inline constexpr ScopeRule kScopeRules[] = {
    {"packing.seq_len", Scope::kAny, nullptr},  // Loader::Open refuses packing of audio itself
    {"packing.batch_size", Scope::kPacked, "max_batch_size"},
    {"packing.shuffle_window", Scope::kPacked, "shuffle_window"},
    {"packing", Scope::kPacked, nullptr},
    {"batching.shuffle", Scope::kAny, nullptr},  // packing reads it too (loader/pack.cc)
    {"batching.max_batch_size", Scope::kPadded, "batch_size"},
    {"batching.shuffle_window", Scope::kPadded, "pack_window"},
    {"batching", Scope::kPadded, nullptr},
    {"features.fbank", Scope::kFbank, nullptr},
    {"features.spectrogram", Scope::kSpectrogram, nullptr},
    {"features", Scope::kComputed, nullptr},
    {"kind", Scope::kAudio, nullptr},
    {"cmvn", Scope::kAudio, nullptr},
    {"spec_augment", Scope::kAudio, nullptr},
    {"spec_augment_options", Scope::kAudio, nullptr},
    {"speed_perturb", Scope::kAudio, nullptr},
    {"speed_perturb_options", Scope::kAudio, nullptr},
    {"waveform_augment", Scope::kAudio, nullptr},
    {"noise_data", Scope::kAudio, nullptr},
    {"rir_data", Scope::kAudio, nullptr},
    {"babble_data", Scope::kAudio, nullptr},
    {"dtype", Scope::kAudio, nullptr},
};

// The first rule for `path` (kAny when none matches).
inline const ScopeRule* RuleOf(const std::string& path) {
  for (const ScopeRule& r : kScopeRules) {
    const std::string p = r.path;
    if (path == p || path.compare(0, p.size() + 1, p + ".") == 0) return &r;
  }
  return nullptr;
}

// keyword -> key path ("num_mel_bins" -> "features.fbank.num_mel_bins"), from the tables.
template <class S>
void KeywordPaths(S* s, const std::string& prefix, std::map<std::string, std::string>* out) {
  VisitFields(*s, [&](const FieldInfo& f, auto& m) {
    using T = std::remove_reference_t<decltype(m)>;
    const std::string path = prefix + f.key;
    if constexpr (HasFields<T>) {
      KeywordPaths(&m, path + ".", out);
    } else {
      std::string name = KeywordOf(f);
      if (name.empty() && IsKeyOnlyKeyword(f)) name = f.key;
      if (!name.empty()) (*out)[name] = path;
    }
  });
}

// What the opened dataset and options are, for the rules.
struct DatasetShape {
  bool audio = false;
  loader::FeatureKind kind = loader::FeatureKind::kFbank;
  uint32_t seq_len = 0;
};

// "" when `scope` applies to `d`, else why not: what it applies to; what `d` is.
inline std::string Mismatch(Scope scope, const DatasetShape& d, const std::string& where) {
  using loader::FeatureKind;
  const std::string kind = std::string("'") + loader::FeatureKindName(d.kind) + "'";
  const bool needs_audio = scope == Scope::kAudio || scope == Scope::kComputed ||
                           scope == Scope::kFbank || scope == Scope::kSpectrogram;
  if (needs_audio && !d.audio) return "applies to audio datasets; " + where + " is a text dataset";
  switch (scope) {
    case Scope::kComputed:
      if (d.kind == FeatureKind::kFbank || d.kind == FeatureKind::kSpectrogram) return "";
      return "applies with features='fbank' or 'spectrogram'; the features here are " + kind;
    case Scope::kFbank:
      if (d.kind == FeatureKind::kFbank) return "";
      return "applies with features='fbank'; the features here are " + kind;
    case Scope::kSpectrogram:
      if (d.kind == FeatureKind::kSpectrogram) return "";
      return "applies with features='spectrogram'; the features here are " + kind;
    case Scope::kPadded:
      if (d.seq_len == 0) return "";
      return "applies to padded batches (seq_len 0), not with packing (seq_len=" +
             std::to_string(d.seq_len) + ")";
    case Scope::kPacked:
      if (d.seq_len > 0) return "";
      return "applies to packed text sequences (seq_len > 0); " + where + " is " +
             (d.audio ? "an audio dataset" : "a text dataset read unpacked (seq_len 0)");
    case Scope::kAny:
    case Scope::kAudio: return "";
  }
  return "";
}

// InvalidArgument for the first keyword in `given` (keys of `kwargs`) that does not apply to `d`.
inline Status CheckKeywordsApply(const py::dict& kwargs, const DatasetShape& d,
                                 const std::string& where) {
  loader::LoaderOptions o;
  std::map<std::string, std::string> paths;
  KeywordPaths(&o, "", &paths);
  for (auto item : kwargs) {
    const std::string name = py::str(item.first);
    const auto it = paths.find(name);
    if (it == paths.end()) continue;
    const ScopeRule* rule = RuleOf(it->second);
    if (rule == nullptr) continue;
    const std::string why = Mismatch(rule->scope, d, where);
    if (why.empty()) continue;
    std::string message = "Loader(): " + name + "=" + std::string(py::repr(item.second)) + " " +
                          why + ", where it would be ignored";
    if (rule->instead != nullptr) message += ". HINT: use " + std::string(rule->instead);
    return Status::InvalidArgument(message);
  }
  return Status::OK();
}

}  // namespace sluice::python
