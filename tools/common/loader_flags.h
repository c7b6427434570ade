// The loader's flags, the same in every tool that runs a loader (sluice-bench epoch,
// sluice-train): every flag of LoaderOptions' table (loader/options.h: --features, --cmvn,
// --threads, --max-frames, --spec-augment, ...), the feature arguments' among them
// (loader/feature_args.h: --frame-length, --num-mel-bins, ...). The tool resolves nothing:
// Loader::Open resolves the feature arguments at the dataset's rate and checks them.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

#include "loader/options.h"

namespace sluice::tools {

// What a tool does with the loader fields it does not take from their flags, by key (the loader
// table's own keys: seed, rank, world, ...). A field named in neither list has its flag.
struct LoaderFlagUse {
  // Keys the tool sets itself from a flag of its own with the same name and meaning (sluice-train's
  // --seed keys its model too): the loader table's flag is left out.
  std::vector<std::string> own;
  // Keys the tool cannot take from the command line, with the reason: the flag is accepted by the
  // parser and fails with "--flag: reason" (a command-line error), never read and ignored.
  std::vector<std::pair<std::string, std::string>> refused;
};

// Adds the flags to `app`, and the flags' former names (loader::kRenamedFlags), hidden, which
// fail naming the new one ("--buckets was renamed --num-buckets", a command-line error). Sets
// o->use_precomputed false: on the command line --features decides (precomputed: the dataset's
// stored features).
void AddLoaderOptions(CLI::App* app, loader::LoaderOptions* o, const LoaderFlagUse& use = {});

// A flag that fails with "--flag: reason" when given, hidden from --help when `hidden`.
void AddRefusedFlag(CLI::App* app, const std::string& flag, const std::string& reason, bool hidden);

}  // namespace sluice::tools
