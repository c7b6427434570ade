// sluice-bench conversations: the speech-LLM figures of docs/conversations.md ("Figures").
//
//   sluice-bench conversations write DIR [--conversations N] [--payload]
//       N synthetic conversations (a system prompt sometimes, one to three exchanges, user turns
//       of 0.5 to 20 s of audio with or without text, assistant answers of 2 to 120 tokens) with
//       the writer API. Without --payload each record's payload is a placeholder and only the
//       index is real (turn tables in its aux area): enough to plan, not to load. With it, the
//       records hold their turns' text, ids and 16 kHz PCM, as shardify conversations writes.
//       Also writes DIR/template.json (ids given, so no tokenizer runs).
//   sluice-bench conversations plan DIR [--seq-len L] [--max-padded-sum S] [--num-buckets K]
//       From the index alone: the time and peak memory (this process's peak RSS, which does
//       nothing else) to open the dataset, cost every conversation and plan the epoch's packed
//       rows, then the padding waste of the three ways to batch the same conversations:
//       packed rows of L LLM tokens (best_fit), 2-D buckets on (encoder frames, LLM tokens) and
//       1-D buckets on encoder frames (audio duration), the padded ones under the same budget
//       of rows x (longest frames + longest tokens).
//   sluice-bench conversations epoch DIR [--threads T] [--seq-len L]
//       One packed epoch through the Loader (a --payload dataset): conversations/s and LLM
//       tokens/s, and each per decode thread.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "commands.h"
#include "features/encoder_frames.h"
#include "features/text_normalize.h"
#include "loader/conversation_plan.h"
#include "loader/dataset_tokenizer.h"
#include "loader/loader.h"
#include "loader/options.h"
#include "loader/plan.h"
#include "shards/conversation.h"
#include "shards/dataset.h"
#include "shards/dataset_writer.h"
#include "shards/manifest.h"
#include "shards/record.h"

namespace sluice::bench {
namespace {

constexpr int kRate = 16000;
// The template: ids given, so resolving it needs no text tokenized.
constexpr const char* kTemplate =
    R"({"roles": {"system": {"prefix": {"ids": [3, 4]}, "suffix": {"ids": [5]}},
                  "user": {"prefix": {"ids": [3, 6]}, "suffix": {"ids": [5]},
                           "audio_prefix": {"ids": [7]}, "audio_suffix": {"ids": [8]}},
                  "assistant": {"prefix": {"ids": [3, 9]}, "suffix": {"ids": [5]}}},
        "placeholder": {"ids": [10]}})";

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double PeakRssMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

int Fail(const Status& st) {
  std::fprintf(stderr, "sluice-bench conversations: %s\n", st.ToString().c_str());
  return 1;
}

std::vector<shards::TurnEntry> DrawTurns(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> coin(0, 1), exchanges(1, 3), prompt(3, 40), answer(2, 120);
  std::uniform_real_distribution<double> seconds(0.5, 20.0);
  std::vector<shards::TurnEntry> turns;
  auto text = [](shards::Role r, uint32_t n) { return shards::TurnEntry{r, false, n, n, 0}; };
  if (coin(rng)) turns.push_back(text(shards::Role::kSystem, static_cast<uint32_t>(prompt(rng))));
  const int n = exchanges(rng);
  for (int e = 0; e < n; ++e) {
    shards::TurnEntry u = text(shards::Role::kUser, coin(rng) ? prompt(rng) : 0);
    u.has_audio = e == 0 || coin(rng);
    if (u.has_audio) u.samples = static_cast<uint32_t>(seconds(rng) * kRate);
    if (!u.has_audio && u.tokens == 0) u.tokens = u.text_bytes = 5;
    turns.push_back(u);
    turns.push_back(text(shards::Role::kAssistant, static_cast<uint32_t>(answer(rng))));
  }
  return turns;
}

int Write(const std::string& dir, uint64_t conversations, bool payload, uint64_t seed) {
  const auto t0 = std::chrono::steady_clock::now();
  std::filesystem::create_directories(dir);
  shards::DatasetWriterOptions opt;
  shards::DatasetWriter w(dir, opt);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> letter(0, 25), noise(-300, 300);
  uint64_t tokens = 0, samples = 0;
  std::string table, text;
  std::vector<int32_t> ids;
  std::vector<int16_t> pcm;
  for (uint64_t i = 0; i < conversations; ++i) {
    const std::vector<shards::TurnEntry> turns = DrawTurns(rng);
    table.clear();
    shards::EncodeTurnTable(turns, &table);
    uint32_t n_tokens = 0;
    uint64_t n_samples = 0;
    for (const shards::TurnEntry& t : turns) {
      n_tokens += t.tokens;
      n_samples += t.samples;
    }
    std::string record = "index only";
    if (payload) {
      text.clear();
      ids.clear();
      pcm.clear();
      for (const shards::TurnEntry& t : turns) {
        for (uint32_t k = 0; k < t.tokens; ++k) {
          const int c = letter(rng);
          text.push_back(static_cast<char>('a' + c));
          ids.push_back(c + 2);  // the char vocabulary's ids
        }
        for (uint32_t k = 0; k < t.samples; ++k) pcm.push_back(static_cast<int16_t>(noise(rng)));
      }
      shards::RecordBuilder rb;
      rb.AddField(shards::FieldType::kTurns, table);
      rb.AddField(shards::FieldType::kText, text);
      rb.AddField(shards::FieldType::kTokens, ids.data(), ids.size() * sizeof(int32_t));
      rb.AddField(shards::FieldType::kAudioPcm16, pcm.data(), pcm.size() * sizeof(int16_t));
      record.assign(rb.data());
    }
    const std::string key = "conv-" + std::to_string(i);
    Status st = w.Add({key, n_samples, n_tokens, table}, record);
    if (!st.ok()) return Fail(st);
    tokens += n_tokens;
    samples += n_samples;
  }
  Status st = w.Finish();
  if (!st.ok()) return Fail(st);
  shards::Manifest m;
  m.kind = "conversation";
  m.fields = {"turns", "text", "tokens", "audio"};
  m.sample_rate = kRate;
  m.codec = "pcm16";
  std::vector<std::string> vocab;
  for (char c = 'a'; c <= 'z'; ++c) vocab.emplace_back(1, c);
  features::TextNormalizeOptions norm;
  *m.tokenizer = nlohmann::json{{"type", "char"},
                                {"normalize", loader::TextNormalizeToJson(norm)},
                                {"vocab", vocab},
                                {"vocab_size", vocab.size() + 2},
                                {"blank_id", features::kBlankId},
                                {"end_of_document_id", features::kEndOfDocumentId}};
  m.records = conversations;
  m.tokens = tokens;
  m.shards = w.shards();
  st = shards::SaveManifest(dir, m);
  if (st.ok()) st = WriteFileAtomic(dir + "/template.json", kTemplate);
  if (!st.ok()) return Fail(st);
  std::printf("wrote %llu conversations (%s), %.1f h of audio, %llu text tokens, in %.1f s\n",
              static_cast<unsigned long long>(conversations),
              payload ? "with payloads" : "index only", static_cast<double>(samples) / kRate / 3600,
              static_cast<unsigned long long>(tokens), Since(t0));
  return 0;
}

// Padding of a padded plan over two tensors: frames [rows, longest] and tokens [rows, longest].
struct Padded {
  uint64_t cells = 0, used = 0, token_cells = 0, tokens = 0, batches = 0;
};
Padded PaddedWaste(const loader::IndexColumns& index, const loader::EpochPlan& plan) {
  Padded p;
  for (const loader::PlannedBatch& b : plan.batches) {
    uint64_t longest_t = 0;
    for (uint64_t e = b.first; e < b.first + b.entries; ++e) {
      const uint64_t r = plan.records[e];
      longest_t = std::max<uint64_t>(longest_t, index.tokens[r]);
      p.used += index.length[r] + index.tokens[r];
      p.tokens += index.tokens[r];
    }
    p.cells += b.rows * (b.max_length + longest_t);
    p.token_cells += b.rows * longest_t;
    ++p.batches;
  }
  return p;
}

int Plan(const std::string& dir, uint32_t seq_len, uint64_t budget, uint32_t buckets, uint32_t wait,
         const std::string& encoder) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<shards::Dataset> ds;
  Status st = shards::Dataset::Open(dir, {}, &ds);
  if (!st.ok()) return Fail(st);
  std::string text;
  st = ReadFileToString(dir + "/template.json", &text);
  loader::ConversationSpec spec;
  if (st.ok()) st = loader::ParseChatTemplate(text, "template.json", &spec.chat);
  if (st.ok()) st = features::ResolveEncoderFramesSpec(encoder, &spec.frames);
  if (!st.ok()) return Fail(st);
  spec.chat.resolved = true;  // every piece is given as ids
  std::vector<const shards::ShardReader*> shards;
  for (size_t s = 0; s < ds->num_shards(); ++s) shards.push_back(&ds->shard(s));
  loader::IndexColumns index;
  loader::BuildIndexColumns(
      *ds, [](const shards::RecordEntry&) { return uint64_t{0}; }, &index);
  loader::ConversationColumns columns;
  st = loader::ConversationIndexColumns(shards, spec.chat, spec.frames, true, &columns);
  if (st.ok()) st = loader::SetConversationTokens(columns.llm_tokens, &index);
  if (!st.ok()) return Fail(st);
  const double open_seconds = Since(t0);
  loader::BatchingOptions batching;
  loader::PackingOptions packing;
  packing.seq_len = seq_len;
  packing.batch_size = 8;
  packing.pack_mode = loader::PackMode::kBestFit;
  packing.split_long = false;
  packing.too_long = loader::TooLong::kSkip;
  const auto t1 = std::chrono::steady_clock::now();
  loader::EpochPlan packed;
  st = loader::MakeConversationPlan(index, batching, packing, 1, 0, {}, 0, 1, &packed);
  if (!st.ok()) return Fail(st);
  const double packed_seconds = Since(t1);
  const double peak = PeakRssMiB();

  // The padded plans: a conversation's length is its encoder frames, its tokens its LLM tokens.
  index.length = columns.encoder_frames;
  loader::BatchingOptions padded;
  padded.num_buckets = buckets;
  padded.max_frames = 0;
  padded.max_padded_tokens = 0;
  padded.max_padded_sum = budget;
  // A bucket waits for as many records per bucket as one shuffle window per bucket gives it:
  // with the default wait (one window) the 2-D grid's buckets would be emitted nearly empty.
  const uint32_t wait_1d = wait ? wait : padded.shuffle_window * buckets;
  const uint32_t wait_2d = wait ? wait : padded.shuffle_window * buckets * buckets;
  padded.max_bucket_wait = wait_1d;
  loader::EpochPlan one_d, two_d;
  const auto t2 = std::chrono::steady_clock::now();
  st = loader::MakeEpochPlan(index, padded, 1, 0, 0, 1, &one_d);
  const double one_d_seconds = Since(t2);
  padded.bucket_2d = true;
  padded.max_bucket_wait = wait_2d;
  const auto t3 = std::chrono::steady_clock::now();
  if (st.ok()) st = loader::MakeEpochPlan(index, padded, 1, 0, 0, 1, &two_d);
  const double two_d_seconds = Since(t3);
  if (!st.ok()) return Fail(st);
  const Padded a = PaddedWaste(index, one_d), b = PaddedWaste(index, two_d);
  const uint64_t packed_cells = packed.fit_rows * static_cast<uint64_t>(seq_len);
  const double packed_waste = static_cast<double>(packed.fit_padding) / packed_cells;
  auto waste = [](uint64_t used, uint64_t cells) {
    return cells ? 1.0 - static_cast<double>(used) / static_cast<double>(cells) : 0.0;
  };
  std::printf(
      "%zu conversations, %zu shards: index opened and every conversation costed in "
      "%.2f s, packed epoch planned in %.2f s; peak RSS %.0f MiB\n",
      index.num_records(), ds->num_shards(), open_seconds, packed_seconds, peak);
  std::printf("padding waste (share of the batch tensors' cells holding nothing):\n");
  std::printf(
      "  packed best_fit, rows of %u LLM tokens: %6.2f%% of token cells (%llu rows; "
      "audio concatenated, no padding; %llu skipped as longer than a row)\n",
      seq_len, 100 * packed_waste, static_cast<unsigned long long>(packed.fit_rows),
      static_cast<unsigned long long>(packed.skipped_documents));
  std::printf(
      "  2-D buckets %ux%u, budget %llu, wait %u:  %6.2f%% of frame+token cells, %6.2f%% "
      "of token cells (%llu batches, planned in %.2f s)\n",
      buckets, buckets, static_cast<unsigned long long>(budget), wait_2d,
      100 * waste(b.used, b.cells), 100 * waste(b.tokens, b.token_cells),
      static_cast<unsigned long long>(b.batches), two_d_seconds);
  std::printf(
      "  1-D duration buckets %u, budget %llu, wait %u: %6.2f%% of frame+token cells, "
      "%6.2f%% of token cells (%llu batches, planned in %.2f s)\n",
      buckets, static_cast<unsigned long long>(budget), wait_1d, 100 * waste(a.used, a.cells),
      100 * waste(a.tokens, a.token_cells), static_cast<unsigned long long>(a.batches),
      one_d_seconds);
  return 0;
}

int Epoch(const std::string& dir, int threads, uint32_t seq_len, const std::string& encoder) {
  loader::LoaderOptions o;
  o.threads = threads;
  o.packing.seq_len = seq_len;
  o.packing.batch_size = 8;
  o.packing.pack_mode = loader::PackMode::kBestFit;
  o.packing.split_long = false;
  o.packing.too_long = loader::TooLong::kSkip;
  o.conversation.chat_template = dir + "/template.json";
  o.conversation.encoder_frames = encoder;
  std::unique_ptr<loader::Loader> l;
  Status st = loader::Loader::Open(dir, o, &l);
  if (st.ok()) st = l->Start(0);
  if (!st.ok()) return Fail(st);
  const auto t0 = std::chrono::steady_clock::now();
  const loader::Batch* b = nullptr;
  uint64_t conversations = 0, tokens = 0;
  const uint64_t fit_rows = l->stats().fit_rows;  // rows past it repeat earlier ones
  while ((st = l->Next(&b)).ok() && b != nullptr) {
    const int64_t* doc = b->doc_ids();
    const size_t L = static_cast<size_t>(b->seq_len());
    for (size_t row = 0; row < b->size(); ++row) {
      if (b->sequences()[row] >= fit_rows) continue;
      for (size_t k = row * L; k < (row + 1) * L; ++k) {
        tokens += doc[k] >= 0;
        conversations += doc[k] >= 0 && (k % L == 0 || doc[k - 1] != doc[k]);
      }
    }
  }
  if (!st.ok()) return Fail(st);
  const double s = Since(t0);
  const int used = l->stats().threads;
  std::printf(
      "packed epoch, %d decode thread(s): %llu conversations, %llu LLM tokens (repeated "
      "rows left out) in %.2f s: "
      "%.0f conversations/s, %.3g LLM tokens/s; per thread %.0f conversations/s, %.3g "
      "LLM tokens/s\n",
      used, static_cast<unsigned long long>(conversations), static_cast<unsigned long long>(tokens),
      s, conversations / s, tokens / s, conversations / s / used, tokens / s / used);
  return 0;
}

}  // namespace

int RunConversations(int argc, char** argv) {
  CLI::App app{
      "Speech-LLM conversations: synthetic datasets, planning time and memory, padding "
      "of packed vs 2-D vs 1-D buckets, loader throughput"};
  app.require_subcommand(1);
  std::string dir, encoder = "fastconformer";
  uint64_t conversations = 1000000, seed = 1, budget = 65536;
  bool payload = false;
  uint32_t seq_len = 4096, buckets = 8, wait = 0;
  int threads = 1;
  CLI::App* write = app.add_subcommand("write", "write a synthetic conversation dataset");
  write->add_option("dir", dir, "output directory")->required();
  write->add_option("--conversations", conversations, "conversations")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  write->add_flag("--payload", payload, "records with their turns' text, ids and audio");
  write->add_option("--seed", seed, "seed of the conversations");
  CLI::App* plan = app.add_subcommand("plan", "plan from the index alone; padding of 3 batchings");
  plan->add_option("dir", dir, "dataset directory")->required();
  plan->add_option("--seq-len", seq_len, "packed rows' LLM tokens")->check(CLI::Range(1, 1 << 24));
  plan->add_option("--max-padded-sum", budget, "padded batches: rows x (frames + tokens) cap");
  plan->add_option("--num-buckets", buckets, "buckets per axis")->check(CLI::Range(1, 1000));
  plan->add_option("--encoder-frames", encoder, "encoder spec: a preset or a JSON file");
  plan->add_option("--max-bucket-wait", wait,
                   "records a bucket waits (0: shuffle window x the buckets)");
  CLI::App* epoch = app.add_subcommand("epoch", "one packed epoch through the Loader");
  epoch->add_option("dir", dir, "dataset directory (written with --payload)")->required();
  epoch->add_option("--threads", threads, "decode threads")->check(CLI::Range(1, 1024));
  epoch->add_option("--seq-len", seq_len, "packed rows' LLM tokens")->check(CLI::Range(1, 1 << 24));
  epoch->add_option("--encoder-frames", encoder, "encoder spec: a preset or a JSON file");
  CLI11_PARSE(app, argc, argv);
  if (write->parsed()) return Write(dir, conversations, payload, seed);
  if (plan->parsed()) return Plan(dir, seq_len, budget, buckets, wait, encoder);
  return Epoch(dir, threads, seq_len, encoder);
}

}  // namespace sluice::bench
