// shardify text: plain-text files, one record per line (or per document).
#include <filesystem>
#include <memory>

#include "commands.h"
#include "line_source.h"
#include "shards/record.h"
#include "utf8.h"

namespace sluice::shardify {
namespace fs = std::filesystem;
namespace {

struct TextArgs {
  WriteArgs write;
  std::vector<std::string> inputs;
  bool docs = false;
};

void ProcessText(const InputItem& item, ItemResult* r) {
  size_t bad = 0;
  r->input_bytes = item.text.size() + 1;
  if (!ValidUtf8(item.text, &bad)) {
    r->ok = false;
    r->reason = "invalid UTF-8 at byte " + std::to_string(bad);
    return;
  }
  if (item.text.find_first_not_of(" \t\n") == std::string::npos) {
    r->ok = false;
    r->reason = "empty line";
    return;
  }
  shards::RecordBuilder b;
  b.AddField(shards::FieldType::kText, item.text);
  r->ok = true;
  // The path as given, so that equal file names in different folders stay distinct.
  r->key = item.source + ":" + std::to_string(item.line);
  r->payload = b.data();
}

int Run(const TextArgs& a) {
  IngestOptions opt;
  Status st = MakeIngestOptions(a.write, &opt);
  if (!st.ok()) return ReportError(st);
  nlohmann::json inputs = nlohmann::json::array();
  std::error_code ec;
  for (const auto& f : a.inputs) {
    if (!fs::is_regular_file(f, ec)) return ReportError(Status::NotFound(f + ": no such input file"));
    inputs.push_back({{"file", fs::absolute(f).string()}, {"bytes", fs::file_size(f, ec)}});
  }
  opt.progress_what = a.docs ? "documents" : "lines";
  opt.fingerprint = {{"command", "text"},
                     {"inputs", inputs},
                     {"docs", a.docs},
                     {"shard_size", opt.writer.shard_size},
                     {"block_size", opt.writer.shard.block_size},
                     {"zstd_level", opt.writer.shard.zstd_level},
                     {"part", a.write.part}};
  shards::Manifest m;
  m.kind = "text";
  m.fields = {"text"};
  m.created_by = kVersion;
  m.source = {{"inputs", a.inputs}, {"docs", a.docs}};
  LineSource source(a.inputs, a.docs);
  IngestSummary summary;
  st = RunIngest(&source, ProcessText, opt, m, &summary);
  if (!st.ok()) return ReportError(st);
  PrintSummary(summary, a.write.json);
  return 0;
}

}  // namespace

void RegisterText(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<TextArgs>();
  CLI::App* sub = app->add_subcommand("text", "Shardify plain-text files: one record per line, or per document");
  sub->add_option("-i,--input", args->inputs, "Text files (UTF-8)")->required()->expected(1, -1);
  sub->add_flag("--docs", args->docs, "One record per document: runs of lines separated by blank lines");
  AddWriteOptions(sub, &args->write);
  sub->callback([args, exit_code] { *exit_code = Run(*args); });
}

}  // namespace sluice::shardify
