// Transcript normalisation applied before tokenization, the same offline
// (shardify) and online (loader), so ids never depend on where they were made.
#pragma once

#include <string>
#include <string_view>

namespace sluice::features {

struct TextNormalizeOptions {
  bool lowercase = true;            // A-Z and Latin-1 / Latin Extended-A capitals to lower case
  bool strip_punctuation = true;    // drop ASCII and common Unicode punctuation, keep apostrophes
                                    // inside words ("don't") and hyphens between letters
  bool collapse_whitespace = true;  // runs of whitespace to one space; none at either end
};

// `text` must be valid UTF-8 (ValidUtf8); the result is valid UTF-8.
std::string NormalizeText(std::string_view text, const TextNormalizeOptions& options);

}  // namespace sluice::features
