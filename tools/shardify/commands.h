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
  int zstd_level = 3;
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
// Fills IngestOptions from WriteArgs; InvalidArgument for bad sizes or --part.
Status MakeIngestOptions(const WriteArgs& a, IngestOptions* o);
// Prints "shardify: error: ..." on stderr and returns the exit code for it.
int ReportError(const Status& s);

void RegisterAudio(CLI::App* app, int* exit_code);
void RegisterText(CLI::App* app, int* exit_code);
void RegisterInfo(CLI::App* app, int* exit_code);
void RegisterVerify(CLI::App* app, int* exit_code);
void RegisterMerge(CLI::App* app, int* exit_code);

}  // namespace sluice::shardify
