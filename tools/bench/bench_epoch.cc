// sluice-bench epoch: whole loader epochs over a dataset (docs/loader.md, "Benchmark").
//
// Per epoch: wall time, batches, utterances, hours of audio, hours/s (x real time), MB/s read,
// CPU utilisation (getrusage), peak RSS, time to first batch, consumer wait, per-stage busy time
// and a digest over every batch's keys and bytes in order. --step-ms simulates a trainer step;
// --demand says how many cores per GPU keep a GPU fed; --bare measures the feature computation
// alone on the same records (decoded into memory first) for the pipeline-overhead comparison.
// Text datasets: token ids per second; --seq-len packs [B, L+1] language-model sequences;
// --tokenizer-from tokenizes records stored without ids online, in the loader's decode stage.
// Remote datasets (docs/remote.md): requests, bytes fetched, retries and block cache use.
#include <sys/resource.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "command_line.h"
#include "commands.h"
#include "features/pcm.h"
#include "loader/dataset_tokenizer.h"
#include "loader/digest.h"
#include "loader/feature_extractor.h"
#include "loader/loader.h"
#include "loader_flags.h"
#include "shards/dataset.h"
#include "storage/open.h"
#include "storage/url.h"

namespace sluice::bench {
namespace {

using loader::Batch;
using loader::EpochStats;
using loader::Loader;
using loader::LoaderOptions;

struct Usage {
  double cpu_seconds = 0;
  uint64_t peak_rss_bytes = 0;
};

Usage GetUsage() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  Usage u;
  u.cpu_seconds = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
                  ru.ru_stime.tv_usec * 1e-6;
  // VmHWM, not ru_maxrss: Linux carries ru_maxrss across execve, so a benchmark started from a
  // large parent (a Python script with torch loaded) would report the parent's peak.
  std::FILE* f = std::fopen("/proc/self/status", "r");
  char line[256];
  while (f != nullptr && std::fgets(line, sizeof(line), f) != nullptr) {
    unsigned long long kb = 0;
    if (std::sscanf(line, "VmHWM: %llu kB", &kb) == 1) u.peak_rss_bytes = kb * 1024;
  }
  if (f != nullptr) std::fclose(f);
  if (u.peak_rss_bytes == 0) u.peak_rss_bytes = static_cast<uint64_t>(ru.ru_maxrss) * 1024;
  return u;
}

// The feature computation alone: every record of the dataset decoded to float in memory first,
// then the loader's feature extractor (made from the same options) over all of them on
// `threads` threads; returns hours of audio per second.
Status BareFeatures(const std::string& dir, const LoaderOptions& o, int threads,
                    double* hours_per_second, double* seconds) {
  std::unique_ptr<shards::Dataset> dataset;
  SLUICE_RETURN_IF_ERROR(storage::OpenDataset(dir, o.storage, shards::ReadOptions(), &dataset));
  const shards::Dataset& ds = *dataset;
  std::unique_ptr<loader::FeatureExtractor> extractor;
  SLUICE_RETURN_IF_ERROR(loader::FeatureExtractor::Create(ds.manifest(), o, &extractor));
  const loader::FeatureExtractor& fx = *extractor;
  struct Clip {
    std::string payload;
    uint32_t shard;
    uint64_t index;
  };
  std::vector<Clip> clips;
  double audio = 0;
  for (size_t s = 0; s < ds.num_shards(); ++s) {
    for (size_t i = 0; i < ds.shard(s).num_records(); ++i) {
      Clip c{std::string(), static_cast<uint32_t>(s), i};
      SLUICE_RETURN_IF_ERROR(ds.shard(s).ReadRecord(i, &c.payload));
      audio += static_cast<double>(ds.shard(s).record(i).duration) / fx.sample_rate();
      clips.push_back(std::move(c));
    }
  }
  std::vector<loader::DecodeScratch> scratch(threads);
  std::vector<std::vector<float>> out(threads);
  double best = 1e300;
  for (int pass = 0; pass < 3; ++pass) {  // pass 0 warms buffers; best of the other two
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        for (size_t i = next++; i < clips.size(); i = next++) {
          const shards::ShardReader& shard = ds.shard(clips[i].shard);
          const shards::RecordEntry& e = shard.record(clips[i].index);
          shards::RecordView rv;
          if (!shards::ParseRecord(clips[i].payload.data(), clips[i].payload.size(), shard.name(),
                                   &rv)
                   .ok())
            failed = true;
          const size_t values = fx.EpochLength(e, 0, 0, i) * fx.dim();
          if (out[t].size() < values) out[t].resize(values);
          if (!fx.Compute(rv, e, shard.name(), 0, 0, i, &scratch[t], out[t].data()).ok())
            failed = true;
        }
      });
    }
    for (auto& th : pool) th.join();
    if (failed) return Status::Corruption("bare feature pass: a record failed to decode");
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (pass > 0) best = std::min(best, wall);
  }
  *seconds = best;
  *hours_per_second = audio / 3600.0 / best;
  return Status::OK();
}

// The command line of sluice-bench epoch.
struct EpochArgs {
  loader::MixOptions mix;  // the dataset, or the --data sources
  std::string dir;         // the first source: the flags that depend on the dataset read it
  int epochs = 1;
  uint64_t first_epoch = 0;
  double step_ms = 0;
  double demand = 0;
  bool json = false, bare = false;
  std::string resume_json;
  uint64_t stop_after = 0;
  std::string journal_path;
  std::string tokenizer_from;
  LoaderOptions o;
};

// Registers every flag; `data` receives the --data sources, parsed after.
void AddEpochOptions(CLI::App* app, EpochArgs* a, std::vector<std::string>* data) {
  app->add_option("dataset", a->dir, "dataset directory (shardify's output); or --data");
  app->add_option("--data", *data,
                  "DIR:WEIGHT, repeated: a weighted mixture of these datasets (docs/loader.md, "
                  "\"Weighted mixing\"); WEIGHT > 0, 1 when left out");
  app->add_option("--mix-records", a->mix.epoch_records,
                  "records per epoch of the mixture, all sources (0 = the sum of theirs)");
  app->add_option("--epochs", a->epochs, "epochs to run")->check(CLI::Range(1, 100000));
  app->add_option("--first-epoch", a->first_epoch, "number of the first epoch (keys the shuffle)");
  app->add_option("--step-ms", a->step_ms, "simulated trainer step per batch (ms, sleeping)");
  app->add_option("--demand", a->demand,
                  "a GPU's demand in hours of audio per second: prints the cores per GPU needed");
  app->add_flag("--json", a->json, "one JSON object per epoch on stdout");
  app->add_flag("--bare", a->bare, "also time the feature computation alone on the same records");
  app->add_option("--resume-state", a->resume_json,
                  "start where this loader state stopped (the JSON of Loader::state(), as printed "
                  "with --stop-after; saved at any --world): its epoch is the first");
  app->add_option("--stop-after", a->stop_after,
                  "take at most this many batches per epoch and print the state to resume from "
                  "(0 = whole epochs)");
  app->add_option("--journal", a->journal_path,
                  "append a line per batch taken (its digest and the state after it) and one per "
                  "epoch end: a killed run resumes from the last whole line's state "
                  "(docs/loader.md, \"Benchmark\")");
  // Every loader option (features, batching, packing, resources) from its table, with the names
  // sluice-train uses (tools/common/loader_flags.h).
  tools::AddLoaderOptions(app, &a->o);
  app->add_option("--tokenizer-from", a->tokenizer_from,
                  "tokenize records without ids online with the tokenizer of this dataset "
                  "(directory or URL) (default: the dataset's own, if it names one)");
}

// Parses the command line into *a; false when the program ends here, with *exit_code (--help: 0).
bool ParseEpochArgs(int argc, char** argv, EpochArgs* a, int* exit_code) {
  CLI::App app{"Whole loader epochs over a dataset: hours of audio/s, consumer wait, CPU, RSS.",
               argv[0]};
  a->o.threads = 0;
  std::vector<std::string> data;
  AddEpochOptions(&app, a, &data);
  if (!ParseCommandLine(app, argc, argv, exit_code)) return false;
  *exit_code = 2;
  if (a->dir.empty() == data.empty()) {
    std::fprintf(stderr,
                 "sluice-bench epoch: give a dataset directory or --data DIR:WEIGHT ..., "
                 "not both\n");
    return false;
  }
  for (const std::string& d : data) {
    loader::MixSource s;
    const Status st = loader::ParseMixSource(d, &s);
    if (!st.ok()) {
      std::fprintf(stderr, "sluice-bench epoch: %s\n", st.message().c_str());
      return false;
    }
    a->mix.sources.push_back(s);
  }
  if (data.empty()) a->mix.sources.push_back({a->dir, 1.0});
  a->dir = a->mix.sources[0].dir;  // the first source stands for all in the summary line
  *exit_code = 0;
  return true;
}

// The dataset's manifest, for the summary line and --tokenizer-from's kind; the feature options
// are Loader::Open's to resolve at the dataset's rate.
Status LoadTargetManifest(const EpochArgs& a, shards::Manifest* target) {
  // The manifest only: no block cache for it (the loader's storage has its own).
  storage::StorageOptions uncached = a.o.storage;
  uncached.cache_dir.clear();
  std::shared_ptr<const shards::Storage> where;
  SLUICE_RETURN_IF_ERROR(storage::OpenStorage(a.dir, uncached, &where));
  return shards::LoadManifest(*where, target);
}

// --tokenizer-from: another dataset's tokenizer, applied as the target dataset's records are
// stored (text datasets end each document with the end-of-document id). Without the option,
// Loader::Open uses the dataset's own tokenizer when its records hold text without ids.
Status LoadTokenizerFrom(const EpochArgs& a, const shards::Manifest& target, LoaderOptions* o) {
  // A directory or a URL, as the dataset (manifest and model only: no block cache).
  storage::StorageOptions uncached = o->storage;
  uncached.cache_dir.clear();
  std::shared_ptr<const shards::Storage> from;
  shards::Manifest m;
  SLUICE_RETURN_IF_ERROR(storage::OpenStorage(a.tokenizer_from, uncached, &from));
  SLUICE_RETURN_IF_ERROR(shards::LoadManifest(*from, &m));
  return loader::LoadRecordTokenizer(m, *from, target.kind == "text", &o->tokenizer);
}

// Prints "sluice-bench epoch: <status>" and returns `code`.
int Fail(const Status& st, int code) {
  std::fprintf(stderr, "sluice-bench epoch: %s\n", st.ToString().c_str());
  return code;
}

// --journal: what a consumer that can be killed at any moment keeps. Each line is written and
// flushed before the next batch is asked for, so after a SIGKILL the file ends with the last
// batch taken, or with part of a line the resuming side drops (tests/soak/soak.py).
class BatchJournal {
 public:
  // Opens `path` for appending ("" : no journal); false, with errno, when it cannot.
  bool Open(const std::string& path) {
    if (path.empty()) return true;
    file_.reset(std::fopen(path.c_str(), "a"));
    return file_ != nullptr;
  }
  // A batch taken: its digest and the loader's state after it.
  bool Batch(uint64_t epoch, const loader::Batch& b, const Loader& l) {
    return Write({{"epoch", epoch},
                  {"digest", shards::ChecksumHex(loader::DigestOf(b))},
                  {"state", nlohmann::json::parse(l.state().ToJson())}});
  }
  // An epoch taken to its end (no --stop-after cut).
  bool End(uint64_t epoch, const Loader& l) {
    return Write(
        {{"epoch", epoch}, {"end", true}, {"state", nlohmann::json::parse(l.state().ToJson())}});
  }

 private:
  bool Write(const nlohmann::json& line) {
    if (file_ == nullptr) return true;
    const std::string text = line.dump() + "\n";
    return std::fwrite(text.data(), 1, text.size(), file_.get()) == text.size() &&
           std::fflush(file_.get()) == 0;
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_{nullptr, &std::fclose};
};

// One epoch as the consumer saw it, and the figures printed for it.
struct EpochResult {
  uint64_t epoch = 0;
  uint64_t taken = 0;  // batches taken by the consumer (EpochStats::batches: by the pipeline)
  loader::BatchDigest digest;
  EpochStats stats;
  std::string state;  // Loader::state() after the epoch, as JSON
  double cpu = 0;     // core-seconds of the process during the epoch
  uint64_t peak_rss_bytes = 0;
  double hours = 0, hours_per_second = 0, mb_per_second = 0, tokens_per_second = 0;
  // Packing: documents (conversations) in the batches taken, each whole one or part once per
  // row it fills (the segments of cu_seqlens that are not padding), repeats included.
  uint64_t documents = 0;
  double cores_per_gpu = 0;  // with --demand
};

// Takes epoch number `e` of the run (from `resume` for the first one when given): every batch,
// or --stop-after of them, journaled and digested. The exit code of a failure, printed; else 0.
int TakeEpoch(const EpochArgs& a, int e, const loader::ResumeState* resume, Loader* l,
              BatchJournal* journal, EpochResult* r) {
  r->epoch = a.first_epoch + e;
  const Usage u0 = GetUsage();
  Status st = e == 0 && resume != nullptr ? l->Start(*resume) : l->Start(r->epoch);
  const Batch* b = nullptr;
  while (st.ok() && (a.stop_after == 0 || r->taken < a.stop_after)) {
    st = l->Next(&b);
    if (!st.ok() || b == nullptr) break;
    ++r->taken;
    r->digest.Add(*b);
    if (a.o.packing.seq_len > 0) {
      const std::span<const int32_t> cu = b->cu_seqlens();
      for (size_t k = 0; k + 1 < cu.size(); ++k) r->documents += b->doc_ids()[cu[k]] >= 0;
    }
    if (!journal->Batch(r->epoch, *b, *l)) {
      st = Status::IOError("--journal " + a.journal_path + ": " + std::strerror(errno));
      break;
    }
    if (a.step_ms > 0)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(a.step_ms));
  }
  if (!st.ok()) {
    std::fprintf(stderr, "sluice-bench epoch: epoch %llu: %s\n",
                 static_cast<unsigned long long>(r->epoch), st.ToString().c_str());
    return 1;
  }
  if (b == nullptr && !journal->End(r->epoch, *l)) {
    std::fprintf(stderr, "sluice-bench epoch: --journal %s: %s\n", a.journal_path.c_str(),
                 std::strerror(errno));
    return 1;
  }
  const Usage u1 = GetUsage();
  const EpochStats& s = r->stats = l->stats();
  r->state = l->state().ToJson();
  r->cpu = u1.cpu_seconds - u0.cpu_seconds;
  r->peak_rss_bytes = u1.peak_rss_bytes;
  r->hours = s.audio_seconds / 3600;
  r->hours_per_second = r->hours / s.wall_seconds;
  r->mb_per_second = s.bytes_read / 1e6 / s.wall_seconds;
  r->tokens_per_second = s.tokens / s.wall_seconds;
  // Cores one GPU needs: CPU seconds per hour of audio times the hours it eats per second.
  r->cores_per_gpu = r->hours > 0 ? a.demand * r->cpu / r->hours : 0;
  return 0;
}

// The line before the first epoch: the dataset, and the thread and token counts Open chose.
void PrintHeader(const EpochArgs& a, const shards::Manifest& m, const Loader& l) {
  const EpochStats resolved = l.stats();
  std::printf(
      "%s: %llu records, %.2f h of audio, %.1f MB in %zu shards; %s, %d thread%s, "
      "%d blocks in flight, rank %d of %d\n",
      storage::RedactUrl(a.dir).c_str(), static_cast<unsigned long long>(m.records),
      m.seconds() / 3600, m.bytes() / 1e6, m.shards.size(),
      loader::FeatureKindName(l.feature_info().kind), resolved.threads,
      resolved.threads == 1 ? "" : "s", resolved.blocks_in_flight, a.o.rank, a.o.world);
}

void PrintEpochJson(const EpochArgs& a, const EpochResult& r) {
  const EpochStats& s = r.stats;
  nlohmann::json j = s.ToJson();
  j["rank"] = a.o.rank;
  j["world"] = a.o.world;
  j["hours"] = r.hours;
  j["hours_per_second"] = r.hours_per_second;
  j["realtime_factor"] = s.audio_seconds / s.wall_seconds;
  j["mb_per_second"] = r.mb_per_second;
  j["cpu_seconds"] = r.cpu;
  j["cpu_utilisation"] = r.cpu / s.wall_seconds;
  j["peak_rss_bytes"] = r.peak_rss_bytes;
  j["wait_fraction"] = s.wait_seconds / s.wall_seconds;
  j["tokens_per_second"] = r.tokens_per_second;
  if (a.o.packing.seq_len > 0) {
    j["seq_len"] = a.o.packing.seq_len;
    j["batch_size"] = a.o.packing.batch_size;
    // Per core: a speech-LLM's loader cost (conversations and LLM tokens per CPU-second).
    j["documents"] = r.documents;
    j["documents_per_second"] = r.documents / s.wall_seconds;
    j["documents_per_core_second"] = r.cpu > 0 ? r.documents / r.cpu : 0;
    j["tokens_per_core_second"] = r.cpu > 0 ? s.tokens / r.cpu : 0;
  }
  j["step_ms"] = a.step_ms;
  j["digest"] = r.digest.hex();
  j["state"] = nlohmann::json::parse(r.state);
  j["taken_batches"] = r.taken;
  for (size_t i = 0; i < s.sources.size(); ++i) {
    j["sources"][i]["dir"] = storage::RedactUrl(a.mix.sources[i].dir);
    j["sources"][i]["weight"] = a.mix.sources[i].weight;
  }
  if (a.demand > 0) {
    j["demand_hours_per_second"] = a.demand;
    j["cores_per_gpu"] = r.cores_per_gpu;
  }
  std::printf("%s\n", j.dump().c_str());
}

// The text lines of an epoch's token ids, remote reads and mixture sources, when it had any.
void PrintTokensStorageAndSources(const EpochArgs& a, const EpochResult& r) {
  const EpochStats& s = r.stats;
  if (s.tokens > 0) {
    std::printf("  %llu token ids in %.3f s: %.1f M tokens/s, cpu %.0f%%",
                static_cast<unsigned long long>(s.tokens), s.wall_seconds,
                r.tokens_per_second / 1e6, 100 * r.cpu / s.wall_seconds);
    if (a.o.packing.seq_len > 0)
      std::printf(" (packed [%u, %u]; stream %llu tokens, %llu wrapped)", a.o.packing.batch_size,
                  a.o.packing.seq_len + 1, static_cast<unsigned long long>(s.stream_tokens),
                  static_cast<unsigned long long>(s.wrapped_tokens));
    if (a.o.packing.seq_len > 0)
      std::printf("; %llu documents, %.0f/s, %.0f per core-second",
                  static_cast<unsigned long long>(r.documents), r.documents / s.wall_seconds,
                  r.cpu > 0 ? r.documents / r.cpu : 0);
    if (a.o.packing.seq_len > 0 && a.o.packing.pack_mode != loader::PackMode::kConcat)
      std::printf("; %s: padding %.3f%%, %llu documents split, %llu truncated, %llu skipped",
                  loader::kPackModeNames[static_cast<int>(a.o.packing.pack_mode)].name,
                  100 * s.padding_waste(),
                  static_cast<unsigned long long>(s.split_documents),
                  static_cast<unsigned long long>(s.truncated_documents),
                  static_cast<unsigned long long>(s.skipped_documents));
    std::printf("\n");
  }
  bool remote = false;
  for (const loader::MixSource& m : a.mix.sources) remote = remote || storage::IsRemote(m.dir);
  const shards::StorageCounters& io = s.storage;
  if (remote || io.requests > 0 || io.cache_hits + io.cache_misses > 0)
    std::printf(
        "  storage: %llu requests (%llu retries), %.1f MB fetched; cache %llu hits, "
        "%llu misses, %.1f MB read, %.1f MB written, %llu damaged entries\n",
        static_cast<unsigned long long>(io.requests), static_cast<unsigned long long>(io.retries),
        io.bytes_fetched / 1e6, static_cast<unsigned long long>(io.cache_hits),
        static_cast<unsigned long long>(io.cache_misses), io.cache_bytes_read / 1e6,
        io.cache_bytes_written / 1e6, static_cast<unsigned long long>(io.cache_corrupt));
  for (size_t i = 0; i < s.sources.size(); ++i)
    std::printf(
        "  source %s (weight %g): %llu records in the epoch (%llu repeats), %llu rows "
        "here\n",
        storage::RedactUrl(a.mix.sources[i].dir).c_str(), a.mix.sources[i].weight,
        static_cast<unsigned long long>(s.sources[i].records),
        static_cast<unsigned long long>(s.sources[i].repeated),
        static_cast<unsigned long long>(s.sources[i].rows));
}

void PrintEpochText(const EpochArgs& a, const EpochResult& r) {
  const EpochStats& s = r.stats;
  std::printf(
      "epoch %llu: %llu batches, %llu utterances, %.3f h of audio in %.2f s: "
      "%.3f h/s (%.0fx real time), %.1f MB/s read\n",
      static_cast<unsigned long long>(r.epoch), static_cast<unsigned long long>(s.batches),
      static_cast<unsigned long long>(s.utterances), r.hours, s.wall_seconds, r.hours_per_second,
      s.audio_seconds / s.wall_seconds, r.mb_per_second);
  std::printf(
      "  cpu %.0f%% (%.2f core-s), peak RSS %.1f MB, first batch %.3f s, "
      "consumer wait %.2f s (%.0f%%)\n",
      100 * r.cpu / s.wall_seconds, r.cpu, r.peak_rss_bytes / 1e6, s.first_batch_seconds,
      s.wait_seconds, 100 * s.wait_seconds / s.wall_seconds);
  std::printf(
      "  busy: read %.3f s, decode %.2f s (all threads), collate %.3f s; padding "
      "waste %.1f%%; pool %llu batches, %.1f MB; %llu blocks read, %llu again; skipped %llu, "
      "repeated %llu\n",
      s.read_busy_seconds, s.decode_busy_seconds, s.collate_busy_seconds, 100 * s.padding_waste(),
      static_cast<unsigned long long>(s.pool_batches), s.pool_bytes / 1e6,
      static_cast<unsigned long long>(s.blocks_read),
      static_cast<unsigned long long>(s.reread_blocks),
      static_cast<unsigned long long>(s.skipped_records),
      static_cast<unsigned long long>(s.repeated_records));
  PrintTokensStorageAndSources(a, r);
  std::printf("  digest %s; state %s\n", r.digest.hex().c_str(), r.state.c_str());
  if (a.demand > 0)
    std::printf("  a GPU eating %.3f h of audio per second needs %.2f cores of this machine\n",
                a.demand, r.cores_per_gpu);
}

// --bare: the feature computation alone on the same records, against the last epoch's rate.
int RunBare(const EpochArgs& a, int threads, double last_hours_per_second) {
  double bare_hps = 0, bare_seconds = 0;
  const Status st = BareFeatures(a.dir, a.o, threads, &bare_hps, &bare_seconds);
  if (!st.ok()) return Fail(st, 1);
  if (a.json) {
    std::printf("%s\n", nlohmann::json{{"bare_hours_per_second", bare_hps},
                                       {"bare_wall_seconds", bare_seconds},
                                       {"threads", threads},
                                       {"pipeline_hours_per_second", last_hours_per_second},
                                       {"pipeline_over_bare", last_hours_per_second / bare_hps}}
                            .dump()
                            .c_str());
  } else {
    std::printf(
        "bare features (records decoded in memory first), %d thread%s: %.3f h/s; "
        "the last epoch reached %.0f%% of it\n",
        threads, threads == 1 ? "" : "s", bare_hps, 100 * last_hours_per_second / bare_hps);
  }
  return 0;
}

}  // namespace

int RunEpoch(int argc, char** argv) {
  EpochArgs a;
  int code = 0;
  if (!ParseEpochArgs(argc, argv, &a, &code)) return code;
  shards::Manifest target;  // for the summary line and --tokenizer-from
  if (Status st = LoadTargetManifest(a, &target); !st.ok())
    return Fail(st, st.IsInvalidArgument() ? 2 : 1);
  if (!a.tokenizer_from.empty()) {
    if (Status st = LoadTokenizerFrom(a, target, &a.o); !st.ok()) return Fail(st, 1);
  }
  loader::ResumeState resume;
  if (!a.resume_json.empty()) {
    const Status rs = loader::ResumeState::FromJson(a.resume_json, &resume);
    if (!rs.ok()) {
      std::fprintf(stderr, "sluice-bench epoch: --resume-state: %s\n", rs.ToString().c_str());
      return 2;
    }
    a.first_epoch = resume.epoch;
  }

  std::unique_ptr<Loader> l;
  if (Status st = Loader::Open(a.mix, a.o, &l); !st.ok()) return Fail(st, 1);
  if (!a.json) PrintHeader(a, target, *l);
  BatchJournal journal;
  if (!journal.Open(a.journal_path)) {
    std::fprintf(stderr, "sluice-bench epoch: --journal %s: %s\n", a.journal_path.c_str(),
                 std::strerror(errno));
    return 1;
  }
  double last_hours_per_second = 0;
  for (int e = 0; e < a.epochs; ++e) {
    EpochResult r;
    code = TakeEpoch(a, e, a.resume_json.empty() ? nullptr : &resume, l.get(), &journal, &r);
    if (code != 0) return code;
    if (a.json) PrintEpochJson(a, r);
    else PrintEpochText(a, r);
    last_hours_per_second = r.hours_per_second;
  }
  return a.bare ? RunBare(a, l->stats().threads, last_hours_per_second) : 0;
}

}  // namespace sluice::bench
