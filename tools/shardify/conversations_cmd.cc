// shardify conversations: a JSONL of conversations (speech-LLM samples: a system prompt, then
// user and assistant turns of text and/or audio) into conversation records
// (shards/conversation.h, docs/conversations.md). The line is parsed by conversation_line.cc
// (the fuzzer's entry point). Audio is decoded, downmixed and resampled as `shardify audio`
// does (features/: libsndfile, soxr), turn by turn; text is tokenized with --tokenizer. The
// ingest engine is audio's and text's (ingest.h): parallel, byte-identical for any -j,
// resumable, every line a record or a reject with its reason.
#include <filesystem>
#include <memory>

#include "commands.h"
#include "conversation_line.h"
#include "features/audio.h"
#include "features/flac.h"
#include "features/pcm.h"
#include "features/resample.h"
#include "features/utf8.h"
#include "line_source.h"
#include "manifest_line.h"
#include "part.h"
#include "shards/conversation.h"
#include "shards/record.h"

namespace sluice::shardify {
namespace fs = std::filesystem;
namespace {

struct ConversationArgs {
  WriteArgs write;
  TokenizerArgs tokenizer;
  std::vector<std::string> inputs;
  int sample_rate = 16000;
  std::string codec = "pcm16";
  double max_duration = 600;    // seconds, per audio turn
  double min_duration = 0.025;  // seconds, per audio turn
  bool allow_truncated_audio = false;
};

struct ConversationConfig {
  int sample_rate = 16000;
  bool flac = false;
  double max_duration = 600;
  double min_duration = 0.025;
  bool allow_truncated_audio = false;
  const features::Tokenizer* tokenizer = nullptr;
};

// Per-thread scratch, reused across conversations.
struct Scratch {
  features::DecodedAudio decoded;
  std::vector<float> resampled;
  std::vector<int16_t> pcm;  // every audio turn's samples, in turn order
  std::vector<uint8_t> flac;
  std::vector<int32_t> ids;  // every text turn's ids, in turn order
  std::vector<int32_t> turn_ids;
  std::string text;  // every turn's text, in turn order
  std::vector<shards::TurnEntry> entries;
  std::string table;
  shards::RecordBuilder record;
};

bool Reject(ItemResult* r, std::string why) {
  r->ok = false;
  r->reason = std::move(why);
  return false;
}

// The audio of turn `i` (the line's numbering) appended to s.pcm (and its sample count to
// *samples); false when the conversation ends here (rejected, or r->fault for a machine fault).
bool AddAudio(const ConversationConfig& cfg, const std::string& base_dir,
              const ConversationTurnIn& in, size_t i, Scratch& s, uint32_t* samples,
              ItemResult* r) {
  const std::string turn = "turn " + std::to_string(i) + ": ";
  const std::string path = in.audio_path[0] == '/' ? in.audio_path : base_dir + "/" + in.audio_path;
  features::DecodeOptions opt = in.decode;
  opt.allow_truncated = cfg.allow_truncated_audio;
  opt.max_seconds = cfg.max_duration;
  opt.max_seconds_name = "--max-duration";
  Status st = features::DecodeFile(path, opt, &s.decoded);
  r->input_bytes += s.decoded.bytes_read;
  if (st.IsIOError()) {
    r->fault = st;
    return false;
  }
  if (!st.ok()) return Reject(r, turn + st.message());
  if (s.decoded.samples.empty()) return Reject(r, turn + path + ": zero-length audio");
  if (!features::AllFinite(s.decoded.samples.data(), s.decoded.samples.size()))
    return Reject(r, turn + path + ": NaN or Inf samples");
  const double seconds = double(s.decoded.samples.size()) / s.decoded.sample_rate;
  if (seconds > cfg.max_duration)
    return Reject(r, turn + path + ": " + FormatSeconds(seconds) +
                         " s of audio exceeds --max-duration " + FormatSeconds(cfg.max_duration));
  if (seconds < cfg.min_duration)
    return Reject(r, turn + path + ": " + FormatSeconds(seconds) +
                         " s of audio is below --min-duration " + FormatSeconds(cfg.min_duration));
  if (const size_t clipped =
          features::CountBeyondFullScale(s.decoded.samples.data(), s.decoded.samples.size())) {
    r->clipped_samples += clipped;
    if (r->warning.empty())
      r->warning =
          path + ": " + std::to_string(clipped) + " samples beyond full scale clipped to [-1, 1]";
  }
  st = features::Resample(s.decoded.samples.data(), s.decoded.samples.size(), s.decoded.sample_rate,
                          cfg.sample_rate, &s.resampled);
  if (!st.ok()) return Reject(r, turn + path + ": resample: " + st.message());
  if (s.resampled.empty()) return Reject(r, turn + path + ": zero-length audio after resampling");
  if (s.resampled.size() > UINT32_MAX)
    return Reject(r, turn + path + ": over 2^32 samples in one turn");
  const size_t at = s.pcm.size();
  s.pcm.resize(at + s.resampled.size());
  features::FloatToPcm16(s.resampled.data(), s.resampled.size(), s.pcm.data() + at);
  *samples = static_cast<uint32_t>(s.resampled.size());
  return true;
}

void ProcessConversation(const ConversationConfig& cfg, const InputItem& item, ItemResult* r) {
  thread_local Scratch s;
  ConversationLine line;
  std::string why;
  const std::string default_key =
      fs::path(item.source).filename().string() + ":" + std::to_string(item.line);
  if (!ParseConversationLine(item.text, default_key, &line, &why)) {
    Reject(r, std::move(why));
    return;
  }
  const std::string base_dir = fs::absolute(item.source).parent_path().string();
  s.pcm.clear();
  s.ids.clear();
  s.text.clear();
  s.entries.clear();
  for (size_t i = 0; i < line.turns.size(); ++i) {
    const ConversationTurnIn& in = line.turns[i];
    shards::TurnEntry e;
    e.role = in.role;
    e.text_bytes = static_cast<uint32_t>(in.text.size());
    if (cfg.tokenizer && !in.text.empty()) {
      s.turn_ids.clear();
      Status st = cfg.tokenizer->Encode(in.text, &s.turn_ids);
      if (!st.ok()) {
        Reject(r, "turn " + std::to_string(JsonTurnIndex(line, i)) + ": text: " + st.message());
        return;
      }
      e.tokens = static_cast<uint32_t>(s.turn_ids.size());
      s.ids.insert(s.ids.end(), s.turn_ids.begin(), s.turn_ids.end());
    }
    s.text += in.text;
    if (!in.audio_path.empty()) {
      e.has_audio = true;
      if (!AddAudio(cfg, base_dir, in, JsonTurnIndex(line, i), s, &e.samples, r)) return;
    }
    s.entries.push_back(e);
  }
  s.table.clear();
  shards::EncodeTurnTable(s.entries, &s.table);
  s.record.Clear();
  s.record.AddField(shards::FieldType::kTurns, s.table);
  s.record.AddField(shards::FieldType::kText, s.text);
  if (cfg.tokenizer)
    s.record.AddField(shards::FieldType::kTokens, s.ids.data(), s.ids.size() * sizeof(int32_t));
  if (cfg.flac && !s.pcm.empty()) {
    Status st = features::EncodeFlac(s.pcm.data(), s.pcm.size(), cfg.sample_rate, &s.flac);
    if (!st.ok()) {
      Reject(r, "FLAC encode: " + st.message());
      return;
    }
    s.record.AddField(shards::FieldType::kAudioFlac, s.flac.data(), s.flac.size());
  } else {
    // Also for a conversation without audio: an empty field, so every record has the fields
    // manifest.json lists.
    s.record.AddField(cfg.flac ? shards::FieldType::kAudioFlac : shards::FieldType::kAudioPcm16,
                      s.pcm.data(), s.pcm.size() * sizeof(int16_t));
  }
  if (s.ids.size() > UINT32_MAX) {
    Reject(r, "over 2^32 token ids");
    return;
  }
  r->ok = true;
  r->key = std::move(line.key);
  r->duration = s.pcm.size();
  r->tokens = static_cast<uint32_t>(s.ids.size());
  r->aux = s.table;
  r->payload = s.record.data();
}

// Every turn's text of every parsable line: what a tokenizer is trained on.
Status CollectTexts(const ConversationArgs& a, std::vector<std::string>* texts) {
  LineSource source(a.inputs, false);
  InputItem item;
  Status st;
  ConversationLine line;
  std::string why;
  while (source.Next(&item, &st)) {
    if (!ParseConversationLine(item.text, "k", &line, &why)) continue;
    for (const ConversationTurnIn& t : line.turns)
      if (!t.text.empty()) texts->push_back(t.text);
  }
  return st;
}

int Run(const ConversationArgs& a) {
  IngestOptions opt;
  Status st = MakeIngestOptions(a.write, kDefaultAudioZstdLevel, &opt);
  if (!st.ok()) return ReportError(st);
  // CLI11's range checks let NaN through (every comparison with it is false).
  if (!(a.max_duration > 0) || !(a.min_duration >= 0))
    return ReportError(Status::InvalidArgument(
        "--max-duration and --min-duration must be numbers of seconds (not nan)"));
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
  // The chat template places the special tokens (docs/conversations.md); the post-processor's
  // would land around every turn, e.g. a <|begin_of_text|> before each answer.
  if (a.tokenizer.add_special_tokens)
    return ReportError(Status::InvalidArgument(
        "--add-special-tokens true: a conversation's turns are tokenized without the "
        "post-processor's tokens; the chat template places the special tokens "
        "(docs/conversations.md)"));
  ConversationConfig cfg;
  cfg.sample_rate = a.sample_rate;
  cfg.flac = a.codec == "flac";
  cfg.max_duration = a.max_duration;
  cfg.min_duration = a.min_duration;
  cfg.allow_truncated_audio = a.allow_truncated_audio;
  DatasetTokenizer tok;
  if (!a.tokenizer.spec.empty()) {
    std::vector<std::string> texts;
    st = CollectTexts(a, &texts);
    if (st.ok()) st = PrepareTokenizer(a.tokenizer, texts, &tok);
    if (!st.ok()) return ReportError(st);
    cfg.tokenizer = tok.tokenizer.get();
    if (!tok.model_bytes.empty()) opt.extra_files.emplace_back(tok.file_name, tok.model_bytes);
  }
  opt.progress_what = "conversations";
  opt.fingerprint = {{"command", "conversations"},
                     {"inputs", inputs},
                     {"sample_rate", a.sample_rate},
                     {"codec", a.codec},
                     {"max_duration", a.max_duration},
                     {"min_duration", a.min_duration},
                     {"allow_truncated_audio", a.allow_truncated_audio},
                     {"tokenizer", TokenizerFingerprint(a.tokenizer)}};
  AddWriteFingerprint(opt, &opt.fingerprint);
  shards::Manifest m;
  m.kind = "conversation";
  m.sample_rate = a.sample_rate;
  m.codec = a.codec;
  m.fields = {"turns", "text", "audio"};
  if (tok.tokenizer) {
    m.fields.push_back("tokens");
    *m.tokenizer = tok.description;
  }
  m.created_by = kVersion;
  *m.source = {{"inputs", a.inputs}};
  LineSource source(a.inputs, false);
  IngestSummary summary;
  st = RunIngest(
      &source, [&cfg](const InputItem& item, ItemResult* r) { ProcessConversation(cfg, item, r); },
      opt, m, &summary);
  if (!st.ok()) return ReportError(st);
  PrintSummary(summary, a.write.json);
  return 0;
}

}  // namespace

void RegisterConversations(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<ConversationArgs>();
  CLI::App* sub = app->add_subcommand(
      "conversations",
      "Shardify a JSONL of conversations (system prompt, user/assistant turns of text and/or "
      "audio; ShareGPT-like or NeMo multi-turn spellings) into conversation records "
      "(docs/conversations.md)");
  sub->add_option("inputs", args->inputs, "INPUT...: the conversations JSONL file(s)")
      ->required()
      ->expected(1, -1);
  sub->add_option("-r,--sample-rate", args->sample_rate, "Resample every audio turn to this rate")
      ->check(CLI::Range(1000, 384000))
      ->capture_default_str();
  sub->add_option("--codec", args->codec,
                  "Audio in shards: pcm16 (fast to read) or flac (about half the disk)")
      ->check(CLI::IsMember({"pcm16", "flac"}))
      ->capture_default_str();
  sub->add_option("--max-duration", args->max_duration,
                  "Reject a conversation with an audio turn longer than this (seconds)")
      ->check(CLI::Range(1e-3, kMaxManifestSeconds))
      ->capture_default_str();
  sub->add_option("--min-duration", args->min_duration,
                  "Reject a conversation with an audio turn shorter than this (seconds)")
      ->check(CLI::Range(0.0, kMaxManifestSeconds))
      ->capture_default_str();
  sub->add_flag("--allow-truncated-audio", args->allow_truncated_audio,
                "Keep what a WAV/FLAC/AIFF file holds when its header declares more");
  args->tokenizer.add_special_tokens = false;  // before AddTokenizerOptions shows the default
  AddTokenizerOptions(sub, &args->tokenizer);
  AddWriteOptions(sub, &args->write);
  sub->callback([args, exit_code] { *exit_code = Run(*args); });
}

}  // namespace sluice::shardify
