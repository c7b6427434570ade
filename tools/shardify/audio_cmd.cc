// shardify audio: a NeMo-style JSONL manifest of audio files and transcripts, or with --from a
// Lhotse cuts manifest, a Kaldi data directory or WebDataset tars (docs/shardify-inputs.md).
//
// Each NeMo line: {"audio_filepath": "a.wav", "text": "...", "duration": 3.2,
// "offset": 0.0, "id": "utt1"}; duration, offset and id are optional.
// Relative paths resolve against the manifest's folder. The line itself is parsed by
// manifest_line.cc (the fuzzer's entry point); the other formats by importers/ (ImportSource).
// From there on every format takes the same path: the clip is decoded and checked here.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "feature_options.h"
#include "features/audio.h"
#include "features/fbank.h"
#include "features/flac.h"
#include "features/half.h"
#include "features/pcm.h"
#include "features/resample.h"
#include "features/spectrogram.h"
#include "features/utf8.h"
#include "import_source.h"
#include "importers/pipe.h"
#include "line_source.h"
#include "loader/dataset_tokenizer.h"
#include "manifest_line.h"
#include "part.h"
#include "record_columns.h"
#include "shards/fields.h"
#include "shards/format.h"
#include "shards/record.h"

namespace sluice::shardify {
namespace fs = std::filesystem;
namespace {

constexpr double kDefaultMinDuration = 0.025;  // seconds

struct AudioArgs {
  WriteArgs write;
  TokenizerArgs tokenizer;
  tools::FeatureArgs features;
  bool drop_audio = false;
  std::string manifest;
  std::string from = "nemo";        // the input's format: nemo, lhotse, kaldi, wds, hf
  std::vector<std::string> inputs;  // positional: the manifest(s), data directory or tars
  bool allow_pipes = false;
  double pipe_timeout = 60;  // seconds per command
  // --from hf: the Python whose pyarrow reads the parquet files, and its columns.
  std::string python = "python3";
  std::string hf_audio = "audio";
  std::string hf_text = "text";
  std::string hf_id = "id";
  std::string hf_speaker;   // --from hf: the speaker column ("": none)
  std::string hf_language;  // --from hf: the language column ("": none)
  // --keep-field NAME[:TYPE]: extra metadata columns (record_columns.h).
  std::vector<std::string> keep_fields;
  int sample_rate = 16000;
  std::string codec = "pcm16";
  double max_duration = 600;
  // One frame of the default 25 ms feature window: a shorter clip would become a row of zero
  // feature frames (docs/shardify.md, "Short clips").
  double min_duration = kDefaultMinDuration;
  double max_tokens_per_second = 0;  // 0: no check
  bool allow_truncated_audio = false;
  // --segments: "cut" (each segment its own record) or "stored" (each recording once, segments
  // refer to it: shards/recording.h), with chunks of chunk_seconds.
  std::string segments = "cut";
  double chunk_seconds = 10;
};

// A stored recording is decoded whole: this bounds one in memory (24 h of float at 16 kHz: 5.5 GB).
constexpr double kMaxRecordingSeconds = 24 * 3600;

struct AudioConfig {
  std::string base_dir;  // the manifest's folder
  int sample_rate;
  bool flac;
  double max_duration;
  double min_duration;
  double max_tokens_per_second;  // CTC frames a transcript needs per second of audio; 0: any
  bool allow_truncated_audio;
  const features::Tokenizer* tokenizer = nullptr;  // null: no token ids
  // Precomputed features (--features): at most one is set.
  const features::FbankComputer* fbank = nullptr;
  const features::SpectrogramComputer* spectrogram = nullptr;
  bool drop_audio = false;
  double pipe_timeout = 60;  // seconds a wav.scp or Lhotse command may run
  std::vector<shards::ColumnSpec> keep;  // --keep-field's columns, after the built-in ones
  uint64_t chunk_samples = 0;  // --segments stored: samples per chunk record; 0: cut at ingest
};

// Per-thread scratch, reused across items so decoding allocates little.
struct Scratch {
  features::DecodedAudio decoded;
  std::vector<float> resampled;
  std::vector<int16_t> pcm;
  std::vector<uint8_t> flac;
  shards::RecordBuilder record;
  std::vector<int32_t> ids;
  features::Workspace workspace;
  std::vector<float> feature_input;
  std::vector<float> feats;
  std::vector<uint16_t> field;  // the kFeaturesF16 field (shards/fields.h)
  std::string piped;            // a command's stdout (--allow-pipes)
};

// The kFeaturesF16 field of docs/formats/shard.md: [frames, bins] float16 (shards/fields.h).
// False when the clip holds no whole frame (snip_edges and a clip shorter than the window).
bool AddFeatures(const AudioConfig& cfg, Scratch& s) {
  const bool fbank = cfg.fbank != nullptr;
  s.feature_input.resize(s.pcm.size());
  // fbank takes Kaldi's int16 scale, the spectrogram [-1, 1] (features/*.h).
  features::Pcm16ToFloat(s.pcm.data(), s.pcm.size(), s.feature_input.data(),
                         fbank ? 1.0f : 1.0f / 32768);
  const int64_t frames =
      fbank ? cfg.fbank->Compute(s.feature_input.data(), s.feature_input.size(), &s.workspace,
                                 &s.feats)
            : cfg.spectrogram->Compute(s.feature_input.data(), s.feature_input.size(), &s.workspace,
                                       &s.feats);
  if (frames <= 0) return false;
  const uint32_t bins = static_cast<uint32_t>(fbank ? cfg.fbank->Dim() : cfg.spectrogram->Dim());
  uint16_t* values = shards::EncodeFeaturesF16(static_cast<uint32_t>(frames), bins, &s.field);
  features::FloatToHalf(s.feats.data(), s.feats.size(), values);
  s.record.AddField(shards::FieldType::kFeaturesF16, s.field.data(),
                    s.field.size() * sizeof(uint16_t));
  return true;
}

// Rejects the item for `why`; false, for the caller to return.
bool Reject(ItemResult* r, std::string why) {
  r->ok = false;
  r->reason = std::move(why);
  return false;
}

// The interleaved frames of `audio` (DecodeOptions::keep_channels) made mono: the one channel of
// `channels`, or the average of several (a Lhotse cut of some channels of a file). False (r
// rejected) for a channel the file does not have.
bool SelectChannels(const std::vector<int>& channels, const std::string& path,
                    features::DecodedAudio* audio, ItemResult* r) {
  const int n = audio->channels_in;
  for (int c : channels)
    if (c < 0 || c >= n)
      return Reject(r, path + ": the cut selects channel " + std::to_string(c) + " of a " +
                           std::to_string(n) + "-channel file");
  std::vector<float>& x = audio->samples;
  const size_t frames = x.size() / static_cast<size_t>(n);
  const float scale = 1.0f / static_cast<float>(channels.size());
  for (size_t f = 0; f < frames; ++f) {
    float sum = 0;
    for (int c : channels) sum += x[f * n + c];
    x[f] = channels.size() == 1 ? sum : sum * scale;
  }
  x.resize(frames);
  return true;
}

// Decodes the clip of `line` into s.decoded and checks its samples; false when the item ends
// here (r rejected, or r->fault for a machine fault). Clipped samples are kept with a warning.
// `bytes`, when given, hold the encoded file (a tar member, a command's output) and `path` names
// it.
bool DecodeClip(const AudioConfig& cfg, ManifestLine* line, const std::string& path,
                const std::string* bytes, const std::vector<int>& channels, Scratch& s,
                ItemResult* r) {
  line->decode.allow_truncated = cfg.allow_truncated_audio;
  line->decode.keep_channels = !channels.empty();
  // Checked against the header before decoding: a long recording costs its header, not its size
  // in memory (the check after decoding stays for formats whose header has no exact length).
  line->decode.max_seconds = cfg.max_duration;
  line->decode.max_seconds_name = "--max-duration";
  Status st =
      bytes ? features::DecodeMemory(bytes->data(), bytes->size(), path, line->decode, &s.decoded)
            : features::DecodeFile(path, line->decode, &s.decoded);
  // A segment counts what it read, not its whole file.
  r->input_bytes = bytes ? bytes->size() : s.decoded.bytes_read;
  if (st.IsIOError()) {
    r->fault = st;
    return false;
  }
  if (!st.ok()) return Reject(r, st.message());
  if (!channels.empty() && !SelectChannels(channels, path, &s.decoded, r)) return false;
  if (s.decoded.samples.empty()) return Reject(r, path + ": zero-length audio");
  if (!features::AllFinite(s.decoded.samples.data(), s.decoded.samples.size()))
    return Reject(r, path + ": NaN or Inf samples");
  // Float sources may hold samples beyond full scale; PCM16 clamps them. Kept (the clip is
  // usable), but counted and named: a warning on stderr and "clipped_files" in the summary.
  float peak = 0;
  if (const size_t clipped = features::CountBeyondFullScale(s.decoded.samples.data(),
                                                            s.decoded.samples.size(), &peak)) {
    r->clipped_samples = clipped;
    r->warning = path + ": " + std::to_string(clipped) + " of " +
                 std::to_string(s.decoded.samples.size()) + " samples beyond full scale (peak " +
                 FormatSeconds(peak) +
                 ") clipped to [-1, 1]. HINT: normalise the file's level if that is not wanted";
  }
  return true;
}

// Why a decoded clip of `seconds` is rejected for its length or its transcript's; "" if kept.
std::string CheckLengths(const AudioConfig& cfg, const Scratch& s, const std::string& path,
                         double seconds) {
  if (seconds > cfg.max_duration) {
    return path + ": " + FormatSeconds(seconds) + " s of audio exceeds --max-duration " +
           FormatSeconds(cfg.max_duration);
  }
  if (seconds < cfg.min_duration) {
    return path + ": " + FormatSeconds(seconds) + " s of audio is below --min-duration " +
           FormatSeconds(cfg.min_duration);
  }
  if (cfg.tokenizer && cfg.max_tokens_per_second > 0) {
    // What CTC needs: one output frame per token plus one blank between equal neighbours
    // (reference::CtcMinInputLength); a model with F output frames per second aligns at most F
    // per second (docs/shardify.md, "--max-tokens-per-second").
    size_t needed = s.ids.size();
    for (size_t i = 1; i < s.ids.size(); ++i) needed += s.ids[i] == s.ids[i - 1];
    if (static_cast<double>(needed) > cfg.max_tokens_per_second * seconds)
      return path + ": " + std::to_string(s.ids.size()) + " tokens (" + std::to_string(needed) +
             " CTC frames with repeats) in " + FormatSeconds(seconds) + " s of audio is " +
             FormatSeconds(static_cast<double>(needed) / seconds) +
             " per second, over --max-tokens-per-second " +
             FormatSeconds(cfg.max_tokens_per_second);
  }
  return "";
}

// The record of a checked clip in s.record: audio at the dataset's rate and codec, features,
// text and token ids. Why it cannot be made, or "".
std::string BuildRecord(const AudioConfig& cfg, const ManifestLine& line, const std::string& path,
                        double seconds, Scratch& s) {
  Status st = features::Resample(s.decoded.samples.data(), s.decoded.samples.size(),
                                 s.decoded.sample_rate, cfg.sample_rate, &s.resampled);
  if (!st.ok()) return path + ": resample: " + st.message();
  if (s.resampled.empty()) return path + ": zero-length audio after resampling";
  s.pcm.resize(s.resampled.size());
  features::FloatToPcm16(s.resampled.data(), s.resampled.size(), s.pcm.data());

  s.record.Clear();
  if (cfg.drop_audio) {
    // Features only: the record keeps no audio (no speed perturbation later).
  } else if (cfg.flac) {
    st = features::EncodeFlac(s.pcm.data(), s.pcm.size(), cfg.sample_rate, &s.flac);
    if (!st.ok()) return path + ": FLAC encode: " + st.message();
    s.record.AddField(shards::FieldType::kAudioFlac, s.flac.data(), s.flac.size());
  } else {
    s.record.AddField(shards::FieldType::kAudioPcm16, s.pcm.data(), s.pcm.size() * sizeof(int16_t));
  }
  if ((cfg.fbank || cfg.spectrogram) && !AddFeatures(cfg, s))
    return path + ": " + FormatSeconds(seconds) +
           " s of audio is shorter than one frame of --features' window. HINT: raise "
           "--min-duration to the window length";
  s.record.AddField(shards::FieldType::kText, line.text);
  if (cfg.tokenizer) {
    static_assert(sizeof(int32_t) == sizeof(uint32_t), "token ids are stored as u32");
    s.record.AddField(shards::FieldType::kTokens, s.ids.data(), s.ids.size() * sizeof(int32_t));
  }
  return "";
}

// An imported item (importers/item.h) as ParseManifestLine leaves a NeMo line: the same checks of
// the transcript and the key, so every format is held to the same rules. False (r rejected) when
// it cannot be.
bool FromImported(const AudioConfig& cfg, const importers::ImportItem& in, ManifestLine* line,
                  Scratch& s, ItemResult* r) {
  if (!in.reason.empty()) return Reject(r, in.reason);
  const std::string& name = in.key;
  size_t bad = 0;
  if (!features::ValidUtf8(in.text, &bad))
    return Reject(
        r, "\"" + name + "\": invalid UTF-8 at byte " + std::to_string(bad) + " of the transcript");
  if (in.key.empty()) return Reject(r, "empty key");
  if (!features::ValidUtf8(in.key, &bad)) return Reject(r, "key: invalid UTF-8");
  if (in.key.size() > shards::kMaxKeySize)
    return Reject(r, "key longer than " + std::to_string(shards::kMaxKeySize) + " bytes");
  if (cfg.tokenizer) {
    s.ids.clear();
    Status st = cfg.tokenizer->Encode(in.text, &s.ids);
    if (!st.ok()) return Reject(r, "\"" + name + "\": transcript: " + st.message());
  }
  line->text = in.text;
  line->key = in.key;
  line->decode.offset_seconds = in.offset_seconds;
  line->decode.duration_seconds = in.duration_seconds;
  return true;
}

// Where an imported item's audio is: *path, and *bytes when they are in memory (a tar member, a
// command's output, run here). False when the item ends here (r rejected, or r->fault).
bool AudioSource(const AudioConfig& cfg, const importers::ImportItem& in, Scratch& s,
                 std::string* path, const std::string** bytes, ItemResult* r) {
  *bytes = nullptr;
  if (!in.audio_bytes.empty()) {
    *path = in.audio_name;
    *bytes = &in.audio_bytes;
  } else if (!in.pipe_command.empty()) {
    *path = in.audio_name;
    Status st = importers::RunPipe(*path, in.pipe_command, cfg.pipe_timeout, &s.piped);
    if (st.IsIOError()) {
      r->fault = st;
      return false;
    }
    if (!st.ok()) return Reject(r, st.message());
    *bytes = &s.piped;
  } else if (in.audio_path.empty()) {
    // Every importer sets one source (the fuzzers check it); never an empty path to open.
    return Reject(r, "\"" + in.key + "\": no audio source");
  } else {
    const std::string& rel = in.audio_path;
    *path = rel[0] == '/' || in.base_dir.empty() ? rel : in.base_dir + "/" + rel;
  }
  return true;
}

void ProcessLine(const AudioConfig& cfg, const InputItem& item, ItemResult* r) {
  thread_local Scratch s;
  ManifestLine line;
  std::string why;
  std::string path;
  const std::string* bytes = nullptr;
  if (const importers::ImportItem* in = item.imported.get()) {
    if (!FromImported(cfg, *in, &line, s, r)) return;
    if (!AudioSource(cfg, *in, s, &path, &bytes, r)) return;
  } else {
    if (!ParseManifestLine(item.text, cfg.tokenizer, &line, &s.ids, &why)) {
      Reject(r, std::move(why));
      return;
    }
    const std::string& rel = line.audio_filepath;
    path = rel[0] == '/' ? rel : cfg.base_dir + "/" + rel;
  }
  static const std::vector<int> kAllChannels;
  const std::vector<int>& channels = item.imported ? item.imported->channels : kAllChannels;
  if (!DecodeClip(cfg, &line, path, bytes, channels, s, r)) return;
  const double seconds = double(s.decoded.samples.size()) / s.decoded.sample_rate;
  // Each reason names the path: never empty.
  if (why = CheckLengths(cfg, s, path, seconds); why.empty())
    why = BuildRecord(cfg, line, path, seconds, s);
  if (!why.empty()) {
    Reject(r, std::move(why));
    return;
  }
  {
    // The metadata columns: an imported item's own fields, or the NeMo line's keys.
    const importers::ImportItem* in = item.imported.get();
    if (!RecordColumnValues(
            cfg.keep, in ? in->speaker : line.speaker, in ? in->language : line.language, line.text,
            in ? std::string_view(in->fields) : std::string_view(item.text), &r->columns, &why)) {
      Reject(r, "\"" + line.key + "\": " + why);
      return;
    }
  }
  if (cfg.tokenizer) r->tokens = static_cast<uint32_t>(s.ids.size());
  r->ok = true;
  r->key = std::move(line.key);
  r->duration = s.pcm.size();
  r->payload = s.record.data();
}

// --segments stored: where segment `in` lies in its recording of `total` samples at the dataset's
// rate, rounded as DecodeFile rounds a clip's offset and duration, and held to its end tolerance.
// Why not, or "".
std::string SegmentSamples(const AudioConfig& cfg, const importers::ImportItem& in,
                           const std::string& rec, uint64_t total, uint64_t* first,
                           uint64_t* samples) {
  const double rate = cfg.sample_rate;
  const std::string name = "\"" + in.key + "\": segment at " + FormatSeconds(in.offset_seconds) +
                           " s of recording '" + rec + "' (" + FormatSeconds(total / rate) + " s)";
  if (!std::isfinite(in.offset_seconds) || in.offset_seconds < 0)
    return name + ": offset must be a finite number of seconds >= 0";
  const auto start = static_cast<uint64_t>(std::llround(in.offset_seconds * rate));
  if (start >= total) return name + " starts at or beyond the recording's end";
  uint64_t want = total - start;
  if (in.duration_seconds >= 0) {
    want = static_cast<uint64_t>(std::llround(std::min(in.duration_seconds, 1e9) * rate));
    if (want == 0) return name + ": duration is shorter than one sample";
    const uint64_t tolerance = static_cast<uint64_t>(std::llround(0.01 * rate));
    if (start + want > total + tolerance && !cfg.allow_truncated_audio)
      return name + " ends " + FormatSeconds((start + want - total) / rate) +
             " s past the recording's end: it lies outside its recording. HINT: correct the "
             "segment's times; --allow-truncated-audio keeps what the recording holds";
    want = std::min(want, total - start);
  }
  *first = start;
  *samples = want;
  return "";
}

// --segments stored: a recording (InputItem::recording) decoded once, stored as chunk records,
// and each of its segments a record of its transcript referring to them (shards/recording.h).
// Each item is written or rejected with its reason; a recording no segment keeps is not written.
void ProcessRecording(const AudioConfig& cfg, const InputItem& item, ItemResult* r) {
  thread_local Scratch s;
  const std::vector<importers::ImportItem>& items = *item.recording;
  auto reject = [&](const importers::ImportItem& in, std::string why) {
    GroupEntry e;
    e.source = in.source;
    e.line = in.line;
    e.input = in.input;
    e.reason = std::move(why);
    r->group.push_back(std::move(e));
  };
  auto reject_all = [&](const std::string& why) {
    for (const importers::ImportItem& in : items)
      reject(in, in.reason.empty() ? "\"" + in.key + "\": " + why : in.reason);
  };
  const importers::ImportItem& first = items.front();
  if (!first.reason.empty()) return reject_all("");
  std::string path;
  const std::string* bytes = nullptr;
  ItemResult src;
  if (!AudioSource(cfg, first, s, &path, &bytes, &src)) {
    if (!src.fault.ok()) r->fault = src.fault;
    return reject_all(src.reason);
  }
  // The whole recording: its length limit is a recording's, the segments' is --max-duration.
  AudioConfig whole = cfg;
  whole.max_duration = kMaxRecordingSeconds;
  ManifestLine line;
  ItemResult decoded;
  if (!DecodeClip(whole, &line, path, bytes, first.channels, s, &decoded)) {
    if (!decoded.fault.ok()) r->fault = decoded.fault;
    return reject_all(decoded.reason);
  }
  r->input_bytes = decoded.input_bytes;
  r->warning = decoded.warning;
  r->clipped_samples = decoded.clipped_samples;
  Status st = features::Resample(s.decoded.samples.data(), s.decoded.samples.size(),
                                 s.decoded.sample_rate, cfg.sample_rate, &s.resampled);
  if (!st.ok()) return reject_all(path + ": resample: " + st.message());
  if (s.resampled.empty()) return reject_all(path + ": zero-length audio after resampling");
  s.pcm.resize(s.resampled.size());
  features::FloatToPcm16(s.resampled.data(), s.resampled.size(), s.pcm.data());
  const uint64_t total = s.pcm.size();
  const std::string rec = first.recording.empty() ? first.audio_path : first.recording;

  std::vector<GroupEntry> segments;
  for (const importers::ImportItem& in : items) {
    ManifestLine seg;
    ItemResult why;
    if (!FromImported(cfg, in, &seg, s, &why)) {
      reject(in, why.reason);
      continue;
    }
    uint64_t start = 0, samples = 0;
    std::string bad = SegmentSamples(cfg, in, rec, total, &start, &samples);
    // The recording is decoded once, with its first segment's channels.
    if (bad.empty() && in.channels != first.channels)
      bad = "\"" + in.key + "\": selects other channels of recording '" + rec +
            "' than its first segment, and --segments stored keeps one channel selection per "
            "recording. HINT: shardify the other channels' cuts without --segments stored";
    if (bad.empty())
      bad = CheckLengths(cfg, s, path + ": \"" + in.key + "\"", double(samples) / cfg.sample_rate);
    GroupEntry e;
    if (bad.empty() && !RecordColumnValues(cfg.keep, in.speaker, in.language, in.text, in.fields,
                                           &e.columns, &bad))
      bad = "\"" + in.key + "\": " + bad;
    if (!bad.empty()) {
      reject(in, std::move(bad));
      continue;
    }
    s.record.Clear();
    s.record.AddField(shards::FieldType::kText, in.text);
    if (cfg.tokenizer)
      s.record.AddField(shards::FieldType::kTokens, s.ids.data(), s.ids.size() * sizeof(int32_t));
    e.ok = true;
    e.key = in.key;
    e.duration = samples;
    e.tokens = cfg.tokenizer ? static_cast<uint32_t>(s.ids.size()) : 0;
    e.payload = s.record.data();
    e.ref.kind = shards::RefKind::kSegment;
    e.ref.chunk = static_cast<uint32_t>(start / cfg.chunk_samples);
    e.ref.offset = start % cfg.chunk_samples;
    e.ref.samples = samples;
    // Rejections so far stay in input order with the segments: both go after the chunks.
    segments.push_back(std::move(e));
    r->group.push_back(GroupEntry());  // a placeholder, replaced below
    r->group.back().ok = true;
  }
  if (segments.empty()) return;  // every segment rejected: the audio is not written

  // The chunks, then the entries in input order (placeholders are the segments, in order).
  std::vector<GroupEntry> group;
  const size_t num_columns = segments.front().columns.size();
  char name[32];
  for (uint64_t c = 0, at = 0; at < total; ++c, at += cfg.chunk_samples) {
    const uint64_t n = std::min<uint64_t>(cfg.chunk_samples, total - at);
    s.record.Clear();
    if (cfg.flac) {
      st = features::EncodeFlac(s.pcm.data() + at, n, cfg.sample_rate, &s.flac);
      if (!st.ok()) {
        r->group.clear();
        return reject_all(path + ": FLAC encode: " + st.message());
      }
      s.record.AddField(shards::FieldType::kAudioFlac, s.flac.data(), s.flac.size());
    } else {
      s.record.AddField(shards::FieldType::kAudioPcm16, s.pcm.data() + at, n * sizeof(int16_t));
    }
    std::snprintf(name, sizeof name, "/chunk-%06llu", static_cast<unsigned long long>(c));
    GroupEntry e;
    e.ok = true;
    e.key = rec + name;
    e.duration = n;
    e.payload = s.record.data();
    e.ref = {shards::RefKind::kChunk, static_cast<uint32_t>(c), at, n};
    e.columns.resize(num_columns);  // all null
    group.push_back(std::move(e));
  }
  size_t next_segment = 0;
  for (GroupEntry& e : r->group)
    group.push_back(e.ok ? std::move(segments[next_segment++]) : std::move(e));
  r->group = std::move(group);
}

// The items of the input: NeMo lines, or an importer's items (--from).
Status MakeSource(const AudioArgs& a, std::unique_ptr<ItemSource>* out) {
  if (a.from == "nemo") {
    *out = std::make_unique<LineSource>(std::vector{a.manifest}, false);
    return Status::OK();
  }
  importers::ImportOptions o;
  o.allow_pipes = a.allow_pipes;
  o.base_dir = fs::current_path().string();
  o.python = a.python;
  o.hf_audio = a.hf_audio;
  o.hf_text = a.hf_text;
  o.hf_id = a.hf_id;
  o.hf_speaker = a.hf_speaker;
  o.hf_language = a.hf_language;
  for (const std::string& f : a.keep_fields) o.fields.push_back(f.substr(0, f.find(':')));
  ImporterFactory factory;
  SLUICE_RETURN_IF_ERROR(MakeImporterFactory(a.from, a.inputs, o, &factory));
  *out = std::make_unique<ImportSource>(std::move(factory), a.segments == "stored");
  return Status::OK();
}

// Every transcript of the input (valid items only): what a tokenizer is built from.
Status CollectTranscripts(const AudioArgs& a, std::vector<std::string>* texts) {
  std::unique_ptr<ItemSource> source;
  SLUICE_RETURN_IF_ERROR(MakeSource(a, &source));
  InputItem item;
  Status st;
  while (source->Next(&item, &st)) {
    if (item.recording) {
      for (const importers::ImportItem& in : *item.recording)
        if (in.reason.empty()) texts->push_back(in.text);
      continue;
    }
    if (item.imported) {
      if (item.imported->reason.empty()) texts->push_back(item.imported->text);
      continue;
    }
    size_t bad = 0;
    if (!features::ValidUtf8(item.text, &bad)) continue;
    nlohmann::json j = nlohmann::json::parse(item.text, nullptr, false);
    if (j.is_object() && j.contains("text") && j["text"].is_string())
      texts->push_back(j["text"].get<std::string>());
  }
  return st;
}

// --from and the inputs: -m or one positional for nemo, positionals for the others, each of
// the kind its format reads. Sets a->manifest for nemo.
Status CheckInputs(AudioArgs* a) {
  std::error_code ec;
  if (a->from == "nemo") {
    if ((!a->manifest.empty() && !a->inputs.empty()) || a->inputs.size() > 1)
      return Status::InvalidArgument(
          "a NeMo manifest is given once: -m/--manifest FILE or one INPUT argument");
    if (a->manifest.empty()) {
      if (a->inputs.empty())
        return Status::InvalidArgument(
            "no input: pass the manifest (-m/--manifest FILE), or --from FORMAT INPUT...");
      a->manifest = a->inputs[0];
    }
    return Status::OK();
  }
  if (!a->manifest.empty())
    return Status::InvalidArgument("-m/--manifest names a NeMo manifest; with --from " + a->from +
                                   " pass the input as an argument: shardify audio --from " +
                                   a->from + " INPUT... -o DIR");
  if (a->inputs.empty())
    return Status::InvalidArgument("--from " + a->from + " needs an INPUT argument (" +
                                   (a->from == "kaldi" ? "the data directory"
                                    : a->from == "wds" ? "the tar files"
                                    : a->from == "hf"  ? "the parquet files"
                                                       : "the cuts manifest(s)") +
                                   ")");
  for (const std::string& in : a->inputs) {
    // A Lhotse Shar directory is the one directory --from lhotse takes.
    const bool dir = a->from == "kaldi" ||
                     (a->from == "lhotse" && a->inputs.size() == 1 && fs::is_directory(in, ec));
    if (!fs::exists(in, ec))
      return Status::NotFound(in + ": no such " + (dir ? "directory" : "file"));
    if (dir ? !fs::is_directory(in, ec) : !fs::is_regular_file(in, ec))
      return Status::InvalidArgument(
          in + (dir ? ": not a directory (--from kaldi reads a data directory: wav.scp, text, ...)"
                    : ": not a regular file (the input is read twice)"));
  }
  ImporterFactory unused;
  return MakeImporterFactory(a->from, a->inputs, {}, &unused);
}

// The checks of the arguments that need no file but the input's existence.
Status CheckAudioArgs(const AudioArgs& a) {
  if (a.codec != "pcm16" && a.codec != "flac")
    return Status::InvalidArgument("--codec '" + a.codec + "': expected pcm16 or flac");
  if (a.allow_pipes && a.from == "nemo")
    return Status::InvalidArgument(
        "--allow-pipes runs the commands of Kaldi and Lhotse inputs; a NeMo manifest has none");
  if (a.from != "hf" && (a.python != "python3" || a.hf_audio != "audio" || a.hf_text != "text" ||
                         a.hf_id != "id" || !a.hf_speaker.empty() || !a.hf_language.empty()))
    return Status::InvalidArgument(
        "--python and --hf-* read HF parquet files: they need --from hf");
  std::error_code ec;
  if (a.from != "nemo") {
    // CheckInputs checked the inputs.
  } else if (!fs::is_regular_file(a.manifest, ec))
    return fs::exists(a.manifest, ec)
               ? Status::InvalidArgument(a.manifest +
                                         ": not a regular file (the manifest is read twice)")
               : Status::NotFound(a.manifest + ": no such manifest file");
  if (a.max_tokens_per_second > 0 && a.tokenizer.spec.empty())
    return Status::InvalidArgument(
        "--max-tokens-per-second counts token ids: it needs --tokenizer");
  if (a.segments != "stored" && a.chunk_seconds != 10)
    return Status::InvalidArgument("--chunk-seconds sizes the chunks of --segments stored");
  if (a.segments == "stored") {
    if (a.from != "lhotse" && a.from != "kaldi")
      return Status::InvalidArgument(
          "--segments stored stores the recordings segments point into: it reads --from lhotse "
          "or --from kaldi, whose segments name their recording");
    if (!a.features.kind.empty() || a.drop_audio)
      return Status::InvalidArgument(
          "--segments stored keeps audio only: precomputed --features (and --drop-audio) need "
          "segments cut at ingest. HINT: leave out --segments, or the --features");
    if (!(a.chunk_seconds * a.sample_rate >= 1) || a.chunk_seconds > 3600)
      return Status::InvalidArgument("--chunk-seconds " + FormatSeconds(a.chunk_seconds) +
                                     ": expected at least one sample and at most 3600 s");
  }
  return Status::OK();
}

// What AudioConfig points at: the tokenizer and the feature computer, when asked for.
struct AudioModels {
  DatasetTokenizer tok;
  tools::FeatureConfig fconf;
  std::unique_ptr<features::FbankComputer> fbank;
  std::unique_ptr<features::SpectrogramComputer> spectrogram;
};

// --tokenizer: trained or loaded over the manifest's transcripts; its model file travels with the
// dataset.
Status LoadTokenizer(const AudioArgs& a, AudioModels* models, AudioConfig* cfg,
                     IngestOptions* opt) {
  std::vector<std::string> texts;
  SLUICE_RETURN_IF_ERROR(CollectTranscripts(a, &texts));
  SLUICE_RETURN_IF_ERROR(PrepareTokenizer(a.tokenizer, texts, &models->tok));
  cfg->tokenizer = models->tok.tokenizer.get();
  if (!models->tok.model_bytes.empty())
    opt->extra_files.emplace_back(models->tok.file_name, models->tok.model_bytes);
  return Status::OK();
}

// --features: the computer of the precomputed features, at the dataset's rate.
Status MakeFeatureComputer(const AudioArgs& a, AudioModels* models, AudioConfig* cfg) {
  if (a.features.kind.empty()) {
    if (a.drop_audio)
      return Status::InvalidArgument("--drop-audio needs --features: records would be empty");
    return Status::OK();
  }
  SLUICE_RETURN_IF_ERROR(tools::MakeFeatureConfig(a.features, a.sample_rate, &models->fconf));
  if (models->fconf.is_fbank) {
    models->fbank = std::make_unique<features::FbankComputer>(models->fconf.fbank);
    cfg->fbank = models->fbank.get();
  } else {
    models->spectrogram =
        std::make_unique<features::SpectrogramComputer>(models->fconf.spectrogram);
    cfg->spectrogram = models->spectrogram.get();
  }
  return Status::OK();
}

// Everything a run needs before the first item: options, configuration and models.
Status PrepareAudio(const AudioArgs& a, IngestOptions* opt, AudioConfig* cfg, AudioModels* models) {
  SLUICE_RETURN_IF_ERROR(MakeIngestOptions(a.write, kDefaultAudioZstdLevel, opt));
  SLUICE_RETURN_IF_ERROR(CheckAudioArgs(a));
  if (a.from == "nemo") cfg->base_dir = fs::absolute(a.manifest).parent_path().string();
  cfg->pipe_timeout = a.pipe_timeout;
  cfg->sample_rate = a.sample_rate;
  cfg->flac = a.codec == "flac";
  cfg->max_duration = a.max_duration;
  cfg->min_duration = a.min_duration;
  cfg->max_tokens_per_second = a.max_tokens_per_second;
  cfg->allow_truncated_audio = a.allow_truncated_audio;
  for (const std::string& f : a.keep_fields) {
    shards::ColumnSpec spec;
    SLUICE_RETURN_IF_ERROR(ParseKeepField(f, &spec));
    cfg->keep.push_back(spec);
  }
  SLUICE_RETURN_IF_ERROR(AudioColumns(cfg->keep, &opt->writer.shard.columns));
  if (a.segments == "stored")
    cfg->chunk_samples = static_cast<uint64_t>(std::llround(a.chunk_seconds * a.sample_rate));
  if (!a.tokenizer.spec.empty()) SLUICE_RETURN_IF_ERROR(LoadTokenizer(a, models, cfg, opt));
  SLUICE_RETURN_IF_ERROR(MakeFeatureComputer(a, models, cfg));
  cfg->drop_audio = a.drop_audio;
  opt->progress_what = "files";
  return Status::OK();
}

// The inputs and options --resume and a part's marker compare (fingerprint.h).
nlohmann::json AudioFingerprint(const AudioArgs& a, const IngestOptions& opt,
                                const tools::FeatureConfig& fconf) {
  nlohmann::json columns = nlohmann::json::array();
  for (const shards::ColumnSpec& c : opt.writer.shard.columns)
    columns.push_back(c.name + ":" + shards::ColumnTypeName(c.type));
  std::error_code ec;
  nlohmann::json f = {
      {"command", "audio"},
      {"sample_rate", a.sample_rate},
      {"codec", a.codec},
      {"max_duration", a.max_duration},
      {"min_duration", a.min_duration},
      {"tokenizer", TokenizerFingerprint(a.tokenizer)},
      {"features", a.features.kind.empty() ? nlohmann::json() : tools::FeatureConfigToJson(fconf)},
      {"drop_audio", a.drop_audio},
      {"columns", std::move(columns)}};
  AddWriteFingerprint(opt, &f);
  // Only when set, so runs without them keep the fingerprint (and --resume) of earlier versions.
  if (a.max_tokens_per_second > 0) f["max_tokens_per_second"] = a.max_tokens_per_second;
  if (a.allow_truncated_audio) f["allow_truncated_audio"] = true;
  if (a.segments == "stored")
    f["segments"] = {{"layout", "stored"}, {"chunk_seconds", a.chunk_seconds}};
  if (a.from == "nemo") {
    f["manifest"] = fs::absolute(a.manifest).string();
    f["manifest_bytes"] = fs::file_size(a.manifest, ec);
  } else {
    // Sizes only: the items' digest (ImportSource::Count) tells inputs of the same size apart.
    nlohmann::json inputs = nlohmann::json::array();
    for (const std::string& in : a.inputs)
      inputs.push_back({{"path", fs::absolute(in).string()},
                        {"bytes", fs::is_directory(in, ec) ? 0 : fs::file_size(in, ec)}});
    f["from"] = a.from;
    f["inputs"] = std::move(inputs);
    // Relative audio paths of Lhotse and Kaldi inputs resolve here (MakeSource).
    f["base_dir"] = fs::current_path().string();
    f["allow_pipes"] = a.allow_pipes;
    if (a.allow_pipes) f["pipe_timeout"] = a.pipe_timeout;
    if (a.from == "hf")
      f["hf"] = {{"python", a.python}, {"audio", a.hf_audio},     {"text", a.hf_text},
                 {"id", a.hf_id},      {"speaker", a.hf_speaker}, {"language", a.hf_language}};
  }
  return f;
}

// The dataset-level fields of the manifest; RunIngest adds the shards and counts.
shards::Manifest AudioManifest(const AudioArgs& a, const AudioConfig& cfg,
                               const AudioModels& models, const IngestOptions& opt) {
  shards::Manifest m;
  m.columns = opt.writer.shard.columns;
  m.kind = "audio";
  m.sample_rate = a.sample_rate;
  if (cfg.chunk_samples > 0) {
    m.segments = "stored";
    m.chunk_samples = cfg.chunk_samples;
  }
  m.codec = a.drop_audio ? "none" : a.codec;
  m.fields = {"text"};
  if (!a.drop_audio) m.fields.insert(m.fields.begin(), "audio");
  if (!a.features.kind.empty()) {
    m.fields.push_back("features");
    *m.features = tools::FeatureConfigToJson(models.fconf);
  }
  if (models.tok.tokenizer) {
    m.fields.push_back("tokens");
    *m.tokenizer = models.tok.description;
  }
  m.created_by = kVersion;
  if (a.from == "nemo") *m.source = {{"manifest", a.manifest}};
  else *m.source = {{"from", a.from}, {"inputs", a.inputs}};
  return m;
}

int Run(AudioArgs a) {
  IngestOptions opt;
  AudioConfig cfg;
  AudioModels models;
  Status st = CheckInputs(&a);
  if (st.ok()) st = PrepareAudio(a, &opt, &cfg, &models);
  if (!st.ok()) return ReportError(st);
  opt.fingerprint = AudioFingerprint(a, opt, models.fconf);
  std::unique_ptr<ItemSource> source;
  st = MakeSource(a, &source);
  if (!st.ok()) return ReportError(st);
  IngestSummary summary;
  st = RunIngest(
      source.get(),
      [&cfg](const InputItem& item, ItemResult* r) {
        if (item.recording) ProcessRecording(cfg, item, r);
        else ProcessLine(cfg, item, r);
      },
      opt, AudioManifest(a, cfg, models, opt), &summary);
  if (!st.ok()) return ReportError(st);
  PrintSummary(summary, a.write.json);
  return 0;
}

// A number in [0, kMaxManifestSeconds]. CLI11 reads "nan" and "inf" as numbers, and its own
// checks let NaN through (every comparison with it is false): --min-duration nan rejected
// nothing, and inf everything.
const CLI::Validator kFiniteNumber(
    [](std::string& text) -> std::string {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (end == text.c_str() || *end != '\0' || !(v >= 0 && v <= kMaxManifestSeconds))
        return "'" + text + "' is not a number from 0 to " + FormatSeconds(kMaxManifestSeconds);
      return "";
    },
    "FINITE", "finite");

}  // namespace

void RegisterAudio(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<AudioArgs>();
  CLI::App* sub = app->add_subcommand(
      "audio",
      "Shardify audio and transcripts: a NeMo-style JSONL manifest, or with --from a Lhotse cuts "
      "manifest, a Kaldi data directory, WebDataset tars or HF parquet (docs/shardify-inputs.md)");
  sub->add_option("-m,--manifest", args->manifest,
                  "JSONL manifest: one {\"audio_filepath\", \"text\"[, \"duration\", \"offset\", "
                  "\"id\"]} per line (the same as INPUT with --from nemo)");
  sub->add_option("--from", args->from,
                  "The input's format: nemo (JSONL manifest), lhotse (cuts .jsonl or .jsonl.gz, "
                  "recordings + supervisions manifests, or a Shar directory), "
                  "kaldi (a data directory: wav.scp, text[, segments, utt2spk, utt2lang]), wds "
                  "(WebDataset .tar shards of audio + .txt/.json), hf (HF datasets parquet "
                  "files, read with --python's pyarrow)")
      ->check(CLI::IsMember({"nemo", "lhotse", "kaldi", "wds", "hf"}))
      ->capture_default_str();
  sub->add_option(
      "inputs", args->inputs,
      "INPUT...: the manifest(s), the data directory, the tars or the parquet files, read in "
      "this order");
  sub->add_flag(
      "--allow-pipes", args->allow_pipes,
      "Run the shell commands that make audio: Kaldi wav.scp \"cmd |\" entries and Lhotse "
      "command sources (by default such items are rejected, never run)");
  sub->add_option("--pipe-timeout", args->pipe_timeout,
                  "With --allow-pipes: kill a command after this many seconds and reject its item")
      ->check(kFiniteNumber)
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--python", args->python,
                  "--from hf: the Python 3 whose pyarrow reads the parquet files (Debian 12 has "
                  "no C++ parquet reader)")
      ->capture_default_str();
  sub->add_option("--hf-audio", args->hf_audio,
                  "--from hf: the audio column ({bytes, path}, as datasets' Audio stores it)")
      ->capture_default_str();
  sub->add_option("--hf-text", args->hf_text, "--from hf: the transcript column")
      ->capture_default_str();
  sub->add_option("--hf-id", args->hf_id,
                  "--from hf: the record key's column; without it the audio's path is the key")
      ->capture_default_str();
  sub->add_option("--hf-speaker", args->hf_speaker,
                  "--from hf: the speaker column (stored as the speaker metadata column)");
  sub->add_option("--hf-language", args->hf_language,
                  "--from hf: the language column (stored as the language metadata column)");
  sub->add_option(
      "--keep-field", args->keep_fields,
      "NAME[:int|float|string] (string by default; repeat for more): also store this field of "
      "each item as an index column the loader's filter can test (NeMo: the line's key; Lhotse: "
      "the cut's or its supervision's custom field; WebDataset: the .json member's key; HF: the "
      "column; Kaldi: the file utt2NAME). An item without it has null there; one whose value "
      "has another type is rejected. speaker, language and chars are always stored");
  sub->add_option("-r,--sample-rate", args->sample_rate, "Resample every clip to this rate (Hz)")
      ->check(CLI::Range(1000, 384000))
      ->capture_default_str();
  sub->add_option("--codec", args->codec,
                  "Audio in shards: pcm16 (fast to read) or flac (about half the disk)")
      ->check(CLI::IsMember({"pcm16", "flac"}))
      ->capture_default_str();
  sub->add_option("--max-duration", args->max_duration, "Reject clips longer than this (seconds)")
      ->check(kFiniteNumber)
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--min-duration", args->min_duration,
                  "Reject clips shorter than this (seconds); the default is one frame of the "
                  "default 25 ms feature window, below which a clip has no feature frame")
      ->check(kFiniteNumber)
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--max-tokens-per-second", args->max_tokens_per_second,
                  "With --tokenizer: reject a clip whose transcript needs more CTC frames (tokens, "
                  "plus one per repeated neighbour) than this many per second of audio; the tiny "
                  "and small models have 25 per second at a 10 ms frame shift (0 = no check)")
      ->check(kFiniteNumber)
      ->capture_default_str();
  sub->add_flag("--allow-truncated-audio", args->allow_truncated_audio,
                "Keep the samples of a WAV/FLAC/AIFF file whose header declares more than the "
                "file holds (a cut-off copy); by default such a file is rejected");
  sub->add_option(
         "--features", args->features.kind,
         "Also store precomputed features (float16 [frames, bins]): fbank or spectrogram, with the "
         "options below; the loader then skips the feature computation")
      ->check(CLI::IsMember({"fbank", "spectrogram"}));
  sub->add_flag(
      "--drop-audio", args->drop_audio,
      "With --features: store no audio (less disk; speed perturbation is then unavailable)");
  sub->add_option("--segments", args->segments,
                  "Segments of long recordings (--from lhotse|kaldi): cut (each segment decoded "
                  "into a record of its own) or stored (each recording stored once in chunks; a "
                  "segment is a record of its transcript that refers to them, and the loader "
                  "reads only the chunks it covers: docs/formats/shard.md, \"Stored recordings\")")
      ->check(CLI::IsMember({"cut", "stored"}))
      ->capture_default_str();
  sub->add_option("--chunk-seconds", args->chunk_seconds,
                  "--segments stored: seconds of audio per chunk record (a block holds whole "
                  "chunks)")
      ->check(kFiniteNumber)
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  tools::AddFeatureOptions(sub, &args->features);
  AddTokenizerOptions(sub, &args->tokenizer);
  AddWriteOptions(sub, &args->write);
  sub->callback([args, exit_code] { *exit_code = Run(*args); });
}

}  // namespace sluice::shardify
