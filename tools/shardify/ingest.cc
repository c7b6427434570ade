#include "ingest.h"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <unordered_map>

#include "base/cpus.h"
#include "fingerprint.h"
#include "loader/dataset_tokenizer.h"
#include "out_lock.h"
#include "part.h"
#include "progress.h"
#include "rejects.h"
#include "set_aside.h"
#include "shards/checksum.h"
#include "shards/file.h"
#include "shards/shard_reader.h"

namespace sluice::shardify {
namespace fs = std::filesystem;
namespace {

constexpr const char* kRejectsName = "rejects.jsonl";

struct ResumePoint {
  bool active = false;
  uint64_t next_item = 0;
  uint64_t rejects_bytes = 0;
  uint64_t rejected = 0;
  std::vector<shards::ShardEntry> shards;
};

bool IsOurFile(const std::string& name) {
  return name == shards::kManifestName || name == kJournalName || name == kRejectsName ||
         name == kPartMarkerName || name == std::string(kPartMarkerName) + ".tmp" ||
         name == loader::kTokenizerModelName ||
         name == std::string(shards::kManifestName) + ".tmp" ||
         (name.rfind("shard-", 0) == 0 &&
          (name.ends_with(".sluice") || name.ends_with(".sluice.tmp")));
}

// Reads the journal of an interrupted run. Shard files it lists must exist
// with the recorded size; files it does not list are leftovers of the shard
// that was being written and are removed.
Status LoadJournal(const std::string& dir, const nlohmann::json& fingerprint, ResumePoint* rp) {
  const std::string path = dir + "/" + kJournalName;
  std::unique_ptr<shards::LineReader> in;
  Status st = shards::LineReader::Open(path, &in);
  if (st.IsNotFound()) return Status::OK();  // nothing to resume: start from the beginning
  SLUICE_RETURN_IF_ERROR(st);
  std::vector<std::string> lines;
  for (std::string line; in->Next(&line, &st);) lines.push_back(std::move(line));
  SLUICE_RETURN_IF_ERROR(st);  // a read error is not the end of the journal
  uint64_t lineno = 0;
  for (const std::string& line : lines) {
    ++lineno;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      // A torn last line (crash while appending) is expected; anything else is not.
      if (lineno == lines.size()) break;
      return Status::Corruption(path + ": line " + std::to_string(lineno) + ": not valid JSON");
    }
    try {
      if (lineno == 1) {
        if (j.at("fingerprint") != fingerprint) {
          return Status::InvalidArgument(
              dir + ": the interrupted run used other inputs or options: " +
              FingerprintDifference(fingerprint, j.at("fingerprint"), "the journal") +
              ". HINT: resume with the same command line, or pass --overwrite to start over");
        }
        continue;
      }
      shards::ShardEntry e;
      SLUICE_RETURN_IF_ERROR(
          shards::ShardEntryFromJson(j.at("shard"), path + ": line " + std::to_string(lineno), &e));
      rp->shards.push_back(std::move(e));
      rp->next_item = j.at("next_item").get<uint64_t>();
      rp->rejects_bytes = j.at("rejects_bytes").get<uint64_t>();
      rp->rejected = j.at("rejected").get<uint64_t>();
    } catch (const std::exception& e) {
      return Status::Corruption(path + ": line " + std::to_string(lineno) + ": " + e.what());
    }
  }
  rp->active = true;
  for (const auto& e : rp->shards) {
    std::error_code ec;
    const auto size = fs::file_size(dir + "/" + e.file, ec);
    if (ec || size != e.bytes) {
      return Status::Corruption(dir + "/" + e.file + ": listed in the journal with " +
                                std::to_string(e.bytes) + " bytes but " +
                                (ec ? "missing" : "has " + std::to_string(size)) +
                                ". HINT: pass --overwrite to start over");
    }
  }
  return Status::OK();
}

void RemoveOurFiles(const std::string& dir) {
  std::error_code ec;
  for (const auto& de : fs::directory_iterator(dir)) {
    if (IsOurFile(de.path().filename().string())) fs::remove(de.path(), ec);
  }
}

// The part ("3/16") whose output `dir` holds without a marker: from the journal of an
// interrupted run, else from a manifest written just before a crash; "" when neither says.
std::string UnmarkedPart(const std::string& dir) {
  if (std::string part = JournalPart(dir); !part.empty()) return part;
  shards::Manifest m;
  if (shards::LoadManifest(dir, &m).ok() && m.source->is_object() && m.source->contains("part") &&
      (*m.source)["part"].is_string())
    return (*m.source)["part"].get<std::string>();
  return "";
}

// A part's directory when the part runs again (a scheduler's retry, or failed parts
// resubmitted with the same script). Complete with the same inputs and options: nothing to
// do. Complete otherwise: refused. Incomplete: removed and redone from its first item, or,
// with --resume, continued from its journal (the caller's usual path: *handled stays false).
Status PreparePartDir(const IngestOptions& opt, const std::string& input_xxh3, bool* handled,
                      bool* already_complete) {
  const std::string spec = PartSpec(opt.part, opt.parts);
  PartMarker marker;
  Status st = LoadPartMarker(opt.out_dir, &marker);
  if (st.ok()) {
    if (marker.input_xxh3 != input_xxh3) {
      return Status::InvalidArgument(opt.out_dir + " holds part " +
                                     PartSpec(marker.part, marker.parts) +
                                     ", completed from another version of the input (XXH3 " +
                                     marker.input_xxh3 + ", now " + input_xxh3 +
                                     "). HINT: rerun every part on the current input, with "
                                     "--overwrite");
    }
    if (marker.options == opt.fingerprint) {
      *handled = *already_complete = true;
      return Status::OK();
    }
    return Status::InvalidArgument(
        opt.out_dir + " holds part " + PartSpec(marker.part, marker.parts) +
        ", completed with other inputs or options: " +
        FingerprintDifference(opt.fingerprint, marker.options, "part.json") +
        ". HINT: choose another --out, or pass --overwrite to replace it");
  }
  if (!st.IsNotFound()) {
    return Status::InvalidArgument(opt.out_dir + ": " + st.message() +
                                   ". HINT: pass --overwrite to redo this part");
  }
  bool ours = false, shards_present = false;
  for (const auto& de : fs::directory_iterator(opt.out_dir)) {
    const std::string name = de.path().filename().string();
    ours |= IsOurFile(name);
    shards_present |= IsOurFile(name) && name.rfind("shard-", 0) == 0;
  }
  if (!ours) return Status::OK();  // *handled false: a fresh start by the usual path
  // Output of another part in this directory means the part number came out wrong (say
  // --part auto in an array rerun of a single id): refuse rather than destroy it. A run that
  // failed before its journal was durable left nothing to protect (no journal, manifest or
  // shard): that is redone.
  const std::string other = UnmarkedPart(opt.out_dir);
  if (other != spec && (!other.empty() || shards_present)) {
    return Status::InvalidArgument(
        opt.out_dir + " holds the unfinished output of " +
        (other.empty() ? std::string("a run that is not a part") : "part " + other) +
        ", but this run is part " + spec +
        ". HINT: check --part (for a rerun of some array ids use --part auto/N), or pass "
        "--overwrite to replace it");
  }
  const bool has_manifest = fs::exists(opt.out_dir + "/" + shards::kManifestName);
  if (opt.resume && !has_manifest) return Status::OK();
  RemoveOurFiles(opt.out_dir);
  *handled = true;
  return Status::OK();
}

Status PrepareOutDir(const IngestOptions& opt, const std::string& input_xxh3, ResumePoint* rp,
                     bool* already_complete) {
  std::error_code ec;
  if (opt.is_part && !opt.overwrite) {
    bool handled = false;
    SLUICE_RETURN_IF_ERROR(PreparePartDir(opt, input_xxh3, &handled, already_complete));
    if (handled) return Status::OK();
  }
  const bool has_manifest = fs::exists(opt.out_dir + "/" + shards::kManifestName);
  const bool has_journal = fs::exists(opt.out_dir + "/" + kJournalName);
  bool has_shards = false;
  for (const auto& de : fs::directory_iterator(opt.out_dir)) {
    if (de.path().filename().string().rfind("shard-", 0) == 0) has_shards = true;
  }
  if (opt.overwrite) {
    // Kept aside until the new dataset is complete: a run that rejects every input puts it back.
    if (has_manifest && !opt.is_part) SLUICE_RETURN_IF_ERROR(SetAsideDataset(opt.out_dir));
    RemoveOurFiles(opt.out_dir);
    return Status::OK();
  }
  if (has_manifest) {
    if (opt.resume) {
      // The manifest is renamed into place only after every shard is durable: complete, but
      // only the run's own command line may call it finished.
      SLUICE_RETURN_IF_ERROR(CheckCompleteDataset(opt.out_dir, opt.fingerprint, input_xxh3));
      // A failure after the rename (the directory's fsync) can leave the journal, removed here.
      fs::remove(opt.out_dir + "/" + kJournalName, ec);
      *already_complete = true;
      return Status::OK();
    }
    return Status::InvalidArgument(opt.out_dir +
                                   " already holds a dataset (manifest.json). HINT: choose another "
                                   "--out, or pass --overwrite to replace it");
  }
  if (!opt.resume && (has_journal || has_shards)) {
    return Status::InvalidArgument(opt.out_dir +
                                   " holds the shards of an interrupted run. HINT: pass --resume "
                                   "to continue it, or --overwrite to start over");
  }
  if (opt.resume) SLUICE_RETURN_IF_ERROR(LoadJournal(opt.out_dir, opt.fingerprint, rp));
  // Remove what the journal does not vouch for: temporary files and a shard
  // renamed after the last journal line was written (it will be rewritten identically).
  for (const auto& de : fs::directory_iterator(opt.out_dir)) {
    const std::string name = de.path().filename().string();
    if (!IsOurFile(name) || name == kJournalName || name == kRejectsName) continue;
    bool listed = false;
    for (const auto& e : rp->shards) listed |= e.file == name;
    if (!listed) fs::remove(de.path(), ec);
  }
  return Status::OK();
}

struct Work {
  InputItem item;
  ItemResult result;
};

// The error for a run that wrote no record, with the first reasons from rejects.jsonl. The
// dataset an --overwrite set aside goes back (set_aside.h), and then the rejects with it.
Status AllRejected(const std::string& dir, uint64_t items) {
  const std::string rejects_path = dir + "/" + kRejectsName;
  std::string first;
  std::unique_ptr<shards::LineReader> in;
  Status st = shards::LineReader::Open(rejects_path, &in);
  std::string line;
  for (int n = 0; st.ok() && n < 3 && in->Next(&line, &st); ++n) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) break;
    first += "\n  " + j.value("source", std::string("?")) + ":" +
             std::to_string(j.value("line", uint64_t{0})) + ": " +
             j.value("reason", std::string("?"));
  }
  bool restored = false;
  SLUICE_RETURN_IF_ERROR(RestoreDataset(dir, &restored));
  return Status::InvalidArgument(
      "every one of the " + std::to_string(items) + " input items was rejected, so no dataset " +
      "was written" +
      (restored ? "; " + dir + " keeps the dataset it held" : " (" + rejects_path + " lists why)") +
      ". The first reasons:" + first +
      "\nHINT: check that the input is the file you meant, in the format the command reads");
}

}  // namespace

Status RunIngest(ItemSource* source, const ProcessFn& process, const IngestOptions& opt,
                 shards::Manifest manifest, IngestSummary* summary) {
  const auto t0 = std::chrono::steady_clock::now();
  // Before anything looks at the directory: a second run must not pass the same checks.
  std::unique_ptr<OutDirLock> lock;
  SLUICE_RETURN_IF_ERROR(OutDirLock::Acquire(
      opt.out_dir, "shardify " + opt.fingerprint.value("command", std::string("ingest")), &lock));
  // The first pass over the input, before the output directory is touched: a part compares
  // the input's digest with its marker's.
  uint64_t total = 0, input_digest = 0;
  SLUICE_RETURN_IF_ERROR(source->Count(&total, &input_digest));
  ResumePoint rp;
  bool already_complete = false;
  SLUICE_RETURN_IF_ERROR(
      PrepareOutDir(opt, shards::ChecksumHex(input_digest), &rp, &already_complete));
  if (already_complete) {
    SLUICE_RETURN_IF_ERROR(shards::LoadManifest(opt.out_dir, &summary->manifest));
    summary->records = summary->manifest.records;
    summary->rejected = summary->manifest.rejected;
    summary->resumed = true;
    summary->already_complete = true;
    if (opt.is_part) {
      std::fprintf(stderr, "shardify: part %s in %s is already complete (%s); nothing to do\n",
                   PartSpec(opt.part, opt.parts).c_str(), opt.out_dir.c_str(), kPartMarkerName);
    }
    return Status::OK();
  }

  const uint64_t begin = total * opt.part / opt.parts;
  const uint64_t end = total * (opt.part + 1) / opt.parts;
  const uint64_t start = std::max(begin, rp.next_item);
  summary->items = end - begin;
  summary->resumed = rp.active && !rp.shards.empty();
  summary->resumed_at_item = start;

  RejectsWriter rejects;
  SLUICE_RETURN_IF_ERROR(
      rejects.Open(opt.out_dir + "/" + kRejectsName, rp.active ? rp.rejects_bytes : 0));
  rejects.set_count(rp.active ? rp.rejected : 0);

  const std::string journal_path = opt.out_dir + "/" + kJournalName;
  // The journal is rewritten from what was loaded, which drops a torn last line.
  std::string journal_text =
      nlohmann::json{{"journal", 1}, {"fingerprint", opt.fingerprint}}.dump() + "\n";
  // Keys already written, to reject duplicates; the journal's shards seed it.
  // Each maps to where it was written ("record 3 of shard-00000.sluice"), which
  // a resumed run can tell as well as an uninterrupted one.
  std::unordered_map<std::string, std::string> seen_keys;
  uint64_t records_before = 0;
  for (auto& e : rp.shards) {
    std::unique_ptr<shards::ShardReader> r;
    SLUICE_RETURN_IF_ERROR(shards::ShardReader::Open(opt.out_dir + "/" + e.file, {}, &r));
    // A journal written before manifests recorded footers: the manifest still gets one.
    if (!e.footer_xxh3) e.footer_xxh3 = r->footer_xxh3();
    for (size_t i = 0; i < r->num_records(); ++i) {
      seen_keys.emplace(std::string(r->key(i)), "record " + std::to_string(i) + " of " + e.file);
    }
    records_before += e.records;
    journal_text += nlohmann::json{{"shard", shards::ShardEntryToJson(e)},
                                   {"next_item", rp.next_item},
                                   {"rejects_bytes", rp.rejects_bytes},
                                   {"rejected", rp.rejected}}
                        .dump() +
                    "\n";
  }
  SLUICE_RETURN_IF_ERROR(shards::WriteFileAtomic(journal_path, journal_text));
  std::unique_ptr<shards::WritableFile> journal;
  SLUICE_RETURN_IF_ERROR(
      shards::WritableFile::OpenForAppend(journal_path, journal_text.size(), &journal));

  // Fault injection for the interrupted-run test (docs/shardify.md): exit
  // abruptly once N shards are durable and the next one has been started.
  const char* fault = std::getenv("SHARDIFY_TEST_EXIT_AFTER_SHARDS");
  const long exit_after_shards = fault ? std::atol(fault) : -1;
  long shards_done = 0;

  uint64_t next_item_after_shard = start;
  auto on_shard_done = [&](const shards::ShardEntry& e) -> Status {
    SLUICE_RETURN_IF_ERROR(rejects.Flush());
    const std::string line = nlohmann::json{{"shard", shards::ShardEntryToJson(e)},
                                            {"next_item", next_item_after_shard},
                                            {"rejects_bytes", rejects.bytes()},
                                            {"rejected", rejects.count()}}
                                 .dump() +
                             "\n";
    SLUICE_RETURN_IF_ERROR(journal->Append(line));
    SLUICE_RETURN_IF_ERROR(journal->Sync());
    ++shards_done;
    return Status::OK();
  };

  shards::DatasetWriterOptions wopt = opt.writer;
  wopt.first_shard_index = static_cast<uint32_t>(rp.shards.size());
  shards::DatasetWriter writer(opt.out_dir, wopt, on_shard_done);

  const int threads = opt.threads > 0 ? opt.threads : UsableCores();
  Progress progress(opt.progress_what, end - start, opt.progress);
  std::atomic<bool> stop{false};
  Status failure;
  uint64_t done = 0, input_bytes = 0, written = 0, clipped_files = 0, clipped_samples = 0;

  auto read_stage = [&](tbb::flow_control& fc) -> Work* {
    while (!stop.load(std::memory_order_relaxed)) {
      auto w = std::make_unique<Work>();
      Status st;
      if (!source->Next(&w->item, &st)) {
        if (!st.ok()) {
          failure = st;
          stop = true;
        }
        break;
      }
      if (w->item.index < start) continue;
      if (w->item.index >= end) break;
      return w.release();
    }
    fc.stop();
    return nullptr;
  };
  auto process_stage = [&](Work* w) -> Work* {
    try {
      process(w->item, &w->result);
    } catch (const std::bad_alloc&) {
      // Out of memory is the machine's state, not the item's: rejecting it would drop good
      // records from a run under memory pressure. The run stops (main names the options that
      // bound memory) and --resume continues it.
      throw;
    } catch (const std::exception& e) {
      // One item's failure (an allocation its numbers asked for, a library's exception) is
      // that item's rejection: it would otherwise cancel the pipeline and stop the whole run
      // with an error that names no record.
      w->result = ItemResult();
      w->result.reason = std::string("internal error while processing this item: ") + e.what();
    }
    return w;
  };
  auto write_stage = [&](Work* raw) {
    std::unique_ptr<Work> w(raw);
    if (stop.load(std::memory_order_relaxed)) return;
    ItemResult& r = w->result;
    if (!r.fault.ok()) {
      failure = r.fault;
      stop = true;
      return;
    }
    Status st;
    if (r.ok) {
      const auto [shard, record] = writer.NextPosition();
      auto [it, inserted] = seen_keys.emplace(
          r.key, "record " + std::to_string(record) + " of " + shards::ShardFileName(shard));
      if (!inserted) {
        r.ok = false;
        r.reason = "duplicate key '" + r.key + "', already written as " + it->second;
      }
    }
    if (r.ok) {
      if (!r.warning.empty()) std::fprintf(stderr, "shardify: warning: %s\n", r.warning.c_str());
      clipped_files += r.clipped_samples > 0;
      clipped_samples += r.clipped_samples;
      next_item_after_shard = w->item.index + 1;
      st = writer.Add({r.key, r.duration, r.tokens}, r.payload);
      written++;
      if (exit_after_shards >= 0 && shards_done >= exit_after_shards &&
          writer.pending_records() > 0) {
        std::fprintf(stderr, "shardify: SHARDIFY_TEST_EXIT_AFTER_SHARDS: exiting abruptly\n");
        std::_Exit(3);
      }
    } else {
      st = rejects.Add(w->item.source, w->item.line, r.reason, w->item.text);
    }
    input_bytes += r.input_bytes;
    progress.Update(++done, input_bytes);
    if (!st.ok()) {
      failure = st;
      stop = true;
    }
  };

  tbb::task_arena arena(threads);
  arena.execute([&] {
    // Items in flight: enough to keep every thread busy while the in-order
    // writer waits for a slow item, few enough to bound memory (each holds
    // one decoded clip).
    tbb::parallel_pipeline(
        static_cast<size_t>(threads) * 4,
        tbb::make_filter<void, Work*>(tbb::filter_mode::serial_in_order, read_stage) &
            tbb::make_filter<Work*, Work*>(tbb::filter_mode::parallel, process_stage) &
            tbb::make_filter<Work*, void>(tbb::filter_mode::serial_in_order, write_stage));
  });
  progress.Finish();
  if (failure.ok()) {
    next_item_after_shard = end;
    failure = writer.Finish();
  }
  if (Status st = journal->Close(); failure.ok()) failure = st;
  SLUICE_RETURN_IF_ERROR(failure);
  SLUICE_RETURN_IF_ERROR(rejects.Close());

  manifest.shards = rp.shards;
  for (const auto& e : writer.shards()) manifest.shards.push_back(e);
  manifest.records = records_before + written;
  if (manifest.records == 0 && end > begin && !opt.is_part) {
    // Not a dataset: an input whose every item is rejected is the wrong file or format.
    std::error_code ec;
    fs::remove(journal_path, ec);
    return AllRejected(opt.out_dir, end - begin);
  }
  manifest.rejected = rejects.count();
  manifest.tokens = 0;
  for (const auto& e : manifest.shards) manifest.tokens += e.tokens;
  if (opt.is_part) {
    (*manifest.source)["part"] = PartSpec(opt.part, opt.parts);
    (*manifest.source)["items"] = {begin, end};
  }
  // What --resume over the complete dataset compares its command line with (fingerprint.h).
  (*manifest.source)["options"] = opt.fingerprint;
  (*manifest.source)["input_xxh3"] = shards::ChecksumHex(input_digest);
  for (const auto& [name, bytes] : opt.extra_files) {
    SLUICE_RETURN_IF_ERROR(shards::WriteFileAtomic(opt.out_dir + "/" + name, bytes));
  }
  SLUICE_RETURN_IF_ERROR(shards::SaveManifest(opt.out_dir, manifest));
  std::error_code ec;
  fs::remove(journal_path, ec);
  if (opt.is_part) {
    // Last: the marker vouches for everything above (part.h).
    if (const char* f = std::getenv("SHARDIFY_TEST_EXIT_BEFORE_MARKER"); f && *f == '1') {
      std::fprintf(stderr, "shardify: SHARDIFY_TEST_EXIT_BEFORE_MARKER: exiting abruptly\n");
      std::_Exit(3);
    }
    PartMarker pm;
    pm.part = opt.part;
    pm.parts = opt.parts;
    pm.first_item = begin;
    pm.end_item = end;
    pm.input_items = total;
    pm.input_xxh3 = shards::ChecksumHex(input_digest);
    pm.options = opt.fingerprint;
    pm.writer = {{"shard_size", opt.writer.shard_size},
                 {"block_size", opt.writer.shard.block_size},
                 {"zstd_level", opt.writer.shard.zstd_level}};
    pm.records = manifest.records;
    pm.rejected = manifest.rejected;
    std::string written;
    SLUICE_RETURN_IF_ERROR(
        shards::ReadFileToString(opt.out_dir + "/" + shards::kManifestName, &written));
    pm.manifest_xxh3 = shards::ChecksumHex(shards::Checksum(written.data(), written.size()));
    pm.created_by = manifest.created_by;
    SLUICE_RETURN_IF_ERROR(WritePartMarker(opt.out_dir, pm));
  }
  SLUICE_RETURN_IF_ERROR(DiscardSetAside(opt.out_dir));

  summary->records = manifest.records;
  summary->rejected = manifest.rejected;
  summary->input_bytes = input_bytes;
  summary->clipped_files = clipped_files;
  summary->clipped_samples = clipped_samples;
  for (const auto& e : writer.shards()) summary->duration_this_run += e.duration;
  summary->manifest = manifest;
  summary->wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::OK();
}

void PrintSummary(const IngestSummary& s, bool json) {
  const shards::Manifest& m = s.manifest;
  const double seconds = m.seconds();
  // Rates count this run's work only: a resumed run's earlier shards took no time here.
  const double seconds_done = m.sample_rate > 0 ? double(s.duration_this_run) / m.sample_rate : 0.0;
  const double wall = s.wall_seconds > 0 ? s.wall_seconds : 1e-9;
  const double zstd_ratio = m.bytes() ? double(m.raw_bytes()) / m.bytes() : 0;
  const double pcm_ratio =
      m.bytes() && m.kind == "audio" ? double(m.duration()) * 2 / m.bytes() : 0;
  if (json) {
    nlohmann::json j = {{"records", m.records},
                        {"rejected", m.rejected},
                        {"items", s.items},
                        {"shards", m.shards.size()},
                        {"seconds", seconds},
                        {"tokens", m.tokens},
                        {"bytes", m.bytes()},
                        {"raw_bytes", m.raw_bytes()},
                        {"input_bytes", s.input_bytes},
                        {"wall_seconds", s.wall_seconds},
                        {"zstd_ratio", zstd_ratio},
                        {"pcm16_ratio", pcm_ratio},
                        {"clipped_files", s.clipped_files},
                        {"clipped_samples", s.clipped_samples},
                        {"resumed", s.resumed},
                        {"already_complete", s.already_complete}};
    if (!s.already_complete) {  // nothing ran: no rates
      j["hours_per_second"] = seconds_done / 3600 / wall;
      j["input_mb_per_second"] = s.input_bytes / 1e6 / wall;
    }
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  if (s.already_complete) {  // nothing ran: no rates to print
    std::printf("shardify: already complete: %" PRIu64 " records, %" PRIu64
                " rejected; %zu shards\n",
                m.records, m.rejected, m.shards.size());
    return;
  }
  std::printf("shardify: %" PRIu64 " records written, %" PRIu64
              " rejected%s; %zu shards, %.2f h of audio, %.1f MB "
              "(zstd %.2fx%s) in %s: %.1f h/s (%.0fx real time), %.1f MB/s in\n",
              m.records, m.rejected, m.rejected ? " (see rejects.jsonl)" : "", m.shards.size(),
              seconds / 3600, m.bytes() / 1e6, zstd_ratio,
              pcm_ratio > 0
                  ? (", " + std::to_string(pcm_ratio).substr(0, 4) + "x smaller than PCM16").c_str()
                  : "",
              FormatDuration(s.wall_seconds).c_str(), seconds_done / 3600 / wall,
              seconds_done / wall, s.input_bytes / 1e6 / wall);
  if (s.clipped_files > 0) {
    std::printf("shardify: %" PRIu64 " records had samples beyond full scale, clipped (%" PRIu64
                " samples; the warnings above name the files)\n",
                s.clipped_files, s.clipped_samples);
  }
}

}  // namespace sluice::shardify
