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
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "loader_flags.h"
#include "features/pcm.h"
#include "loader/dataset_tokenizer.h"
#include "loader/digest.h"
#include "loader/feature_extractor.h"
#include "loader/loader.h"
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

}  // namespace

int RunEpoch(int argc, char** argv) {
  CLI::App app{"Whole loader epochs over a dataset: hours of audio/s, consumer wait, CPU, RSS.",
               argv[0]};
  std::string dir;
  int epochs = 1;
  uint64_t first_epoch = 0;
  double step_ms = 0;
  double demand = 0;
  bool json = false, bare = false;
  LoaderOptions o;
  o.threads = 0;
  app.add_option("dataset", dir, "dataset directory (shardify's output); or --data");
  std::vector<std::string> data;
  loader::MixOptions mix;
  app.add_option("--data", data,
                 "DIR:WEIGHT, repeated: a weighted mixture of these datasets (docs/loader.md, "
                 "\"Weighted mixing\"); WEIGHT > 0, 1 when left out");
  app.add_option("--mix-records", mix.epoch_records,
                 "records per epoch of the mixture, all sources (0 = the sum of theirs)");
  app.add_option("--epochs", epochs, "epochs to run")->check(CLI::Range(1, 100000));
  app.add_option("--first-epoch", first_epoch, "number of the first epoch (keys the shuffle)");
  app.add_option("--step-ms", step_ms, "simulated trainer step per batch (ms, sleeping)");
  app.add_option("--demand", demand,
                 "a GPU's demand in hours of audio per second: prints the cores per GPU needed");
  app.add_flag("--json", json, "one JSON object per epoch on stdout");
  app.add_flag("--bare", bare, "also time the feature computation alone on the same records");
  std::string resume_json;
  uint64_t stop_after = 0;
  app.add_option("--resume-state", resume_json,
                 "start where this loader state stopped (the JSON of Loader::state(), as printed "
                 "with --stop-after; saved at any --world): its epoch is the first");
  app.add_option("--stop-after", stop_after,
                 "take at most this many batches per epoch and print the state to resume from "
                 "(0 = whole epochs)");
  std::string journal_path;
  app.add_option("--journal", journal_path,
                 "append a line per batch taken (its digest and the state after it) and one per "
                 "epoch end: a killed run resumes from the last whole line's state "
                 "(docs/loader.md, \"Benchmark\")");
  // Every loader option (features, batching, packing, resources) from its table, with the names
  // sluice-train uses (tools/common/loader_flags.h).
  tools::AddLoaderOptions(&app, &o);
  std::string tokenizer_from;
  app.add_option("--tokenizer-from", tokenizer_from,
                 "tokenize records without ids online with the tokenizer of this dataset "
                 "(directory or URL) (default: the dataset's own, if it names one)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (dir.empty() == data.empty()) {
    std::fprintf(stderr, "sluice-bench epoch: give a dataset directory or --data DIR:WEIGHT ..., "
                         "not both\n");
    return 2;
  }
  for (const std::string& d : data) {
    loader::MixSource s;
    const Status st = loader::ParseMixSource(d, &s);
    if (!st.ok()) {
      std::fprintf(stderr, "sluice-bench epoch: %s\n", st.message().c_str());
      return 2;
    }
    mix.sources.push_back(s);
  }
  if (data.empty()) mix.sources.push_back({dir, 1.0});
  dir = mix.sources[0].dir;  // the first source stands for all in the summary line
  shards::Manifest target;   // for the summary line and --tokenizer-from's kind; the feature
                             // options are Loader::Open's to resolve at the dataset's rate
  {
    // The manifest only: no block cache for it (the loader's storage has its own).
    storage::StorageOptions uncached = o.storage;
    uncached.cache_dir.clear();
    std::shared_ptr<const shards::Storage> where;
    Status st = storage::OpenStorage(dir, uncached, &where);
    if (st.ok()) st = shards::LoadManifest(*where, &target);
    if (!st.ok()) {
      std::fprintf(stderr, "sluice-bench epoch: %s\n", st.ToString().c_str());
      return st.IsInvalidArgument() ? 2 : 1;
    }
  }

  if (!tokenizer_from.empty()) {
    // Another dataset's tokenizer, applied as the target dataset's records are stored (text
    // datasets end each document with the end-of-document id). Without the option, Loader::Open
    // uses the dataset's own tokenizer when its records hold text without ids.
    // A directory or a URL, as the dataset (manifest and model only: no block cache).
    storage::StorageOptions uncached = o.storage;
    uncached.cache_dir.clear();
    std::shared_ptr<const shards::Storage> from;
    shards::Manifest m;
    Status st = storage::OpenStorage(tokenizer_from, uncached, &from);
    if (st.ok()) st = shards::LoadManifest(*from, &m);
    if (st.ok()) st = loader::LoadRecordTokenizer(m, *from, target.kind == "text", &o.tokenizer);
    if (!st.ok()) {
      std::fprintf(stderr, "sluice-bench epoch: %s\n", st.ToString().c_str());
      return 1;
    }
  }

  loader::ResumeState resume;
  if (!resume_json.empty()) {
    const Status rs = loader::ResumeState::FromJson(resume_json, &resume);
    if (!rs.ok()) {
      std::fprintf(stderr, "sluice-bench epoch: --resume-state: %s\n", rs.ToString().c_str());
      return 2;
    }
    first_epoch = resume.epoch;
  }

  std::unique_ptr<Loader> l;
  Status st = Loader::Open(mix, o, &l);
  if (!st.ok()) {
    std::fprintf(stderr, "sluice-bench epoch: %s\n", st.ToString().c_str());
    return 1;
  }
  if (!json) {
    const shards::Manifest& m = target;
    const EpochStats resolved = l->stats();  // the thread and token counts Open chose
    std::printf(
        "%s: %llu records, %.2f h of audio, %.1f MB in %zu shards; %s, %d thread%s, "
        "%d blocks in flight, rank %d of %d\n",
        storage::RedactUrl(dir).c_str(), static_cast<unsigned long long>(m.records),
        m.seconds() / 3600, m.bytes() / 1e6, m.shards.size(),
        loader::FeatureKindName(l->feature_info().kind), resolved.threads,
        resolved.threads == 1 ? "" : "s", resolved.blocks_in_flight, o.rank, o.world);
  }

  // The journal is what a consumer that can be killed at any moment keeps: each line is written
  // and flushed before the next batch is asked for, so after a SIGKILL the file ends with the
  // last batch taken, or with part of a line the resuming side drops (tools/soak/soak.py).
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> journal_file(nullptr, &std::fclose);
  if (!journal_path.empty()) {
    journal_file.reset(std::fopen(journal_path.c_str(), "a"));
    if (journal_file == nullptr) {
      std::fprintf(stderr, "sluice-bench epoch: --journal %s: %s\n", journal_path.c_str(),
                   std::strerror(errno));
      return 1;
    }
  }
  std::FILE* const journal = journal_file.get();
  const auto journal_line = [&](const nlohmann::json& line) {
    if (journal == nullptr) return true;
    const std::string text = line.dump() + "\n";
    return std::fwrite(text.data(), 1, text.size(), journal) == text.size() &&
           std::fflush(journal) == 0;
  };

  double last_hours_per_second = 0;
  for (int e = 0; e < epochs; ++e) {
    const uint64_t epoch = first_epoch + e;
    const Usage u0 = GetUsage();
    st = e == 0 && !resume_json.empty() ? l->Start(resume) : l->Start(epoch);
    loader::BatchDigest digest;
    const Batch* b = nullptr;
    uint64_t taken = 0;  // by the consumer (EpochStats::batches: by the pipeline, read ahead)
    while (st.ok() && (stop_after == 0 || taken < stop_after)) {
      st = l->Next(&b);
      if (!st.ok() || b == nullptr) break;
      ++taken;
      digest.Add(*b);
      if (!journal_line({{"epoch", epoch},
                         {"digest", shards::ChecksumHex(loader::DigestOf(*b))},
                         {"state", nlohmann::json::parse(l->state().ToJson())}})) {
        st = Status::IOError("--journal " + journal_path + ": " + std::strerror(errno));
        break;
      }
      if (step_ms > 0)
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(step_ms));
    }
    if (!st.ok()) {
      std::fprintf(stderr, "sluice-bench epoch: epoch %llu: %s\n",
                   static_cast<unsigned long long>(epoch), st.ToString().c_str());
      return 1;
    }
    // An epoch end is journaled only when the epoch was taken to its end (no --stop-after cut).
    if (b == nullptr && !journal_line({{"epoch", epoch},
                                       {"end", true},
                                       {"state", nlohmann::json::parse(l->state().ToJson())}})) {
      std::fprintf(stderr, "sluice-bench epoch: --journal %s: %s\n", journal_path.c_str(),
                   std::strerror(errno));
      return 1;
    }
    const Usage u1 = GetUsage();
    const EpochStats s = l->stats();
    const double cpu = u1.cpu_seconds - u0.cpu_seconds;
    const double hours = s.audio_seconds / 3600;
    const double hps = hours / s.wall_seconds;
    const double mbps = s.bytes_read / 1e6 / s.wall_seconds;
    const double wait_pct = 100 * s.wait_seconds / s.wall_seconds;
    const double tps = s.tokens / s.wall_seconds;
    // Cores one GPU needs: CPU seconds per hour of audio times the hours it eats per second.
    const double cores_per_gpu = hours > 0 ? demand * cpu / hours : 0;
    last_hours_per_second = hps;
    if (json) {
      nlohmann::json j = s.ToJson();
      j["rank"] = o.rank;
      j["world"] = o.world;
      j["hours"] = hours;
      j["hours_per_second"] = hps;
      j["realtime_factor"] = s.audio_seconds / s.wall_seconds;
      j["mb_per_second"] = mbps;
      j["cpu_seconds"] = cpu;
      j["cpu_utilisation"] = cpu / s.wall_seconds;
      j["peak_rss_bytes"] = u1.peak_rss_bytes;
      j["wait_fraction"] = s.wait_seconds / s.wall_seconds;
      j["tokens_per_second"] = tps;
      if (o.packing.seq_len > 0) {
        j["seq_len"] = o.packing.seq_len;
        j["batch_size"] = o.packing.batch_size;
      }
      j["step_ms"] = step_ms;
      j["digest"] = digest.hex();
      j["state"] = nlohmann::json::parse(l->state().ToJson());
      j["taken_batches"] = taken;
      for (size_t i = 0; i < s.sources.size(); ++i) {
        j["sources"][i]["dir"] = storage::RedactUrl(mix.sources[i].dir);
        j["sources"][i]["weight"] = mix.sources[i].weight;
      }
      if (demand > 0) {
        j["demand_hours_per_second"] = demand;
        j["cores_per_gpu"] = cores_per_gpu;
      }
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf(
          "epoch %llu: %llu batches, %llu utterances, %.3f h of audio in %.2f s: "
          "%.3f h/s (%.0fx real time), %.1f MB/s read\n",
          static_cast<unsigned long long>(epoch), static_cast<unsigned long long>(s.batches),
          static_cast<unsigned long long>(s.utterances), hours, s.wall_seconds, hps,
          s.audio_seconds / s.wall_seconds, mbps);
      std::printf("  cpu %.0f%% (%.2f core-s), peak RSS %.1f MB, first batch %.3f s, "
                  "consumer wait %.2f s (%.0f%%)\n",
                  100 * cpu / s.wall_seconds, cpu, u1.peak_rss_bytes / 1e6, s.first_batch_seconds,
                  s.wait_seconds, wait_pct);
      std::printf(
          "  busy: read %.3f s, decode %.2f s (all threads), collate %.3f s; padding "
          "waste %.1f%%; pool %llu batches, %.1f MB; %llu blocks read, %llu again; skipped %llu, "
          "repeated %llu\n",
          s.read_busy_seconds, s.decode_busy_seconds, s.collate_busy_seconds,
          100 * s.padding_waste(), static_cast<unsigned long long>(s.pool_batches),
          s.pool_bytes / 1e6, static_cast<unsigned long long>(s.blocks_read),
          static_cast<unsigned long long>(s.reread_blocks),
          static_cast<unsigned long long>(s.skipped_records),
          static_cast<unsigned long long>(s.repeated_records));
      if (s.tokens > 0) {
        std::printf("  %llu token ids in %.3f s: %.1f M tokens/s, cpu %.0f%%",
                    static_cast<unsigned long long>(s.tokens), s.wall_seconds, tps / 1e6,
                    100 * cpu / s.wall_seconds);
        if (o.packing.seq_len > 0)
          std::printf(" (packed [%u, %u]; stream %llu tokens, %llu wrapped)", o.packing.batch_size,
                      o.packing.seq_len + 1,
                      static_cast<unsigned long long>(s.stream_tokens),
                      static_cast<unsigned long long>(s.wrapped_tokens));
        std::printf("\n");
      }
      bool remote = false;
      for (const loader::MixSource& m : mix.sources) remote = remote || storage::IsRemote(m.dir);
      const shards::StorageCounters& io = s.storage;
      if (remote || io.requests > 0 || io.cache_hits + io.cache_misses > 0)
        std::printf("  storage: %llu requests (%llu retries), %.1f MB fetched; cache %llu hits, "
                    "%llu misses, %.1f MB read, %.1f MB written, %llu damaged entries\n",
                    static_cast<unsigned long long>(io.requests),
                    static_cast<unsigned long long>(io.retries), io.bytes_fetched / 1e6,
                    static_cast<unsigned long long>(io.cache_hits),
                    static_cast<unsigned long long>(io.cache_misses), io.cache_bytes_read / 1e6,
                    io.cache_bytes_written / 1e6,
                    static_cast<unsigned long long>(io.cache_corrupt));
      for (size_t i = 0; i < s.sources.size(); ++i)
        std::printf(
            "  source %s (weight %g): %llu records in the epoch (%llu repeats), %llu rows "
            "here\n",
            storage::RedactUrl(mix.sources[i].dir).c_str(), mix.sources[i].weight,
            static_cast<unsigned long long>(s.sources[i].records),
            static_cast<unsigned long long>(s.sources[i].repeated),
            static_cast<unsigned long long>(s.sources[i].rows));
      std::printf("  digest %s; state %s\n", digest.hex().c_str(), l->state().ToJson().c_str());
      if (demand > 0)
        std::printf("  a GPU eating %.3f h of audio per second needs %.2f cores of this machine\n",
                    demand, cores_per_gpu);
    }
  }

  if (bare) {
    double bare_hps = 0, bare_seconds = 0;
    const int threads = l->stats().threads;
    st = BareFeatures(dir, o, threads, &bare_hps, &bare_seconds);
    if (!st.ok()) {
      std::fprintf(stderr, "sluice-bench epoch: %s\n", st.ToString().c_str());
      return 1;
    }
    if (json) {
      std::printf("%s\n", nlohmann::json{{"bare_hours_per_second", bare_hps},
                                         {"bare_wall_seconds", bare_seconds},
                                         {"threads", threads},
                                         {"pipeline_hours_per_second", last_hours_per_second},
                                         {"pipeline_over_bare", last_hours_per_second / bare_hps}}
                              .dump()
                              .c_str());
    } else {
      std::printf("bare features (records decoded in memory first), %d thread%s: %.3f h/s; "
                  "the last epoch reached %.0f%% of it\n",
                  threads, threads == 1 ? "" : "s", bare_hps,
                  100 * last_hours_per_second / bare_hps);
    }
  }
  return 0;
}

}  // namespace sluice::bench
