// shardify text: plain-text files, one record per line (or per document).
#include <filesystem>
#include <memory>

#include "commands.h"
#include "part.h"
#include "features/utf8.h"
#include "line_source.h"
#include "loader/dataset_tokenizer.h"
#include "shards/record.h"

namespace sluice::shardify {
namespace fs = std::filesystem;
namespace {

struct TextArgs {
  WriteArgs write;
  TokenizerArgs tokenizer;
  std::vector<std::string> inputs;
  bool docs = false;
  std::string store;  // with --tokenizer: "ids" (default) or "text"
};

// Documents are stored with their ids followed by the end-of-document id, so a
// language model's packed stream (loader) keeps the boundaries. With store_ids false only the
// count goes to the index (the loader's plan needs it) and the loader tokenizes online with the
// same tokenizer, which it checks against the count.
void ProcessText(const features::Tokenizer* tokenizer, bool store_ids, const InputItem& item,
                 ItemResult* r) {
  size_t bad = 0;
  r->input_bytes = item.text.size() + 1;
  if (!features::ValidUtf8(item.text, &bad)) {
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
  if (tokenizer) {
    std::vector<int32_t> ids;
    Status st = tokenizer->Encode(item.text, &ids);
    if (!st.ok()) {
      r->ok = false;
      r->reason = st.message();
      return;
    }
    if (!tokenizer->encode_ends_document()) ids.push_back(tokenizer->end_of_document_id());
    if (store_ids) b.AddField(shards::FieldType::kTokens, ids.data(), ids.size() * sizeof(int32_t));
    r->tokens = static_cast<uint32_t>(ids.size());
  }
  r->ok = true;
  // The path as given, so that equal file names in different folders stay distinct.
  r->key = item.source + ":" + std::to_string(item.line);
  r->payload = b.data();
}

int Run(const TextArgs& a) {
  IngestOptions opt;
  Status st = MakeIngestOptions(a.write, kDefaultTextZstdLevel, &opt);
  if (!st.ok()) return ReportError(st);
  nlohmann::json inputs = nlohmann::json::array();
  std::error_code ec;
  for (const auto& f : a.inputs) {
    if (!fs::is_regular_file(f, ec))
      return ReportError(fs::exists(f, ec)
                             ? Status::InvalidArgument(f + ": not a regular file (an input is "
                                                           "read twice: count, then records)")
                             : Status::NotFound(f + ": no such input file"));
    inputs.push_back({{"file", fs::absolute(f).string()}, {"bytes", fs::file_size(f, ec)}});
  }
  if (!a.store.empty() && a.tokenizer.spec.empty())
    return ReportError(Status::InvalidArgument("--store " + a.store + " needs --tokenizer"));
  const bool store_ids = a.store != "text";
  DatasetTokenizer tok;
  if (!a.tokenizer.spec.empty()) {
    // Train on every valid item of the input (all parts alike).
    std::vector<std::string> texts;
    LineSource all(a.inputs, a.docs);
    InputItem item;
    while (all.Next(&item, &st)) {
      size_t bad = 0;
      if (features::ValidUtf8(item.text, &bad)) texts.push_back(std::move(item.text));
    }
    if (st.ok()) st = PrepareTokenizer(a.tokenizer, texts, &tok);
    if (!st.ok()) return ReportError(st);
    if (!tok.model_bytes.empty())
      opt.extra_files.emplace_back(tok.file_name, tok.model_bytes);
  }
  opt.progress_what = a.docs ? "documents" : "lines";
  opt.fingerprint = {{"command", "text"},
                     {"inputs", inputs},
                     {"docs", a.docs},
                     {"tokenizer", TokenizerFingerprint(a.tokenizer)}};
  AddWriteFingerprint(opt, &opt.fingerprint);
  if (!store_ids) opt.fingerprint["store"] = "text";  // absent for ids: older journals resume
  shards::Manifest m;
  m.kind = "text";
  m.fields = {"text"};
  // A tokenizer without a "tokens" field: the index holds counts and the loader tokenizes.
  if (tok.tokenizer) {
    if (store_ids) m.fields.push_back("tokens");
    *m.tokenizer = tok.description;
  }
  m.created_by = kVersion;
  *m.source = {{"inputs", a.inputs}, {"docs", a.docs}};
  LineSource source(a.inputs, a.docs);
  IngestSummary summary;
  const features::Tokenizer* t = tok.tokenizer.get();
  st = RunIngest(
      &source,
      [t, store_ids](const InputItem& item, ItemResult* r) { ProcessText(t, store_ids, item, r); },
      opt, m, &summary);
  if (!st.ok()) return ReportError(st);
  PrintSummary(summary, a.write.json);
  return 0;
}

}  // namespace

void RegisterText(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<TextArgs>();
  CLI::App* sub = app->add_subcommand(
      "text", "Shardify plain-text files: one record per line, or per document");
  sub->add_option("-i,--input", args->inputs, "Text files (UTF-8)")->required()->expected(1, -1);
  sub->add_flag("--docs", args->docs,
                "One record per document: runs of lines separated by blank lines");
  AddTokenizerOptions(sub, &args->tokenizer);
  sub->add_option(
         "--store", args->store,
         "With --tokenizer: ids (default) stores each record's token ids with its text; text "
         "stores the text only and its id count in the index, and the loader tokenizes "
         "online with the dataset's tokenizer (packing works on both, with the same sequences)")
      ->check(CLI::IsMember({"ids", "text"}));
  AddWriteOptions(sub, &args->write);
  sub->callback([args, exit_code] { *exit_code = Run(*args); });
}

}  // namespace sluice::shardify
