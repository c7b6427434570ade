// Character and word error rates of greedy transcripts against references: the edit distance
// (Levenshtein: substitutions, insertions and deletions all cost 1) summed over utterances,
// divided by the summed reference length. Characters are Unicode code points; words are runs of
// non-space bytes. Pooling the edits before dividing (rather than averaging per-utterance rates)
// is what Kaldi's compute-wer and jiwer report, so short utterances do not dominate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::train {

// Levenshtein distance between two sequences; O(min-side) memory.
size_t EditDistance(const std::vector<char32_t>& ref, const std::vector<char32_t>& hyp);
size_t EditDistance(const std::vector<std::string_view>& ref,
                    const std::vector<std::string_view>& hyp);

// Code points of `text`; invalid UTF-8 bytes count as one unit each (a transcript decoded by a
// tokenizer is valid; this only keeps the metric total).
std::vector<char32_t> CodePoints(std::string_view text);
// Whitespace-separated words (views into `text`).
std::vector<std::string_view> Words(std::string_view text);

struct ErrorCounts {
  uint64_t char_edits = 0, chars = 0;  // over code points, spaces included
  uint64_t word_edits = 0, words = 0;
  uint64_t utterances = 0;

  void Add(std::string_view reference, std::string_view hypothesis);
  // Edits / reference length; 0 for an empty reference set. Above 1 when the hypotheses are
  // longer than the references and mostly wrong.
  double cer() const { return chars ? static_cast<double>(char_edits) / chars : 0.0; }
  double wer() const { return words ? static_cast<double>(word_edits) / words : 0.0; }
};

}  // namespace sluice::train
