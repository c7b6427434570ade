// shardify info / shardify verify: read-only looks at a dataset.
#include <cinttypes>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "progress.h"
#include "options_cli.h"
#include "shards/dataset.h"
#include "storage/open.h"
#include "storage/options.h"

namespace sluice::shardify {
namespace {

struct InspectArgs {
  std::string dir;  // a directory, or an http(s):// or s3:// location (docs/remote.md)
  storage::StorageOptions storage;
  bool json = false;
  bool quiet = false;
};

int RunInfo(const InspectArgs& a) {
  std::shared_ptr<const shards::Storage> where;
  Status st = storage::OpenStorage(a.dir, a.storage, &where);
  if (!st.ok()) return ReportError(st);
  shards::Manifest m;
  st = shards::LoadManifest(*where, &m);
  if (!st.ok()) return ReportError(st);
  const double zstd_ratio = m.bytes() ? double(m.raw_bytes()) / m.bytes() : 0;
  const double pcm_ratio =
      m.bytes() && m.kind == "audio" ? double(m.duration()) * 2 / m.bytes() : 0;
  if (a.json) {
    nlohmann::json j = shards::ManifestToJson(m);
    j["zstd_ratio"] = zstd_ratio;
    j["pcm16_ratio"] = pcm_ratio;
    j["hours"] = m.seconds() / 3600;
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("dataset    %s\n", where->location().c_str());  // a URL's password hidden
  std::printf(
      "kind       %s%s\n", m.kind.c_str(),
      m.kind == "audio" ? (", " + std::to_string(m.sample_rate) + " Hz, " + m.codec).c_str() : "");
  std::printf("fields     ");
  for (size_t i = 0; i < m.fields.size(); ++i)
    std::printf("%s%s", i ? ", " : "", m.fields[i].c_str());
  std::printf("\nrecords    %" PRIu64 " written, %" PRIu64 " rejected (rejects.jsonl)\n", m.records,
              m.rejected);
  if (m.kind == "audio")
    std::printf("audio      %.3f h (%.1f s)\n", m.seconds() / 3600, m.seconds());
  if (m.tokens) {
    std::printf("tokens     %" PRIu64 "%s\n", m.tokens,
                m.has_field("tokens") ? "" : " (counted, not stored: the loader tokenizes online)");
  }
  std::printf("bytes      %.2f MB on disk, %.2f MB raw (zstd %.2fx", m.bytes() / 1e6,
              m.raw_bytes() / 1e6, zstd_ratio);
  if (pcm_ratio > 0) std::printf(", %.2fx smaller than PCM16", pcm_ratio);
  std::printf(")\nshards     %zu\n\n", m.shards.size());
  std::printf("  %-20s %10s %12s %10s  %s\n", "file", "records", "bytes", "seconds", "xxh3");
  for (const auto& s : m.shards) {
    std::printf("  %-20s %10" PRIu64 " %12" PRIu64 " %10.1f  %016" PRIx64 "\n", s.file.c_str(),
                s.records, s.bytes, m.sample_rate ? double(s.duration) / m.sample_rate : 0.0,
                s.xxh3);
  }
  return 0;
}

int RunVerify(const InspectArgs& a) {
  std::shared_ptr<const shards::Storage> where;
  Status st = storage::OpenStorage(a.dir, a.storage, &where);
  if (!st.ok()) return ReportError(st);
  shards::VerifyReport rep;
  Progress progress("verify MB", 0, !a.quiet);
  st = shards::VerifyDataset(
      *where, &rep, [&](uint64_t done, uint64_t) { progress.Update(done >> 20, done); });
  progress.Finish();
  if (!st.ok()) return ReportError(st);
  if (a.json) {
    nlohmann::json problems = nlohmann::json::array();
    for (const auto& p : rep.problems)
      problems.push_back({{"shard", p.shard}, {"message", p.message}});
    std::printf("%s\n", nlohmann::json{{"ok", rep.ok()},
                                       {"shards", rep.shards},
                                       {"blocks", rep.blocks},
                                       {"records", rep.records},
                                       {"bytes", rep.bytes},
                                       {"problems", problems}}
                            .dump()
                            .c_str());
  } else {
    for (const auto& p : rep.problems)
      std::printf("DAMAGED %s: %s\n", p.shard.c_str(), p.message.c_str());
    std::printf("verify: %s: %" PRIu64 " shards, %" PRIu64 " blocks, %" PRIu64
                " records, %.1f MB checked, %zu problem%s\n",
                rep.ok() ? "OK" : "FAILED", rep.shards, rep.blocks, rep.records, rep.bytes / 1e6,
                rep.problems.size(), rep.problems.size() == 1 ? "" : "s");
  }
  return rep.ok() ? 0 : 1;
}

}  // namespace

void RegisterInfo(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* sub = app->add_subcommand(
      "info", "Summarise a dataset: records, hours, bytes, compression, shards");
  sub->add_option("dir", args->dir, "Dataset directory, http(s):// URL or s3://bucket/prefix")
      ->required();
  tools::AddOptions(sub, &args->storage, [](const FieldInfo&) { return true; });
  sub->add_flag("--json", args->json,
                "Print one JSON object (records, rejected, seconds, bytes, shards, ...)");
  sub->callback([args, exit_code] { *exit_code = RunInfo(*args); });
}

void RegisterVerify(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* sub = app->add_subcommand(
      "verify",
      "Read every byte of a dataset and check every checksum; exit 1 naming what is damaged");
  sub->add_option("dir", args->dir, "Dataset directory, http(s):// URL or s3://bucket/prefix")
      ->required();
  tools::AddOptions(sub, &args->storage, [](const FieldInfo&) { return true; });
  sub->add_flag("--json", args->json, "Print one JSON object with the problems found");
  sub->add_flag("-q,--quiet", args->quiet, "No progress line");
  sub->callback([args, exit_code] { *exit_code = RunVerify(*args); });
}

}  // namespace sluice::shardify
