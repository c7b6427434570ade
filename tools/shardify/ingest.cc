#include "ingest.h"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <new>
#include <unordered_map>

#include "base/cpus.h"
#include "base/file.h"
#include "fingerprint.h"
#include "loader/dataset_tokenizer.h"
#include "out_lock.h"
#include "part.h"
#include "progress.h"
#include "rejects.h"
#include "set_aside.h"
#include "shards/checksum.h"
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
         loader::IsTokenizerFileName(name) ||
         name == std::string(shards::kManifestName) + ".tmp" ||
         (name.rfind("shard-", 0) == 0 &&
          (name.ends_with(".sluice") || name.ends_with(".sluice.tmp")));
}

// Reads the journal of an interrupted run. Shard files it lists must exist
// with the recorded size; files it does not list are leftovers of the shard
// that was being written and are removed.
Status LoadJournal(const std::string& dir, const nlohmann::json& fingerprint,
                   const std::string& input_xxh3, ResumePoint* rp) {
  const std::string path = dir + "/" + kJournalName;
  std::unique_ptr<LineReader> in;
  Status st = LineReader::Open(path, &in);
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
        // The fingerprint holds the input's size; the digest tells an input changed in place
        // at the same size (a tar's audio, a manifest's digits). Journals of earlier versions
        // hold none and are resumed as before.
        if (j.contains("input_xxh3") && j["input_xxh3"] != input_xxh3) {
          return Status::InvalidArgument(
              dir + ": the interrupted run used other inputs or options: the input's items now "
                    "digest to XXH3 " +
              input_xxh3 + " (the journal: " + j["input_xxh3"].get<std::string>() +
              "). HINT: resume with the input that started it, or pass --overwrite to start over");
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
  if (opt.resume) SLUICE_RETURN_IF_ERROR(LoadJournal(opt.out_dir, opt.fingerprint, input_xxh3, rp));
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

// A journal line: a durable shard and how far the input, the rejects file and the reject count
// had got when it was written (LoadJournal reads these back).
std::string JournalLine(const shards::ShardEntry& e, uint64_t next_item, uint64_t rejects_bytes,
                        uint64_t rejected) {
  return nlohmann::json{{"shard", shards::ShardEntryToJson(e)},
                        {"next_item", next_item},
                        {"rejects_bytes", rejects_bytes},
                        {"rejected", rejected}}
             .dump() +
         "\n";
}

// The error for a run that wrote no record, with the first reasons from rejects.jsonl. The
// dataset an --overwrite set aside goes back (set_aside.h), and then the rejects with it.
Status AllRejected(const std::string& dir, uint64_t items) {
  const std::string rejects_path = dir + "/" + kRejectsName;
  std::string first;
  std::unique_ptr<LineReader> in;
  Status st = LineReader::Open(rejects_path, &in);
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

// One run of RunIngest: the output directory prepared (or found complete), then
//
//   ReadStage (serial, in order) -> ProcessStage (parallel) -> WriteStage (serial, in order)
//
// on a oneTBB parallel_pipeline, as loader/pipeline.cc runs an epoch, then the manifest and a
// part's marker. The write stage alone touches the writer, the rejects, the journal and the
// counters, so they need no lock.
class IngestRun {
 public:
  IngestRun(ItemSource* source, const ProcessFn& process, const IngestOptions& opt)
      : source_(source), process_(process), opt_(opt) {}

  Status Run(shards::Manifest manifest, IngestSummary* summary);

 private:
  // Takes the directory's lock, counts the input and prepares the directory; *done when there is
  // nothing to do (a complete part or, with --resume, a complete dataset).
  Status Prepare(IngestSummary* summary, bool* done);
  // Rejects file and journal, both continued from the resume point; the keys of its shards.
  Status OpenOutputs();
  Status RunPipeline();
  Work* ReadStage(tbb::flow_control& fc);
  Work* ProcessStage(Work* w) const;
  void WriteStage(Work* raw);
  // A recording's group (--segments stored): its chunks and segments in one shard, its chunks'
  // blocks holding no other record, and its rejected items.
  Status WriteGroup(Work& w);
  // After each durable shard: the rejects before it made durable too, then its journal line.
  Status OnShardDone(const shards::ShardEntry& e);
  // manifest.json (and the extra files before it); InvalidArgument when every item was rejected.
  Status WriteManifest(shards::Manifest* manifest);
  // Last: the marker vouches for everything above (part.h).
  Status WriteMarker(const shards::Manifest& manifest);
  void Summarize(const shards::Manifest& manifest, IngestSummary* summary) const;

  ItemSource* const source_;
  const ProcessFn& process_;
  const IngestOptions& opt_;
  const std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();

  std::unique_ptr<OutDirLock> lock_;
  uint64_t total_ = 0, input_digest_ = 0;  // the input's items and digest (ItemSource::Count)
  ResumePoint rp_;
  uint64_t begin_ = 0, end_ = 0;  // this part's items
  uint64_t start_ = 0;            // the first item this run reads (past a resume point)

  RejectsWriter rejects_;
  std::string journal_path_;
  std::unique_ptr<WritableFile> journal_;
  // Keys already written, to reject duplicates; the journal's shards seed it. Each maps to where
  // it was written ("record 3 of shard-00000.sluice"), which a resumed run can tell as well as an
  // uninterrupted one.
  std::unordered_map<std::string, std::string> seen_keys_;
  uint64_t records_before_ = 0;  // in the resumed shards
  uint64_t next_item_after_shard_ = 0;
  std::unique_ptr<shards::DatasetWriter> writer_;
  std::unique_ptr<Progress> progress_;

  // The pipeline's state: the counters and `failure_` are the write stage's alone, and
  // `read_failure_` the read stage's: the two stages run on different threads at once, so each
  // keeps its own status (RunPipeline reads both once the pipeline has ended). `stop_` is set by
  // either.
  std::atomic<bool> stop_{false};
  Status failure_, read_failure_;
  uint64_t done_ = 0, input_bytes_ = 0, written_ = 0, clipped_files_ = 0, clipped_samples_ = 0;
};

Status IngestRun::Run(shards::Manifest manifest, IngestSummary* summary) {
  bool done = false;
  SLUICE_RETURN_IF_ERROR(Prepare(summary, &done));
  if (done) return Status::OK();
  SLUICE_RETURN_IF_ERROR(OpenOutputs());
  SLUICE_RETURN_IF_ERROR(RunPipeline());
  SLUICE_RETURN_IF_ERROR(WriteManifest(&manifest));
  if (opt_.is_part) SLUICE_RETURN_IF_ERROR(WriteMarker(manifest));
  SLUICE_RETURN_IF_ERROR(DiscardSetAside(opt_.out_dir));
  Summarize(manifest, summary);
  return Status::OK();
}

Status IngestRun::Prepare(IngestSummary* summary, bool* done) {
  // Before anything looks at the directory: a second run must not pass the same checks.
  SLUICE_RETURN_IF_ERROR(OutDirLock::Acquire(
      opt_.out_dir, "shardify " + opt_.fingerprint.value("command", std::string("ingest")),
      &lock_));
  // The first pass over the input, before the output directory is touched: a part compares
  // the input's digest with its marker's.
  SLUICE_RETURN_IF_ERROR(source_->Count(&total_, &input_digest_));
  bool already_complete = false;
  SLUICE_RETURN_IF_ERROR(
      PrepareOutDir(opt_, shards::ChecksumHex(input_digest_), &rp_, &already_complete));
  if (already_complete) {
    SLUICE_RETURN_IF_ERROR(shards::LoadManifest(opt_.out_dir, &summary->manifest));
    summary->records = summary->manifest.records;
    summary->rejected = summary->manifest.rejected;
    summary->resumed = true;
    summary->already_complete = true;
    if (opt_.is_part) {
      std::fprintf(stderr, "shardify: part %s in %s is already complete (%s); nothing to do\n",
                   PartSpec(opt_.part, opt_.parts).c_str(), opt_.out_dir.c_str(), kPartMarkerName);
    }
    *done = true;
    return Status::OK();
  }
  begin_ = total_ * opt_.part / opt_.parts;
  end_ = total_ * (opt_.part + 1) / opt_.parts;
  start_ = std::max(begin_, rp_.next_item);
  summary->items = end_ - begin_;
  summary->resumed = rp_.active && !rp_.shards.empty();
  summary->resumed_at_item = start_;
  return Status::OK();
}

Status IngestRun::OpenOutputs() {
  SLUICE_RETURN_IF_ERROR(
      rejects_.Open(opt_.out_dir + "/" + kRejectsName, rp_.active ? rp_.rejects_bytes : 0));
  rejects_.set_count(rp_.active ? rp_.rejected : 0);

  journal_path_ = opt_.out_dir + "/" + kJournalName;
  // The journal is rewritten from what was loaded, which drops a torn last line.
  std::string journal_text =
      nlohmann::json{{"journal", 1},
                     {"fingerprint", opt_.fingerprint},
                     {"input_xxh3", shards::ChecksumHex(input_digest_)}}
          .dump() +
      "\n";
  for (auto& e : rp_.shards) {
    std::unique_ptr<shards::ShardReader> r;
    SLUICE_RETURN_IF_ERROR(shards::ShardReader::Open(opt_.out_dir + "/" + e.file, {}, &r));
    // A journal written before manifests recorded footers: the manifest still gets one.
    if (!e.footer_xxh3) e.footer_xxh3 = r->footer_xxh3();
    for (size_t i = 0; i < r->num_records(); ++i) {
      seen_keys_.emplace(std::string(r->key(i)), "record " + std::to_string(i) + " of " + e.file);
    }
    records_before_ += e.records;
    journal_text += JournalLine(e, rp_.next_item, rp_.rejects_bytes, rp_.rejected);
  }
  SLUICE_RETURN_IF_ERROR(WriteFileAtomic(journal_path_, journal_text));
  SLUICE_RETURN_IF_ERROR(
      WritableFile::OpenForAppend(journal_path_, journal_text.size(), &journal_));

  next_item_after_shard_ = start_;
  shards::DatasetWriterOptions wopt = opt_.writer;
  wopt.first_shard_index = static_cast<uint32_t>(rp_.shards.size());
  writer_ = std::make_unique<shards::DatasetWriter>(
      opt_.out_dir, wopt, [this](const shards::ShardEntry& e) { return OnShardDone(e); });
  return Status::OK();
}

Status IngestRun::OnShardDone(const shards::ShardEntry& e) {
  SLUICE_RETURN_IF_ERROR(rejects_.Flush());
  SLUICE_RETURN_IF_ERROR(
      journal_->Append(JournalLine(e, next_item_after_shard_, rejects_.bytes(), rejects_.count())));
  return journal_->Sync();
}

Status IngestRun::RunPipeline() {
  const int threads = opt_.threads > 0 ? opt_.threads : UsableCores();
  progress_ = std::make_unique<Progress>(opt_.progress_what, end_ - start_, opt_.progress);
  tbb::task_arena arena(threads);
  arena.execute([&] {
    // Items in flight: enough to keep every thread busy while the in-order
    // writer waits for a slow item, few enough to bound memory (each holds
    // one decoded clip).
    tbb::parallel_pipeline(
        static_cast<size_t>(threads) * 4,
        tbb::make_filter<void, Work*>(tbb::filter_mode::serial_in_order,
                                      [this](tbb::flow_control& fc) { return ReadStage(fc); }) &
            tbb::make_filter<Work*, Work*>(tbb::filter_mode::parallel,
                                           [this](Work* w) { return ProcessStage(w); }) &
            tbb::make_filter<Work*, void>(tbb::filter_mode::serial_in_order,
                                          [this](Work* w) { WriteStage(w); }));
  });
  progress_->Finish();
  // A write failure is an earlier item's than a read failure (the reader is ahead): it wins.
  if (failure_.ok()) failure_ = read_failure_;
  if (failure_.ok()) {
    next_item_after_shard_ = end_;
    failure_ = writer_->Finish();
  }
  if (Status st = journal_->Close(); failure_.ok()) failure_ = st;
  SLUICE_RETURN_IF_ERROR(failure_);
  return rejects_.Close();
}

Work* IngestRun::ReadStage(tbb::flow_control& fc) {
  while (!stop_.load(std::memory_order_relaxed)) {
    auto w = std::make_unique<Work>();
    Status st;
    if (!source_->Next(&w->item, &st)) {
      if (!st.ok()) {
        read_failure_ = st;
        stop_ = true;
      }
      break;
    }
    if (w->item.index < start_) continue;
    if (w->item.index >= end_) break;
    return w.release();
  }
  fc.stop();
  return nullptr;
}

Work* IngestRun::ProcessStage(Work* w) const {
  try {
    process_(w->item, &w->result);
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
}

void IngestRun::WriteStage(Work* raw) {
  std::unique_ptr<Work> w(raw);
  if (stop_.load(std::memory_order_relaxed)) return;
  ItemResult& r = w->result;
  if (!r.fault.ok()) {
    failure_ = r.fault;
    stop_ = true;
    return;
  }
  Status st;
  if (!r.group.empty()) {
    if (!r.warning.empty()) std::fprintf(stderr, "shardify: warning: %s\n", r.warning.c_str());
    st = WriteGroup(*w);
  } else if (r.ok) {
    const auto [shard, record] = writer_->NextPosition();
    auto [it, inserted] = seen_keys_.emplace(
        r.key, "record " + std::to_string(record) + " of " + shards::ShardFileName(shard));
    if (!inserted) {
      r.ok = false;
      r.reason = "duplicate key '" + r.key + "', already written as " + it->second;
    }
  }
  if (!r.group.empty()) {
    clipped_files_ += r.clipped_samples > 0;
    clipped_samples_ += r.clipped_samples;
  } else if (r.ok) {
    if (!r.warning.empty()) std::fprintf(stderr, "shardify: warning: %s\n", r.warning.c_str());
    clipped_files_ += r.clipped_samples > 0;
    clipped_samples_ += r.clipped_samples;
    next_item_after_shard_ = w->item.index + 1;
    st = writer_->Add({r.key, r.duration, r.tokens, r.aux, r.columns}, r.payload);
    written_++;
  } else {
    st = rejects_.Add(w->item.source, w->item.line, r.reason, w->item.text);
  }
  input_bytes_ += r.input_bytes;
  progress_->Update(++done_, input_bytes_);
  if (!st.ok()) {
    failure_ = st;
    stop_ = true;
  }
}

Status IngestRun::WriteGroup(Work& w) {
  // In place (a recording's chunks hold all of its audio): the write stage may reject some.
  std::vector<GroupEntry>& entries = w.result.group;
  const auto [shard, base] = writer_->NextPosition();
  auto where = [&, shard = shard](uint64_t record) {
    return "record " + std::to_string(record) + " of " + shards::ShardFileName(shard);
  };
  // Segments first: a duplicate key rejects its segment; a recording written before (its
  // segments were not consecutive in the input) rejects every segment, as nothing could refer
  // to its audio twice.
  std::string written_before;
  size_t chunks = 0, segments = 0;
  for (const GroupEntry& e : entries) {
    if (!e.ok || e.ref.kind != shards::RefKind::kChunk) continue;
    ++chunks;
    if (written_before.empty())
      if (auto it = seen_keys_.find(e.key); it != seen_keys_.end())
        written_before = "its recording's audio was written already (chunk '" + e.key + "', " +
                         it->second +
                         "): the segments of one recording must follow each other in the "
                         "input. HINT: sort the cuts or segments by recording";
  }
  uint64_t next = base + chunks;
  for (GroupEntry& e : entries) {
    if (!e.ok || e.ref.kind != shards::RefKind::kSegment) continue;
    if (!written_before.empty()) {
      e.ok = false;
      e.reason = "\"" + e.key + "\": " + written_before;
      continue;
    }
    auto [it, inserted] = seen_keys_.emplace(e.key, where(next));
    if (!inserted) {
      e.ok = false;
      e.reason = "duplicate key '" + e.key + "', already written as " + it->second;
      continue;
    }
    ++next;
    ++segments;
  }
  next_item_after_shard_ = w.item.index + 1;
  if (segments > 0) {
    writer_->BeginGroup();
    SLUICE_RETURN_IF_ERROR(writer_->EndBlock());
  }
  uint64_t record = base;
  bool chunks_done = false;
  for (const GroupEntry& e : entries) {
    if (!e.ok) {
      SLUICE_RETURN_IF_ERROR(rejects_.Add(e.source, e.line, e.reason, e.input));
      continue;
    }
    if (segments == 0) continue;  // no segment left: its audio is not written
    shards::RecordingRef ref = e.ref;
    if (ref.kind == shards::RefKind::kChunk) {
      seen_keys_.emplace(e.key, where(record));
    } else {
      if (!chunks_done) SLUICE_RETURN_IF_ERROR(writer_->EndBlock());
      chunks_done = true;
      ref.chunk += static_cast<uint32_t>(base);
    }
    std::string aux;
    ref.EncodeTo(&aux);
    SLUICE_RETURN_IF_ERROR(writer_->Add({e.key, e.duration, e.tokens, aux, e.columns}, e.payload));
    ++record;
    written_++;
  }
  if (segments > 0) {
    SLUICE_RETURN_IF_ERROR(writer_->EndBlock());
    SLUICE_RETURN_IF_ERROR(writer_->EndGroup());
  }
  return Status::OK();
}

Status IngestRun::WriteManifest(shards::Manifest* manifest) {
  shards::Manifest& m = *manifest;
  m.shards = rp_.shards;
  for (const auto& e : writer_->shards()) m.shards.push_back(e);
  m.records = records_before_ + written_;
  if (m.records == 0 && end_ > begin_ && !opt_.is_part) {
    // Not a dataset: an input whose every item is rejected is the wrong file or format.
    std::error_code ec;
    fs::remove(journal_path_, ec);
    return AllRejected(opt_.out_dir, end_ - begin_);
  }
  m.rejected = rejects_.count();
  m.tokens = 0;
  for (const auto& e : m.shards) m.tokens += e.tokens;
  if (opt_.is_part) {
    (*m.source)["part"] = PartSpec(opt_.part, opt_.parts);
    (*m.source)["items"] = {begin_, end_};
  }
  // What --resume over the complete dataset compares its command line with (fingerprint.h).
  (*m.source)["options"] = opt_.fingerprint;
  (*m.source)["input_xxh3"] = shards::ChecksumHex(input_digest_);
  for (const auto& [name, bytes] : opt_.extra_files) {
    SLUICE_RETURN_IF_ERROR(WriteFileAtomic(opt_.out_dir + "/" + name, bytes));
  }
  SLUICE_RETURN_IF_ERROR(shards::SaveManifest(opt_.out_dir, m));
  std::error_code ec;
  fs::remove(journal_path_, ec);
  return Status::OK();
}

Status IngestRun::WriteMarker(const shards::Manifest& manifest) {
  PartMarker pm;
  pm.part = opt_.part;
  pm.parts = opt_.parts;
  pm.first_item = begin_;
  pm.end_item = end_;
  pm.input_items = total_;
  pm.input_xxh3 = shards::ChecksumHex(input_digest_);
  pm.options = opt_.fingerprint;
  pm.writer = {{"shard_size", opt_.writer.shard_size},
               {"block_size", opt_.writer.shard.block_size},
               {"zstd_level", opt_.writer.shard.zstd_level}};
  pm.records = manifest.records;
  pm.rejected = manifest.rejected;
  std::string written;
  SLUICE_RETURN_IF_ERROR(ReadFileToString(opt_.out_dir + "/" + shards::kManifestName, &written));
  pm.manifest_xxh3 = shards::ChecksumHex(shards::Checksum(written.data(), written.size()));
  pm.created_by = manifest.created_by;
  return WritePartMarker(opt_.out_dir, pm);
}

void IngestRun::Summarize(const shards::Manifest& manifest, IngestSummary* summary) const {
  summary->records = manifest.records;
  summary->rejected = manifest.rejected;
  summary->input_bytes = input_bytes_;
  summary->clipped_files = clipped_files_;
  summary->clipped_samples = clipped_samples_;
  for (const auto& e : writer_->shards()) summary->duration_this_run += e.duration;
  summary->manifest = manifest;
  summary->wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

}  // namespace

Status RunIngest(ItemSource* source, const ProcessFn& process, const IngestOptions& opt,
                 shards::Manifest manifest, IngestSummary* summary) {
  return IngestRun(source, process, opt).Run(std::move(manifest), summary);
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
