// shardify's subcommands. Each Register* adds one CLI11 subcommand whose
// callback stores its exit code in *exit_code.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "ingest.h"
#include "tokenize.h"

namespace sluice::shardify {

inline constexpr const char* kVersion = "shardify 0.1.0";

// Options shared by `audio` and `text`.
struct WriteArgs {
  std::string out;
  std::string shard_size = "256MiB";
  std::string block_size = "1MiB";
  int zstd_level = 0;  // 0: the kind's default (kDefaultAudioZstdLevel / kDefaultTextZstdLevel)
  int threads = 0;
  std::string part;
  bool resume = false;
  bool overwrite = false;
  bool json = false;
  bool quiet = false;
};

void AddWriteOptions(CLI::App* sub, WriteArgs* a);
void AddTokenizerOptions(CLI::App* sub, TokenizerArgs* a);
// The tokenizer's part of the --resume fingerprint.
nlohmann::json TokenizerFingerprint(const TokenizerArgs& a);
// The writer's part of the --resume fingerprint (shard and block sizes, zstd level, part), added
// to *f beside the command's own keys.
void AddWriteFingerprint(const IngestOptions& opt, nlohmann::json* f);
// zstd levels when --zstd-level is not given. PCM16 audio compresses only about
// 1.36x at level 3, and decoding its Huffman-coded literals then costs a
// quarter of the loader's time per core; level -1 stores 12% more bytes and
// brings the whole loader to within 10% of the bare feature computation
// (docs/shardify.md). Text compresses well and decodes fast at level 3.
inline constexpr int kDefaultAudioZstdLevel = -1;
inline constexpr int kDefaultTextZstdLevel = 3;

// Fills IngestOptions from WriteArgs; InvalidArgument for bad sizes or --part.
// `default_zstd_level` applies when --zstd-level is 0.
Status MakeIngestOptions(const WriteArgs& a, int default_zstd_level, IngestOptions* o);
// Prints "shardify: error: ..." on stderr and returns the exit code for it.
int ReportError(const Status& s);

void RegisterAudio(CLI::App* app, int* exit_code);
void RegisterText(CLI::App* app, int* exit_code);
void RegisterConversations(CLI::App* app, int* exit_code);
void RegisterInfo(CLI::App* app, int* exit_code);
void RegisterVerify(CLI::App* app, int* exit_code);
void RegisterMerge(CLI::App* app, int* exit_code);
void RegisterExport(CLI::App* app, int* exit_code);

}  // namespace sluice::shardify
