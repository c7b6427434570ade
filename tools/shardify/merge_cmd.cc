// shardify merge: combines the datasets of `--part i/N` runs into one.
//
// It first checks, from the parts' completion markers (part.json, part.h), that
// every part 0..N-1 is there, complete and cut from the same input with the
// same options, and refuses naming the missing ones otherwise. By default the
// shards are hard-linked (copied across file systems) into --out under new
// consecutive names; their bytes are unchanged, so their checksums carry over,
// but every part ends its own shard. With --repack, the records are written
// again with the parts' writer options, which gives the shards of a single run
// byte for byte (docs/shardify.md "Scale-out").
#include <filesystem>
#include <fstream>
#include <memory>
#include <unordered_set>

#include "base/file.h"
#include "commands.h"
#include "loader/dataset_tokenizer.h"
#include "out_lock.h"
#include "part.h"
#include "shards/dataset_writer.h"
#include "shards/shard_reader.h"

namespace sluice::shardify {
namespace fs = std::filesystem;
namespace {

struct MergeArgs {
  std::vector<std::string> parts;
  std::string parts_dir;
  std::string out;
  bool repack = false;
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
  if (*a.features != *b.features) return differ("features", a.features->dump(), b.features->dump());
  // By meaning, as mixtures compare (the path a file was given by is no part of the ids).
  const std::string why = loader::TokenizerDifference(*a.tokenizer, *b.tokenizer);
  if (!why.empty())
    return differ("tokenizer (" + why + ")", a.tokenizer->dump(), b.tokenizer->dump());
  if (a.columns != b.columns) {
    auto list = [](const std::vector<shards::ColumnSpec>& cols) {
      std::string s;
      for (const shards::ColumnSpec& c : cols)
        s += (s.empty() ? "" : ",") + c.name + ":" + shards::ColumnTypeName(c.type);
      return s;
    };
    return differ("columns", list(a.columns), list(b.columns));
  }
  if (a.segments != b.segments || a.chunk_samples != b.chunk_samples)
    return differ("segments", a.segments + " " + std::to_string(a.chunk_samples),
                  b.segments + " " + std::to_string(b.chunk_samples));
  return Status::OK();
}

// --repack: the parts' writer options, from the first marker (CollectParts checked that every
// part used the same).
Status RepackOptions(const PartMarker& m, shards::DatasetWriterOptions* o) {
  try {
    o->shard_size = m.writer.at("shard_size").get<uint64_t>();
    o->shard.block_size = m.writer.at("block_size").get<uint64_t>();
    o->shard.zstd_level = m.writer.at("zstd_level").get<int>();
  } catch (const std::exception& e) {
    return Status::Corruption(std::string("part marker: writer options: ") + e.what());
  }
  return Status::OK();
}

// The tokenizer file (tokenizer.model, tokenizer.json or tokenizer.tiktoken): the same in every
// part (all train on, or read, the same input), copied once.
Status CopyTokenizerFile(const std::vector<CompletePart>& parts, const std::string& out_dir,
                         const std::string& name) {
  std::error_code ec;
  const bool with_model = fs::exists(parts[0].dir + "/" + name, ec);
  std::string first;
  for (const auto& part : parts) {
    const std::string path = part.dir + "/" + name;
    if (fs::exists(path, ec) != with_model) {
      return Status::InvalidArgument(parts[0].dir + ", " + part.dir + ": " + name +
                                     " is in one of them only. HINT: run every part with the "
                                     "same --tokenizer");
    }
    if (!with_model) continue;
    std::string bytes;
    SLUICE_RETURN_IF_ERROR(ReadFileToString(path, &bytes));
    if (&part == &parts[0]) {
      first = std::move(bytes);
    } else if (bytes != first) {
      return Status::InvalidArgument(path + " differs from " + parts[0].dir + "/" + name +
                                     ". HINT: run every part with the same --tokenizer");
    }
  }
  if (!with_model) return Status::OK();
  return WriteFileAtomic(out_dir + "/" + name, first);
}

Status CopyTokenizerModel(const std::vector<CompletePart>& parts, const std::string& out_dir) {
  for (const char* name : loader::kTokenizerFileNames)
    SLUICE_RETURN_IF_ERROR(CopyTokenizerFile(parts, out_dir, name));
  return Status::OK();
}

// Whether `out_dir` holds the merge of exactly these parts, complete: a rerun after a failure
// past the manifest's rename (its directory fsync, say) then succeeds instead of refusing.
Status AlreadyMerged(const std::string& out_dir, const std::vector<CompletePart>& parts,
                     shards::Manifest* existing, bool* same) {
  *same = false;
  SLUICE_RETURN_IF_ERROR(shards::LoadManifest(out_dir, existing));
  nlohmann::json sources = nlohmann::json::array();
  for (const auto& p : parts) {
    shards::Manifest m;
    SLUICE_RETURN_IF_ERROR(shards::LoadManifest(p.dir, &m));
    sources.push_back({{"dir", p.dir}, {"source", *m.source}});
  }
  if (*existing->source != nlohmann::json{{"merged", sources}}) return Status::OK();
  for (const auto& e : existing->shards) {
    std::error_code ec;
    if (fs::file_size(out_dir + "/" + e.file, ec) != e.bytes || ec) return Status::OK();
  }
  *same = true;
  return Status::OK();
}

// The part directories: as given, or those under --parts-dir but --out.
Status PartDirs(const MergeArgs& a, std::vector<std::string>* dirs) {
  *dirs = a.parts;
  if (!a.parts_dir.empty()) {
    if (!dirs->empty()) {
      return Status::InvalidArgument(
          "give the parts either as directories or with --parts-dir, not both");
    }
    SLUICE_RETURN_IF_ERROR(ListPartDirs(a.parts_dir, dirs));
    // --out may sit inside --parts-dir (parts/merged): it is not a part.
    std::error_code ec;
    const fs::path out_abs = fs::weakly_canonical(a.out, ec);
    std::erase_if(*dirs, [&](const std::string& d) {
      std::error_code e;
      return fs::weakly_canonical(d, e) == out_abs;
    });
  }
  if (dirs->empty()) return Status::InvalidArgument("merge: no part directories given");
  return Status::OK();
}

// A part may reject all of its items; the whole input, as a single run, may not.
Status SomethingWasWritten(const std::vector<CompletePart>& parts) {
  uint64_t records = 0, rejected = 0;
  for (const auto& p : parts) {
    records += p.marker.records;
    rejected += p.marker.rejected;
  }
  if (records > 0 || rejected == 0) return Status::OK();
  return Status::InvalidArgument(
      "every one of the " + std::to_string(rejected) + " input items of the " +
      std::to_string(parts.size()) + " parts was rejected (see each part's rejects.jsonl), so " +
      "there is no dataset to merge. HINT: check that the input is the file you meant");
}

Status Merge(const MergeArgs& a, shards::Manifest* out, size_t* num_parts) {
  std::vector<std::string> dirs;
  SLUICE_RETURN_IF_ERROR(PartDirs(a, &dirs));
  std::vector<CompletePart> parts;
  SLUICE_RETURN_IF_ERROR(CollectParts(dirs, &parts));
  *num_parts = parts.size();
  SLUICE_RETURN_IF_ERROR(SomethingWasWritten(parts));
  // Before anything looks at --out: a second merge (or shardify run) must not pass the same
  // checks and interleave its files with ours.
  std::unique_ptr<OutDirLock> lock;
  SLUICE_RETURN_IF_ERROR(OutDirLock::Acquire(a.out, "shardify merge", &lock));
  if (fs::exists(a.out + "/" + shards::kManifestName)) {
    bool same = false;
    SLUICE_RETURN_IF_ERROR(AlreadyMerged(a.out, parts, out, &same));
    if (same) {
      std::fprintf(stderr, "shardify merge: %s already holds this merge; nothing to do\n",
                   a.out.c_str());
      return Status::OK();
    }
    return Status::InvalidArgument(a.out + " already holds a dataset. HINT: choose an empty --out");
  }
  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec) return Status::IOError(a.out + ": " + ec.message());
  std::unique_ptr<shards::DatasetWriter> writer;
  shards::DatasetWriterOptions wopt;
  if (a.repack) SLUICE_RETURN_IF_ERROR(RepackOptions(parts[0].marker, &wopt));
  std::string rejects;
  std::unordered_set<std::string> keys;
  uint64_t duplicate_keys = 0;
  nlohmann::json sources = nlohmann::json::array();
  for (size_t p = 0; p < parts.size(); ++p) {
    const std::string& dir = parts[p].dir;
    shards::Manifest m;
    SLUICE_RETURN_IF_ERROR(shards::LoadManifest(dir, &m));
    // Segments refer to their recording's chunks by shard-local record index, which a repack
    // would move; the hard-linked shards keep them.
    if (a.repack && m.stored_segments())
      return Status::Unsupported(dir +
                                 ": its segments are stored recordings' (--segments stored), "
                                 "which --repack cannot move yet. HINT: merge without --repack");
    if (p == 0) {
      *out = m;
      out->shards.clear();
      out->records = out->rejected = out->tokens = 0;
      // The repacked shards keep the parts' metadata columns (Compatible: every part's).
      wopt.shard.columns = m.columns;
      if (a.repack) writer = std::make_unique<shards::DatasetWriter>(a.out, wopt);
    } else {
      SLUICE_RETURN_IF_ERROR(Compatible(*out, m, dir));
    }
    for (const auto& e : m.shards) {
      std::unique_ptr<shards::ShardReader> r;
      SLUICE_RETURN_IF_ERROR(shards::ShardReader::Open(dir + "/" + e.file, {}, &r));
      if (r->columns().specs() != m.columns)
        return Status::Corruption(dir + "/" + e.file +
                                  ": its index columns are not its manifest.json's \"columns\"");
      for (size_t i = 0; i < r->num_records(); ++i)
        duplicate_keys += !keys.emplace(r->key(i)).second;
      if (writer) {
        std::string payload;
        std::vector<shards::ColumnValue> columns;
        for (size_t i = 0; i < r->num_records(); ++i) {
          SLUICE_RETURN_IF_ERROR(r->ReadRecord(i, &payload));
          const shards::RecordEntry& re = r->record(i);
          shards::RowValues(r->columns(), i, &columns);
          SLUICE_RETURN_IF_ERROR(
              writer->Add({r->key(i), re.duration, re.tokens, r->aux(i), columns}, payload));
        }
        continue;
      }
      shards::ShardEntry ne = e;
      ne.file = shards::ShardFileName(static_cast<uint32_t>(out->shards.size()));
      ne.footer_xxh3 = r->footer_xxh3();  // also for parts written before manifests held it
      SLUICE_RETURN_IF_ERROR(LinkOrCopyFile(dir + "/" + e.file, a.out + "/" + ne.file));
      out->shards.push_back(ne);
    }
    std::string part_rejects;
    if (fs::exists(dir + "/rejects.jsonl"))
      SLUICE_RETURN_IF_ERROR(ReadFileToString(dir + "/rejects.jsonl", &part_rejects));
    rejects += part_rejects;
    out->records += m.records;
    out->rejected += m.rejected;
    out->tokens += m.tokens;
    sources.push_back({{"dir", dir}, {"source", *m.source}});
  }
  if (writer) {
    SLUICE_RETURN_IF_ERROR(writer->Finish());
    out->shards = writer->shards();
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
  *out->source = {{"merged", sources}};
  out->created_by = kVersion;
  SLUICE_RETURN_IF_ERROR(WriteFileAtomic(a.out + "/rejects.jsonl", rejects));
  SLUICE_RETURN_IF_ERROR(CopyTokenizerModel(parts, a.out));
  return shards::SaveManifest(a.out, *out);
}

int Run(const MergeArgs& a) {
  shards::Manifest m;
  size_t num_parts = 0;
  Status st = Merge(a, &m, &num_parts);
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
                num_parts, a.out.c_str(), (unsigned long long)m.records,
                (unsigned long long)m.rejected, m.shards.size(), m.seconds() / 3600);
  }
  return 0;
}

}  // namespace

void RegisterMerge(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<MergeArgs>();
  CLI::App* sub =
      app->add_subcommand("merge", "Combine the datasets of --part i/N runs into one dataset");
  sub->add_option("parts", args->parts,
                  "Part dataset directories, in any order (their part.json gives it)")
      ->expected(0, -1);
  sub->add_option("--parts-dir", args->parts_dir,
                  "Merge every subdirectory of this directory (e.g. parts/ of parts/0 .. "
                  "parts/15, as an array job writes them) instead of listing them");
  sub->add_option("-o,--out", args->out, "Output dataset directory")->required();
  sub->add_flag("--repack", args->repack,
                "Rewrite the records into new shards, as one run would have cut them (byte for "
                "byte), instead of linking each part's shards");
  sub->add_flag("--json", args->json, "Print the summary as one JSON object");
  sub->add_flag("--allow-duplicate-keys", args->allow_duplicate_keys,
                "Merge even if a record key appears in two parts (a single run would have rejected "
                "the second)");
  sub->callback([args, exit_code] { *exit_code = Run(*args); });
}

}  // namespace sluice::shardify
