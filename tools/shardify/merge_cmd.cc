// shardify merge: combines the datasets of `--part i/N` runs into one.
//
// Shards are hard-linked (copied across file systems) into --out under new
// consecutive names; their bytes are unchanged, so their checksums carry over.
// Parts are taken in the order given, which for parts 0..N-1 is input order.
#include <filesystem>
#include <fstream>
#include <memory>
#include <unordered_set>

#include "commands.h"
#include "shards/dataset_writer.h"
#include "shards/file.h"
#include "shards/shard_reader.h"

namespace sluice::shardify {
namespace fs = std::filesystem;
namespace {

struct MergeArgs {
  std::vector<std::string> parts;
  std::string out;
  bool json = false;
  bool allow_duplicate_keys = false;
};

Status Compatible(const shards::Manifest& a, const shards::Manifest& b, const std::string& where) {
  auto differ = [&](const std::string& what, const std::string& x, const std::string& y) {
    return Status::InvalidArgument(where + ": " + what + " '" + y +
                                   "' differs from the first part's '" + x +
                                   "'. HINT: run every part with the same options");
  };
  if (a.kind != b.kind) return differ("kind", a.kind, b.kind);
  if (a.sample_rate != b.sample_rate)
    return differ("sample rate", std::to_string(a.sample_rate), std::to_string(b.sample_rate));
  if (a.codec != b.codec) return differ("codec", a.codec, b.codec);
  if (a.fields != b.fields)
    return differ("fields", nlohmann::json(a.fields).dump(), nlohmann::json(b.fields).dump());
  if (a.features != b.features) return differ("features", a.features.dump(), b.features.dump());
  if (a.tokenizer != b.tokenizer)
    return differ("tokenizer", a.tokenizer.dump(), b.tokenizer.dump());
  return Status::OK();
}

Status Merge(const MergeArgs& a, shards::Manifest* out) {
  std::error_code ec;
  if (fs::exists(a.out + "/" + shards::kManifestName)) {
    return Status::InvalidArgument(a.out + " already holds a dataset. HINT: choose an empty --out");
  }
  fs::create_directories(a.out, ec);
  if (ec) return Status::IOError(a.out + ": " + ec.message());
  std::string rejects;
  std::unordered_set<std::string> keys;
  uint64_t duplicate_keys = 0;
  nlohmann::json sources = nlohmann::json::array();
  for (size_t p = 0; p < a.parts.size(); ++p) {
    const std::string& dir = a.parts[p];
    shards::Manifest m;
    SLUICE_RETURN_IF_ERROR(shards::LoadManifest(dir, &m));
    if (p == 0) {
      *out = m;
      out->shards.clear();
      out->records = out->rejected = out->tokens = 0;
    } else {
      SLUICE_RETURN_IF_ERROR(Compatible(*out, m, dir));
    }
    for (const auto& e : m.shards) {
      std::unique_ptr<shards::ShardReader> r;
      SLUICE_RETURN_IF_ERROR(shards::ShardReader::Open(dir + "/" + e.file, {}, &r));
      for (size_t i = 0; i < r->num_records(); ++i)
        duplicate_keys += !keys.emplace(r->key(i)).second;
      shards::ShardEntry ne = e;
      ne.file = shards::ShardFileName(static_cast<uint32_t>(out->shards.size()));
      const std::string from = dir + "/" + e.file, to = a.out + "/" + ne.file;
      fs::remove(to, ec);
      fs::create_hard_link(from, to, ec);
      if (ec) {
        ec.clear();
        fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
        if (ec) return Status::IOError("copy " + from + " -> " + to + ": " + ec.message());
      }
      out->shards.push_back(ne);
    }
    std::string part_rejects;
    if (fs::exists(dir + "/rejects.jsonl"))
      SLUICE_RETURN_IF_ERROR(shards::ReadFileToString(dir + "/rejects.jsonl", &part_rejects));
    rejects += part_rejects;
    out->records += m.records;
    out->rejected += m.rejected;
    out->tokens += m.tokens;
    sources.push_back({{"dir", dir}, {"source", m.source}});
  }
  if (duplicate_keys > 0 && !a.allow_duplicate_keys) {
    return Status::InvalidArgument(
        std::to_string(duplicate_keys) +
        " record keys appear in more than one part. HINT: parts of one input never "
        "overlap; were the same inputs given to two parts? --allow-duplicate-keys merges anyway");
  }
  if (duplicate_keys > 0) {
    std::fprintf(stderr, "shardify merge: warning: %llu record keys appear in more than one part\n",
                 static_cast<unsigned long long>(duplicate_keys));
  }
  out->source = {{"merged", sources}};
  out->created_by = kVersion;
  SLUICE_RETURN_IF_ERROR(shards::WriteFileAtomic(a.out + "/rejects.jsonl", rejects));
  return shards::SaveManifest(a.out, *out);
}

int Run(const MergeArgs& a) {
  shards::Manifest m;
  Status st = Merge(a, &m);
  if (!st.ok()) return ReportError(st);
  if (a.json) {
    std::printf("%s\n", nlohmann::json{{"records", m.records},
                                       {"rejected", m.rejected},
                                       {"shards", m.shards.size()},
                                       {"seconds", m.seconds()},
                                       {"bytes", m.bytes()}}
                            .dump()
                            .c_str());
  } else {
    std::printf("merge: %zu parts -> %s: %llu records, %llu rejected, %zu shards, %.2f h\n",
                a.parts.size(), a.out.c_str(), (unsigned long long)m.records,
                (unsigned long long)m.rejected, m.shards.size(), m.seconds() / 3600);
  }
  return 0;
}

}  // namespace

void RegisterMerge(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<MergeArgs>();
  CLI::App* sub =
      app->add_subcommand("merge", "Combine the datasets of --part i/N runs into one dataset");
  sub->add_option("parts", args->parts, "Part dataset directories, in part order")
      ->required()
      ->expected(1, -1);
  sub->add_option("-o,--out", args->out, "Output dataset directory")->required();
  sub->add_flag("--json", args->json, "Print the summary as one JSON object");
  sub->add_flag("--allow-duplicate-keys", args->allow_duplicate_keys,
                "Merge even if a record key appears in two parts (a single run would have rejected "
                "the second)");
  sub->callback([args, exit_code] { *exit_code = Run(*args); });
}

}  // namespace sluice::shardify
