// What the importers may do beyond reading their own files.
#pragma once

#include <string>

namespace sluice::importers {

struct ImportOptions {
  // Run shell commands that make audio (Kaldi "cmd |" wav.scp entries, Lhotse command sources).
  // Off: such an item is rejected naming the command, never run (a manifest is data, and a
  // command in it runs with the user's rights).
  bool allow_pipes = false;
  // Relative audio paths of Lhotse and Kaldi manifests resolve here, as the producers resolve
  // them (the current directory by default).
  std::string base_dir;
};

}  // namespace sluice::importers
