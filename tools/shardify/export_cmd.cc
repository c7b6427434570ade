// shardify export: a dataset back to the manifests other tools read (docs/shardify.md,
// "shardify export"): NeMo JSONL or Lhotse cuts, with the audio as WAV or FLAC files.
//
// The audio is what the dataset holds (decoded, resampled, PCM16 at its rate), read through the
// library's reader; re-shardifying a NeMo export at the same rate gives the same records. A
// oneTBB pipeline of blocks: ReadBlock (serial, the pread) -> ExportBlock (parallel: checksum,
// zstd, encode and write each record's file) -> AppendLines (serial, in dataset order), so the
// output is the same for any --threads. The manifest is written to a .tmp file and renamed last:
// a folder with the manifest holds a complete export.
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/cpus.h"
#include "base/file.h"
#include "commands.h"
#include "export_lines.h"
#include "features/encode.h"
#include "features/flac.h"
#include "gzip_file.h"
#include "options_cli.h"
#include "progress.h"
#include "shards/dataset.h"
#include "shards/record.h"
#include "storage/open.h"
#include "storage/options.h"

namespace sluice::shardify {
namespace fs = std::filesystem;
namespace {

struct ExportArgs {
  std::string dataset;  // a directory, or an http(s):// or s3:// location (docs/remote.md)
  storage::StorageOptions storage;
  std::string to;  // nemo | lhotse
  std::string out;
  std::string audio_format = "wav";
  int threads = 0;
  bool overwrite = false;
  bool json = false;
  bool quiet = false;
};

// The manifest each target reads, in --out.
std::string ManifestName(const std::string& to) {
  return to == "lhotse" ? "cuts.jsonl.gz" : "manifest.jsonl";
}

// One block of one shard: its records' lines once exported.
struct BlockWork {
  size_t shard = 0;
  size_t block = 0;
  uint64_t first_index = 0;  // the dataset-wide number of the block's first record
  shards::Buffer compressed;
  std::string lines;
  uint64_t records = 0;
  uint64_t samples = 0;
  uint64_t bytes = 0;  // audio bytes written
  Status status;
};

class Exporter {
 public:
  Exporter(const ExportArgs& a, const shards::Dataset& ds, std::string out_abs)
      : a_(a), ds_(ds), out_(std::move(out_abs)) {
    container_ =
        a.audio_format == "flac" ? features::AudioContainer::kFlac : features::AudioContainer::kWav;
  }

  // Writes the audio files and the manifest lines (through `append`) in dataset order.
  Status Run(const std::function<Status(std::string_view)>& append);

  uint64_t records() const { return records_; }
  uint64_t samples() const { return samples_; }
  uint64_t bytes() const { return bytes_; }

 private:
  BlockWork* ReadBlock(tbb::flow_control& fc);
  BlockWork* ExportBlock(BlockWork* w) const;
  Status WriteRecord(const shards::ShardReader& shard, size_t i, uint64_t index,
                     const shards::Buffer& raw, BlockWork* w) const;
  void AppendLines(BlockWork* w);

  const ExportArgs& a_;
  const shards::Dataset& ds_;
  const std::string out_;
  features::AudioContainer container_;
  // ReadBlock's position.
  size_t next_shard_ = 0, next_block_ = 0;
  uint64_t next_index_ = 0;
  std::atomic<bool> stop_{false};
  // AppendLines' state: where lines go, the first failure in dataset order, the totals.
  const std::function<Status(std::string_view)>* append_ = nullptr;
  Progress* progress_ = nullptr;
  Status failure_;
  uint64_t records_ = 0, samples_ = 0, bytes_ = 0;
};

BlockWork* Exporter::ReadBlock(tbb::flow_control& fc) {
  while (!stop_.load(std::memory_order_relaxed) && next_shard_ < ds_.num_shards()) {
    const shards::ShardReader& shard = ds_.shard(next_shard_);
    if (next_block_ >= shard.num_blocks()) {
      ++next_shard_;
      next_block_ = 0;
      continue;
    }
    auto w = std::make_unique<BlockWork>();
    w->shard = next_shard_;
    w->block = next_block_++;
    w->first_index = next_index_;
    next_index_ += shard.first_record(w->block + 1) - shard.first_record(w->block);
    w->status = shard.ReadCompressedBlock(w->block, &w->compressed);
    return w.release();
  }
  fc.stop();
  return nullptr;
}

Status Exporter::WriteRecord(const shards::ShardReader& shard, size_t i, uint64_t index,
                             const shards::Buffer& raw, BlockWork* w) const {
  thread_local std::vector<int16_t> pcm;
  thread_local std::vector<uint8_t> encoded;
  const std::string_view key = shard.key(i);
  const std::string where =
      shard.name() + ": record " + std::to_string(i) + " ('" + std::string(key) + "')";
  const std::string_view payload = shard.RecordPayload(i, raw);
  shards::RecordView rec;
  SLUICE_RETURN_IF_ERROR(ParseRecord(payload.data(), payload.size(), where, &rec));
  int rate = ds_.manifest().sample_rate;
  if (const shards::FieldView* f = rec.Find(shards::FieldType::kAudioPcm16)) {
    if (f->size % sizeof(int16_t) != 0)
      return Status::Corruption(where + ": PCM16 audio field of odd size " +
                                std::to_string(f->size));
    pcm.resize(f->size / sizeof(int16_t));
    std::memcpy(pcm.data(), f->data, f->size);
  } else if (const shards::FieldView* f = rec.Find(shards::FieldType::kAudioFlac)) {
    SLUICE_RETURN_IF_ERROR(features::DecodeFlac(reinterpret_cast<const uint8_t*>(f->data), f->size,
                                                where, &pcm, &rate));
    if (rate != ds_.manifest().sample_rate)
      return Status::Corruption(where + ": FLAC record at " + std::to_string(rate) +
                                " Hz in a dataset of " +
                                std::to_string(ds_.manifest().sample_rate) + " Hz");
  } else {
    return Status::Corruption(where + ": no audio field, though manifest.json lists \"audio\"");
  }
  const shards::FieldView* text = rec.Find(shards::FieldType::kText);
  if (text == nullptr) return Status::Corruption(where + ": no text field");
  if (pcm.empty()) return Status::Corruption(where + ": audio field holds no samples");

  const std::string name = ExportAudioName(index, key, container_);
  Status st = features::EncodePcm16(pcm.data(), pcm.size(), 1, rate, container_, &encoded);
  if (!st.ok()) return Prefixed(st, where);
  SLUICE_RETURN_IF_ERROR(WriteFileAtomic(
      out_ + "/" + name,
      std::string_view(reinterpret_cast<const char*>(encoded.data()), encoded.size())));
  const ExportRecord r{key, text->bytes(), pcm.size(), rate};
  w->lines += a_.to == "lhotse" ? LhotseCutLine(r, out_ + "/" + name) : NemoLine(r, name);
  w->lines += '\n';
  ++w->records;
  w->samples += pcm.size();
  w->bytes += encoded.size();
  return Status::OK();
}

BlockWork* Exporter::ExportBlock(BlockWork* w) const {
  if (!w->status.ok() || stop_.load(std::memory_order_relaxed)) return w;
  thread_local shards::Buffer raw;
  const shards::ShardReader& shard = ds_.shard(w->shard);
  w->status = shard.DecodeBlock(w->block, w->compressed.view(), &raw);
  w->compressed = shards::Buffer();  // bounded memory: only the raw block stays per thread
  for (size_t i = shard.first_record(w->block);
       w->status.ok() && i < shard.first_record(w->block + 1); ++i) {
    w->status = WriteRecord(shard, i, w->first_index + (i - shard.first_record(w->block)), raw, w);
  }
  return w;
}

void Exporter::AppendLines(BlockWork* raw) {
  std::unique_ptr<BlockWork> w(raw);
  if (!failure_.ok()) return;
  // In dataset order: the first damaged record stops the export, whatever the thread count.
  failure_ = w->status;
  if (failure_.ok()) failure_ = (*append_)(w->lines);
  if (!failure_.ok()) {
    stop_ = true;
    return;
  }
  records_ += w->records;
  samples_ += w->samples;
  bytes_ += w->bytes;
  progress_->Update(records_, bytes_);
}

Status Exporter::Run(const std::function<Status(std::string_view)>& append) {
  const int threads = a_.threads > 0 ? a_.threads : UsableCores();
  Progress progress("records", ds_.num_records(), !a_.quiet);
  append_ = &append;
  progress_ = &progress;
  tbb::task_arena arena(threads);
  arena.execute([&] {
    // Blocks in flight: enough to keep every thread busy while the in-order writer waits for a
    // slow block, few enough to bound memory (each holds its compressed bytes and its lines).
    tbb::parallel_pipeline(
        static_cast<size_t>(threads) * 2,
        tbb::make_filter<void, BlockWork*>(
            tbb::filter_mode::serial_in_order,
            [this](tbb::flow_control& fc) { return ReadBlock(fc); }) &
            tbb::make_filter<BlockWork*, BlockWork*>(
                tbb::filter_mode::parallel, [this](BlockWork* w) { return ExportBlock(w); }) &
            tbb::make_filter<BlockWork*, void>(tbb::filter_mode::serial_in_order,
                                               [this](BlockWork* w) { AppendLines(w); }));
  });
  progress.Finish();
  progress_ = nullptr;
  return failure_;
}

// The checks that need no record: what the dataset holds, and where the export goes.
Status CheckExport(const ExportArgs& a, const shards::Manifest& m, const std::string& location) {
  if (m.kind != "audio")
    return Status::InvalidArgument(location + ": a " + m.kind +
                                   " dataset; export writes audio datasets (audio files and a "
                                   "manifest of them)");
  if (m.stored_segments())
    return Status::Unsupported(location +
                               ": its segments refer to stored recordings (shardify audio "
                               "--segments stored), which export does not write yet. HINT: "
                               "export a dataset written with --segments cut");
  if (!m.has_field("audio"))
    return Status::InvalidArgument(
        location +
        ": the dataset stores no audio (shardify audio --drop-audio kept features "
        "only), so there is nothing to export. HINT: shardify the corpus again without "
        "--drop-audio");
  const std::string manifest = a.out + "/" + ManifestName(a.to);
  std::error_code ec;
  if (fs::exists(manifest, ec) && !a.overwrite)
    return Status::InvalidArgument(manifest +
                                   ": an export is already there. HINT: --overwrite replaces it, "
                                   "or give another --out");
  return Status::OK();
}

int RunExport(const ExportArgs& a) {
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const shards::Storage> where;
  Status st = storage::OpenStorage(a.dataset, a.storage, &where);
  if (!st.ok()) return ReportError(st);
  std::unique_ptr<shards::Dataset> ds;
  st = shards::Dataset::Open(where, shards::ReadOptions{}, &ds);
  if (!st.ok()) return ReportError(st);
  st = CheckExport(a, ds->manifest(), where->location());
  if (!st.ok()) return ReportError(st);

  std::error_code ec;
  fs::create_directories(fs::path(a.out) / "audio", ec);
  if (ec) return ReportError(Status::IOError(a.out + "/audio: cannot create: " + ec.message()));
  const std::string out_abs = fs::absolute(a.out).lexically_normal().string();
  const std::string manifest = out_abs + "/" + ManifestName(a.to);
  const std::string tmp = manifest + ".tmp";

  std::unique_ptr<GzipFile> gz;
  std::unique_ptr<WritableFile> plain;
  st = a.to == "lhotse" ? GzipFile::Create(tmp, &gz) : WritableFile::Create(tmp, &plain);
  if (!st.ok()) return ReportError(st);
  Exporter exporter(a, *ds, out_abs);
  st = exporter.Run(
      [&](std::string_view lines) { return gz ? gz->Append(lines) : plain->Append(lines); });
  if (Status c = gz ? gz->Close() : plain->Close(); st.ok()) st = c;
  if (st.ok()) st = RenameDurable(tmp, manifest);
  if (!st.ok()) return ReportError(st);

  const double rate = ds->manifest().sample_rate;
  const double seconds = double(exporter.samples()) / rate;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (a.json) {
    std::printf("%s\n", nlohmann::json{{"records", exporter.records()},
                                       {"seconds", seconds},
                                       {"audio_bytes", exporter.bytes()},
                                       {"manifest", manifest},
                                       {"wall_seconds", wall}}
                            .dump()
                            .c_str());
  } else {
    std::printf("exported %" PRIu64 " records (%.1f s of audio, %.1f MB of %s) to %s in %s\n",
                exporter.records(), seconds, exporter.bytes() / 1e6, a.audio_format.c_str(),
                manifest.c_str(), FormatDuration(wall).c_str());
  }
  return 0;
}

}  // namespace

void RegisterExport(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* sub = app->add_subcommand(
      "export",
      "Write a dataset back out as audio files plus a NeMo JSONL manifest (manifest.jsonl) or "
      "Lhotse cuts (cuts.jsonl.gz); see docs/shardify.md, \"shardify export\"");
  sub->add_option("dataset", args->dataset,
                  "Dataset directory, http(s):// URL or s3://bucket/prefix")
      ->required();
  sub->add_option("--to", args->to,
                  "nemo: manifest.jsonl with paths relative to it; lhotse: cuts.jsonl.gz of "
                  "MonoCuts with absolute paths")
      ->required()
      ->check(CLI::IsMember({"nemo", "lhotse"}));
  sub->add_option("-o,--out", args->out, "Output folder (audio/ and the manifest go there)")
      ->required();
  sub->add_option("--audio-format", args->audio_format,
                  "Audio files: wav or flac (both 16-bit PCM at the dataset's rate, lossless)")
      ->check(CLI::IsMember({"wav", "flac"}))
      ->capture_default_str();
  sub->add_option("-j,--threads", args->threads,
                  "Worker threads (0: the cores this process may use); output is identical for "
                  "any value")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  sub->add_flag("--overwrite", args->overwrite, "Replace an export already in --out");
  tools::AddOptions(sub, &args->storage, [](const FieldInfo&) { return true; });
  sub->add_flag("--json", args->json, "Print the summary as one JSON object");
  sub->add_flag("-q,--quiet", args->quiet, "No progress line, even on a terminal");
  sub->callback([args, exit_code] { *exit_code = RunExport(*args); });
}

}  // namespace sluice::shardify
