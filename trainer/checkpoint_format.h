// Constants of the sluice-train checkpoint file, shared by its writer and reader.
// docs/formats/checkpoint.md is the byte-level spec; change both together.
#pragma once

#include <cstdint>

namespace sluice::train::ckpt {

inline constexpr char kMagic[8] = {'S', 'L', 'U', 'I', 'C', 'E', 'C', 'K'};     // file start
inline constexpr char kEndMagic[8] = {'S', 'L', 'C', 'K', 'E', 'N', 'D', '\0'};  // file end
inline constexpr uint32_t kVersion = 1;
inline constexpr uint64_t kHeaderBytes = 32;
inline constexpr uint64_t kSectionHeaderBytes = 16;
inline constexpr uint64_t kFooterBytes = 16;
inline constexpr uint64_t kAlignment = 8;  // every section starts on a multiple of 8

// Section tags (four ASCII bytes, in file order). Every version-1 file holds exactly these, once
// each, in this order.
inline constexpr char kConfigTag[4] = {'C', 'O', 'N', 'F'};  // JSON: model, run options, tokenizer
inline constexpr char kTokenizerTag[4] = {'T', 'O', 'K', 'N'};  // fingerprint + vocabulary size
inline constexpr char kParamsTag[4] = {'P', 'A', 'R', 'M'};     // fp32 flat parameter buffer
inline constexpr char kAdamTag[4] = {'A', 'D', 'A', 'M'};       // AdamW step, m, v
inline constexpr char kLoaderTag[4] = {'L', 'O', 'A', 'D'};     // loader ResumeState JSON
inline constexpr char kCountersTag[4] = {'C', 'N', 'T', 'R'};   // step, seed, epoch accumulators

}  // namespace sluice::train::ckpt
