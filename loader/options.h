// LoaderOptions: everything that decides an epoch's batches, and the knobs that bound the memory
// and threads spent making them (docs/loader.md, "Options").
//
// The batches of an epoch are a pure function of (dataset, the "what" fields below, seed, epoch,
// rank, world). The "how" fields (threads, blocks_in_flight, ready_batches, ...) change speed and
// memory, never the bytes of a batch.
//
// One name per option: the C++ field, the JSON key and the Python keyword are the table's key,
// and the flag is that key with '-' for '_' (num_buckets: --num-buckets, num_buckets=). Where a
// name is older than this rule it is kept, in every tool and in Python alike: kind (--features,
// features=), the packing fields that would collide with batching's (--pack-window, --pack-chunk)
// and the feature tables' Kaldi flags (frame_length_ms: --frame-length). kRenamedFlags and
// kRenamedKeywords list the names given up, which the tools and Python refuse naming the new one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../base/fields.h"
#include "../base/status.h"
#include "../features/augment_options.h"
#include "../features/waveform_augment_options.h"
#include "../loader/allocator.h"
#include "../loader/feature_args.h"
#include "../storage/options.h"

namespace sluice::loader {

// What an audio record becomes. Text datasets ignore it (text and tokens pass through).
enum class FeatureKind {
  kFbank,        // Kaldi log-mel filterbank (features/fbank.h), input in int16 scale
  kSpectrogram,  // DeepSpeech2 spectrogram (features/spectrogram.h), input in [-1, 1]
  kRaw,          // the waveform itself: [T = samples, F = 1] in int16 scale
  kPrecomputed,  // the record's kFeaturesF16 field (shardify --features); the default when present
};
// Names are the table's (kFeatureKindNames): the flags and the JSON parse through it.
const char* FeatureKindName(FeatureKind kind);
inline constexpr EnumName<FeatureKind> kFeatureKindNames[] = {
    {"fbank", FeatureKind::kFbank},
    {"spectrogram", FeatureKind::kSpectrogram},
    {"raw", FeatureKind::kRaw},
    {"precomputed", FeatureKind::kPrecomputed}};
inline const auto& EnumNames(FeatureKind) { return kFeatureKindNames; }

// Element type of Batch::features().
enum class DType { kFloat32, kFloat16, kBFloat16 };
// Names are the table's (kDTypeNames: "f32"/"float32", "f16"/"float16", "bf16"/"bfloat16").
const char* DTypeName(DType t);
inline constexpr EnumName<DType> kDTypeNames[] = {
    {"float32", DType::kFloat32}, {"f32", DType::kFloat32},       {"float16", DType::kFloat16},
    {"f16", DType::kFloat16},     {"bfloat16", DType::kBFloat16}, {"bf16", DType::kBFloat16}};
inline const auto& EnumNames(DType) { return kDTypeNames; }
size_t DTypeSize(DType t);

// What happens when a block fails its checksum (or a record in it does not parse).
enum class CorruptPolicy {
  kFail,  // the epoch stops; Next() returns the Corruption status naming shard, block and offset
  kSkip,  // each lost record's row is refilled with a copy of the first intact row of its batch
          // (a whole lost batch keeps its rows with length 0), so every rank keeps its batch
          // count; EpochStats::skipped_records counts them
};
inline constexpr EnumName<CorruptPolicy> kCorruptPolicyNames[] = {{"fail", CorruptPolicy::kFail},
                                                                  {"skip", CorruptPolicy::kSkip}};
inline const auto& EnumNames(CorruptPolicy) { return kCorruptPolicyNames; }

// Per-utterance feature normalisation (features/cmvn.h), after the features and before
// SpecAugment.
enum class Cmvn {
  kNone,     // the features as computed
  kMean,     // subtract each bin's mean over the utterance
  kMeanVar,  // and divide by its standard deviation
};
inline constexpr EnumName<Cmvn> kCmvnNames[] = {
    {"none", Cmvn::kNone}, {"mean", Cmvn::kMean}, {"mean-var", Cmvn::kMeanVar}};
inline const auto& EnumNames(Cmvn) { return kCmvnNames; }

// Order and batch shapes: the sampler (plan.h). Lengths are in "frames": feature frames for audio
// (samples for kRaw), token ids for text records that carry them, else text bytes.
struct BatchingOptions {
  bool shuffle = true;              // false: shards and blocks in file order, no window shuffle
  uint32_t shuffle_window = 512;  // records; the block-ordered stream is shuffled in chunks of this
                                  // many. Batches open at once, hence the batch pool, grow with it:
                                  // about its records' features are held (docs/loader.md)
  uint32_t num_buckets = 8;         // length buckets, boundaries at length quantiles of the dataset
  uint64_t max_frames = 20000;      // cap on the sum of lengths in a batch (0 = none); 20000 fbank
                                    // frames at a 10 ms shift is 200 s of audio
  uint64_t max_padded_frames =
      0;  // cap on rows * longest length (0 = none): bounds the padded tensor
  uint32_t max_batch_size = 0;      // cap on rows (0 = none)
  uint64_t max_tokens = 0;          // cap on the sum of the rows' token ids (index `tokens` column)
                                    // in a batch (0 = none): a token budget for ASR transcripts
  uint64_t max_padded_tokens = 65536;  // cap on rows * the longest row's token ids (index `tokens`
                                       // column), the padded ids tensor (0 = none). Pool buffers
                                       // are reserved up to it: one record with an outlier
                                       // transcript gets a batch of its own, and only that batch's
                                       // buffer grows (then shrinks back), instead of every pooled
                                       // batch growing to rows * its length. 65536 ids (256 KiB) is
                                       // 10x what 200 s of speech transcribes to
  uint32_t max_bucket_wait = 0;     // records; a bucket whose oldest record is this far behind the
                                 // stream is emitted half-full, which bounds how long decoded rows
                                 // wait for their batch (0 = shuffle_window)
  bool bucket_2d = false;       // buckets on (length, tokens): num_buckets length quantiles times
                                // num_buckets token quantiles, for models whose input and output
                                // lengths vary apart (ASR transcripts, speech-LLM conversations:
                                // encoder frames and LLM tokens; plan.h step 2)
  uint64_t max_padded_sum = 0;  // cap on rows x (longest length + longest row's tokens): one
                                // budget for the padded input and output tensors together, which
                                // sets each bucket's batch size (0 = none)
};

// BatchingOptions' table (base/fields.h).
template <OptionsOf<BatchingOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"shuffle", nullptr, "shuffle the records (the trainer: on for training only)"},
    o.shuffle);
  v(FieldInfo{"shuffle_window", "--shuffle-window", "records shuffled together"}, o.shuffle_window);
  v(FieldInfo{"num_buckets", "--num-buckets", "length buckets", Affects::kWhat, 1, 1000},
    o.num_buckets);
  v(FieldInfo{"max_frames", "--max-frames",
              "cap on the sum of lengths (frames) in a batch; 0 = none"},
    o.max_frames);
  v(FieldInfo{"max_padded_frames", "--max-padded-frames", "cap on rows x longest length; 0 = none"},
    o.max_padded_frames);
  v(FieldInfo{"max_batch_size", "--max-batch-size", "cap on rows per batch; 0 = none"},
    o.max_batch_size);
  v(FieldInfo{"max_tokens", "--max-tokens", "cap on token ids per batch; 0 = none"}, o.max_tokens);
  v(FieldInfo{"max_padded_tokens", "--max-padded-tokens",
              "cap on rows x longest row's token ids in a batch; 0 = none"},
    o.max_padded_tokens);
  v(FieldInfo{"max_bucket_wait", "--max-bucket-wait",
              "records a bucket's oldest record may fall behind before it is emitted half-full; "
              "0 = --shuffle-window"},
    o.max_bucket_wait);
  v(FieldInfo{"bucket_2d", "--bucket-2d",
              "buckets on (length, tokens): num_buckets quantiles of each (plan.h)"},
    o.bucket_2d);
  v(FieldInfo{"max_padded_sum", "--max-padded-sum",
              "cap on rows x (longest length + longest tokens) in a batch; 0 = none"},
    o.max_padded_sum);
}

// Language-model packing (docs/loader.md, "Packing"): the epoch's token stream (documents in a
// shuffled record order, each ending with its end-of-document id 1) is cut into sequences of
// seq_len + 1 ids, sequence k covering stream tokens [k*L, k*L + L + 1): inputs are row[0..L),
// targets row[1..L]. Batches are [batch_size, seq_len + 1] int32. The stream's tail is wrapped
// with its own beginning so that every rank gets the same number of full batches: every token
// is an input exactly once per epoch, plus EpochPlan::wrapped_tokens repeated from the start of
// the stream. Needs each record's token count in the index (shardify text --tokenizer, with the
// ids stored or, with --store text, only counted and tokenized online by the loader).
// How packed rows are filled (docs/loader.md, "Packing").
enum class PackMode {
  kConcat,    // the documents' token stream cut into rows of L + 1: rows cross document
              // boundaries, no padding (pack.h)
  kFirstFit,  // whole documents, each in the first row of its window with room (greedy, stream
              // order): rows padded, positions and masks restart per document (pack_fit.h)
  kBestFit,   // whole documents, longest first, each in the fullest row of its window with room
              // (best-fit decreasing): the least padding of the three (pack_fit.h)
};
inline constexpr EnumName<PackMode> kPackModeNames[] = {{"concat", PackMode::kConcat},
                                                        {"first_fit", PackMode::kFirstFit},
                                                        {"best_fit", PackMode::kBestFit}};
inline const auto& EnumNames(PackMode) { return kPackModeNames; }

// A document longer than L when PackingOptions::split_long is false.
enum class TooLong {
  kTruncate,  // its first L tokens fill a row alone (its token L is that row's last target); the
              // rest is dropped, counted (EpochStats::truncated_documents, truncated_tokens)
  kSkip,      // left out of the epoch, counted (EpochStats::skipped_documents, skipped_tokens)
};
inline constexpr EnumName<TooLong> kTooLongNames[] = {{"truncate", TooLong::kTruncate},
                                                      {"skip", TooLong::kSkip}};
inline const auto& EnumNames(TooLong) { return kTooLongNames; }

struct PackingOptions {
  uint32_t seq_len = 0;          // L, tokens per sequence (0 = off: ASR-style rows per record)
  uint32_t batch_size = 8;       // B, sequences per batch
  uint32_t shuffle_window = 64;  // sequences shuffled together: a batch draws its rows from a
                                 // window of this many consecutive sequences, which keeps reads
                                 // within a few blocks (0 or 1 = stream order; batching.shuffle
                                 // false also keeps stream order)
  uint64_t chunk_tokens = 1u << 21;  // tokens per shuffle unit: the record stream is made of
                                 // runs of consecutive records of at least this many tokens,
                                 // shuffled by (seed, epoch), instead of shard blocks, so the
                                 // epoch is the same whether ids are stored or tokenized online
                                 // (their blocks differ). A block straddling two runs is read
                                 // twice: one extra read per run, i.e. per 8-16 MiB of stored
                                 // text and ids at the default. Smaller: a finer shuffle
  PackMode pack_mode = PackMode::kConcat;  // concat: the layout earlier runs trained on (no
                                           // padding); first_fit, best_fit: whole documents
  uint32_t fit_window = 1024;    // first_fit / best_fit: documents placed together (consecutive
                                 // in the record stream); a row never takes documents of two
                                 // windows. Larger: less padding, more documents planned at once
  bool split_long = true;        // first_fit / best_fit: a document longer than L fills rows of
                                 // L at row boundaries and its last part is placed like a
                                 // document (EpochStats::split_documents); false: too_long decides
  TooLong too_long = TooLong::kTruncate;  // split_long false: truncate or skip, both counted
  bool balance_ranks = false;  // first_fit / best_fit: deal each step's rows to the ranks by
                               // their tokens (loader/rank_balance.h): every rank's tokens in a
                               // step within the step's longest minus shortest row; false:
                               // rank r takes its own run of batches (fewer blocks per rank)
};

// PackingOptions' table (base/fields.h).
template <OptionsOf<PackingOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"seq_len", "--seq-len", "packing: tokens per sequence L (0 = off: a row per record)"},
    o.seq_len);
  v(FieldInfo{"batch_size", "--batch-size", "packing: sequences per batch B", Affects::kWhat, 1},
    o.batch_size);
  v(FieldInfo{"shuffle_window", "--pack-window", "packing: sequences shuffled together"},
    o.shuffle_window);
  v(FieldInfo{"chunk_tokens", "--pack-chunk", "packing: tokens per shuffle unit", Affects::kWhat,
              1},
    o.chunk_tokens);
  v(FieldInfo{"pack_mode", "--pack-mode",
              "packing: concat (cut the token stream), first_fit or best_fit (whole documents)"},
    o.pack_mode);
  v(FieldInfo{"fit_window", "--fit-window", "packing fits: documents placed together",
              Affects::kWhat, 1},
    o.fit_window);
  v(FieldInfo{"split_long", "--split-long",
              "packing fits: split documents longer than seq_len at row boundaries"},
    o.split_long);
  v(FieldInfo{"too_long", "--too-long",
              "packing fits, split_long false: truncate or skip documents longer than seq_len"},
    o.too_long);
  v(FieldInfo{"balance_ranks", "--balance-ranks",
              "packing fits: deal each step's rows to the ranks by tokens, equal within one row"},
    o.balance_ranks);
}

// Conversation datasets (shardify conversations; docs/conversations.md, "Loading"): how each
// conversation becomes LLM tokens, which the rows' budget (PackingOptions::seq_len) counts.
// Both are required for a conversation dataset and refused for any other. Loader::Open reads
// the files once.
struct ConversationOptions {
  std::string chat_template;   // JSON template file (loader/chat_template.h), its texts
                               // tokenized by the dataset's tokenizer
  std::string encoder_frames;  // encoder frames per audio turn: a preset or a JSON spec file
                               // (features/encoder_frames.h); "" for a dataset without audio turns
  // Set by Loader::Open, never by hand: what the two files mean, so a run records its template
  // and spec by content, not where they were (an edit in place is another run, a copy is not).
  std::string chat_template_content;   // ChatTemplate::checksum, hex
  std::string encoder_frames_content;  // checksum of CanonicalEncoderFramesSpec, hex; "" if none
};

// ConversationOptions' table (base/fields.h).
template <OptionsOf<ConversationOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"chat_template", "--chat-template",
              "conversations: the prompt template, a JSON file (docs/conversations.md)",
              Affects::kHow},
    o.chat_template);
  v(FieldInfo{"encoder_frames", "--encoder-frames",
              "conversations: encoder frames per audio turn, a preset (whisper, fastconformer, "
              "canary, conformer, zipformer, sluice) or a JSON spec file (docs/features.md); "
              "not needed without audio turns",
              Affects::kHow},
    o.encoder_frames);
  v(FieldInfo{"chat_template_content", nullptr,
              "the template's content checksum (set by the loader)"},
    o.chat_template_content);
  v(FieldInfo{"encoder_frames_content", nullptr,
              "the encoder spec's content checksum (set by the loader)"},
    o.encoder_frames_content);
}

// Turns a record's text into the token ids a record would store, for records that carry none:
// for text datasets the document's ids followed by the end-of-document id 1 (what shardify text
// stores), for transcripts the ids alone. Called from decode threads at once: must be
// thread-safe. Left empty, Loader::Open uses the dataset's own tokenizer (manifest.json
// "tokenizer", loader/dataset_tokenizer.h) when its records hold text without ids.
using Tokenizer = std::function<Status(std::string_view text, std::vector<int32_t>* ids)>;

// Which records make up the epochs, by key: those it returns true for. Loader::Open calls it once
// per record, so it must be a pure function of the key for the contract to hold (the same records
// in every epoch, on every rank, after a resume). The records it rejects are left out of the plan:
// they take no row and are never decoded (a block is still read and decompressed whole when it
// also holds selected records). A training run and its held-out evaluation pass
// complementary filters over one dataset.
using RecordFilter = std::function<bool(std::string_view key)>;

struct LoaderOptions {
  // --- what the batches contain (part of the determinism contract) ---
  FeatureKind kind = FeatureKind::kFbank;  // ignored when the dataset holds precomputed features
                                           // and use_precomputed is true
  bool use_precomputed = true;  // use kFeaturesF16 fields when the manifest has "features"
                                // (kind kPrecomputed uses them whatever this says; the tools and
                                // Python set it false: their kind decides)
  FeatureArgs features;  // kFbank and kSpectrogram: frames, window and each computer's options,
                         // independent of the rate. Loader::Open resolves them at the dataset's
                         // sample rate with `kind` (features.kind is not read) and is the one
                         // place that checks them (loader/feature_args.h)
  Cmvn cmvn = Cmvn::kNone;                   // per-utterance normalisation
  bool spec_augment = false;               // SpecAugment masks, keyed by (seed, epoch, record)
  features::SpecAugmentOptions spec_augment_options;
  bool speed_perturb = false;              // resample each record by a factor drawn from
                                           // (seed, epoch, record); lengths change per epoch and
                                           // the plan uses the perturbed ones (not with
                                           // precomputed features)
  features::SpeedPerturbOptions speed_perturb_options;  // factors, default 0.9 / 1.0 / 1.1
  features::WaveformAugmentOptions waveform_augment;    // reverberation, noise, gain, clipping,
                                                        // band limit, codec after decode (and speed
                                                        // perturbation), keyed by (seed, epoch,
                                                        // record); all off by default
  std::string noise_data;                  // audio dataset of noise clips (directory or URL,
                                           // read like the data) for waveform_augment.noise
  std::string rir_data;                    // audio dataset of room impulse responses for
                                           // waveform_augment.reverb
  std::string babble_data;                 // audio dataset of utterances for
                                           // waveform_augment.babble; empty: the training data
  std::string noise_content;               // set by Loader::Open, never by hand: the noise and
  std::string rir_content;                 // RIR datasets' ManifestFingerprint (hex), so a run
                                           // records which clips it drew from, not where
  std::string babble_content;              // set by Loader::Open: the babble pool's dataset
                                           // (ManifestFingerprint, hex, one per source joined
                                           // by '+' for the training data itself)
  DType dtype = DType::kFloat32;           // element type of Batch::features()
  BatchingOptions batching;
  PackingOptions packing;                  // seq_len > 0: fixed-length LM sequences (text only)
  ConversationOptions conversation;        // conversation datasets: template and encoder frames
  Tokenizer tokenizer;                     // empty: the dataset's own, if any (see Tokenizer);
                                           // given, it wins over the dataset's
  RecordFilter select;                     // empty: every record (see RecordFilter)
  std::string filter;  // keep the records for which this expression over index columns holds
                       // (loader/filter_expr.h, docs/loader.md "Filters"); "": every record
  double window_seconds = 0;  // > 0: stored recordings (shardify --segments stored) give random
                              // windows of this many seconds (a shorter recording: all of it),
                              // one per recording per epoch, start keyed by (seed, epoch,
                              // recording), with the text of the segments each fully contains;
                              // 0: their segments (docs/loader.md, "Stored recordings")
  CorruptPolicy corrupt = CorruptPolicy::kFail;
  uint64_t seed = 0;                       // with the epoch, keys every shuffle, dither and mask
  int rank = 0;                            // this process's rank in [0, world)
  int world = 1;                           // number of ranks sharing the epoch

  // --- how fast and how much memory (never changes a batch) ---
  int threads = 0;                         // decode threads, the caller's background thread
                                           // included (0 = the cores this process may use:
                                           // affinity mask and cgroup quota, base/cpus.h)
  int blocks_in_flight = 0;                // blocks between read and collate at once (the
                                           // pipeline's tokens); each holds one compressed block
                                           // (0 = 2 * threads + 2)
  uint32_t open_batches = 16;              // batches being filled at once, at most: the pool is
                                           // open_batches + ready_batches + consumer_batches
                                           // batches, whatever the dataset. A block's rows for
                                           // batches further ahead cost a second read (schedule.h;
                                           // EpochStats::reread_blocks). 0 = no cap: each block
                                           // read once, pool sized by the epoch's worst case.
                                           // Packing raises it to the batches one block can
                                           // feed times (blocks_in_flight + 1)
                                           // (the packed collator's OpenBatchCap)
  int ready_batches = 4;                   // pool buffers for finished batches queued ahead
                                           // of the consumer; the queue may hold more while
                                           // fewer batches are being filled (the pool bounds
                                           // it: collate never waits for the consumer, the
                                           // read stage does, for a free buffer)
  int consumer_batches = 1;                // batches the consumer holds at once: Next() recycles
                                           // the batch it returned this many calls ago
  uint64_t memory_budget = 0;              // bytes; Start fails if the batch pool's worst case
                                           // exceeds it, naming the options to lower (0 = no check)
  std::shared_ptr<BatchAllocator> allocator;  // batch memory (null = aligned host memory)
  bool verify_checksums = true;            // per-block XXH3 before decompressing
  storage::StorageOptions storage;         // datasets at http(s):// and s3:// locations: requests,
                                           // read-ahead, retries, the block cache
};

// One dataset of a weighted mixture (Loader::Open(MixOptions, ...); docs/loader.md, "Weighted
// mixing").
struct MixSource {
  std::string dir;      // dataset directory (shardify's output), or its http(s):// or s3:// URL
  double weight = 1.0;  // > 0: the source's share of an epoch's records is weight / sum
};

// "DIR:WEIGHT" (the tools' --data): split at the last ':' when what follows is a number, so DIR
// may itself hold ':' (a URL); no number, or a URL's port ("http://host:8080"): weight 1.
// InvalidArgument for a weight <= 0.
Status ParseMixSource(const std::string& spec, MixSource* out);

// Several datasets blended by weight into one epoch. Part of what the batches contain.
struct MixOptions {
  std::vector<MixSource> sources;
  uint64_t epoch_records = 0;  // records per epoch, all sources together (0: the sum of the
                               // sources' records, as LoaderOptions::select leaves them)
};

// LoaderOptions' table (base/fields.h). tokenizer, select and allocator are code, not options:
// not in it. The flags here are the loader flags every tool shares (tools/common/options_cli.h).
template <OptionsOf<LoaderOptions> O, class V>
void VisitFields(O& o, V&& v) {
  using enum Affects;
  v(FieldInfo{"kind", "--features",
              "features of audio records: fbank, spectrogram, raw or precomputed"},
    o.kind);
  v(FieldInfo{"use_precomputed", nullptr,
              "use the dataset's precomputed features when it has them"},
    o.use_precomputed);
  v(FieldInfo{"features", nullptr, "frames, window and the fbank and spectrogram options"},
    o.features);
  v(FieldInfo{"cmvn", "--cmvn", "per-utterance normalisation: none, mean or mean-var"}, o.cmvn);
  v(FieldInfo{.key = "spec_augment",
              .flag = "--spec-augment",
              .help = "SpecAugment masks keyed by (seed, epoch, record)",
              .is_switch = true},
    o.spec_augment);
  v(FieldInfo{"spec_augment_options", nullptr, "SpecAugment counts and widths"},
    o.spec_augment_options);
  v(FieldInfo{.key = "speed_perturb",
              .flag = "--speed-perturb",
              .help = "resample each record by a speed factor drawn per epoch",
              .is_switch = true},
    o.speed_perturb);
  v(FieldInfo{"speed_perturb_options", nullptr, "speed factors"}, o.speed_perturb_options);
  v(FieldInfo{"waveform_augment", nullptr, "the waveform augmentation chain"}, o.waveform_augment);
  v(FieldInfo{"noise_data", "--noise-data",
              "audio dataset of noise clips (directory or URL) for additive noise", kHow},
    o.noise_data);
  v(FieldInfo{"rir_data", "--rir-data",
              "audio dataset of room impulse responses (directory or URL) for reverberation", kHow},
    o.rir_data);
  v(FieldInfo{"babble_data", "--babble-data",
              "audio dataset of utterances (directory or URL) for babble; default: the training "
              "data",
              kHow},
    o.babble_data);
  v(FieldInfo{"noise_content", nullptr, "the noise dataset's content checksum (set by the loader)"},
    o.noise_content);
  v(FieldInfo{"rir_content", nullptr, "the RIR dataset's content checksum (set by the loader)"},
    o.rir_content);
  v(FieldInfo{"babble_content", nullptr,
              "the babble pool's dataset content checksum (set by the loader)"},
    o.babble_content);
  v(FieldInfo{"dtype", "--dtype", "batch features: float32, float16 or bfloat16 (f32, f16, bf16)"},
    o.dtype);
  v(FieldInfo{"batching", nullptr, "batch shapes"}, o.batching);
  v(FieldInfo{"packing", nullptr, "language-model packing"}, o.packing);
  v(FieldInfo{"filter", "--filter",
              "keep records for which this holds, e.g. 'duration < 20 and tokens > 0' (columns: "
              "duration, tokens, tokens_per_second, key; conversations also audio_seconds, "
              "text_tokens, encoder_frames, llm_tokens; audio also speaker, language (or lang), "
              "chars_per_second and the fields shardify kept; docs/loader.md, Filters)"},
    o.filter);
  v(FieldInfo{"window_seconds", "--window-seconds",
              "stored recordings: random windows of this many seconds, with the text of the "
              "segments each fully contains, instead of the segments (0 = the segments)",
              kWhat, 0, 86400},
    o.window_seconds);
  v(FieldInfo{"conversation", nullptr, "conversation datasets: template, encoder frames"},
    o.conversation);
  v(FieldInfo{"corrupt", "--corrupt", "a corrupt block: fail, or skip its records"}, o.corrupt);
  v(FieldInfo{"seed", "--seed", "keys every shuffle, dither and mask"}, o.seed);
  v(FieldInfo{"rank", "--rank", "this process's rank", kWhat, 0}, o.rank);
  v(FieldInfo{"world", "--world", "ranks sharing the epoch", kWhat, 1}, o.world);
  v(FieldInfo{"threads", "--threads", "loader decode threads (0 = the usable cores)", kHow, 0, 1024},
    o.threads);
  v(FieldInfo{"blocks_in_flight", "--blocks-in-flight", "blocks in flight (0 = 2 x threads + 2)",
              kHow, 0},
    o.blocks_in_flight);
  v(FieldInfo{"open_batches", "--open-batches", "batches being filled at once (0 = no cap)", kHow},
    o.open_batches);
  v(FieldInfo{"ready_batches", "--ready-batches", "finished batches queued ahead", kHow, 1, 1000},
    o.ready_batches);
  v(FieldInfo{"consumer_batches", "--consumer-batches", "batches the consumer holds at once", kHow,
              1},
    o.consumer_batches);
  v(FieldInfo{"memory_budget", "--memory-budget", "bytes the batch pool may take (0 = no check)",
              kHow},
    o.memory_budget);
  v(FieldInfo{"verify_checksums", "--verify-checksums", "check each block's XXH3", kHow},
    o.verify_checksums);
  v(FieldInfo{"storage", nullptr, "remote datasets and their cache", kHow}, o.storage);
}

// Names the options had before they were given one name (a flag, a Python keyword): the tools
// and Python refuse them, naming the new one, rather than reading them as something else.
struct RenamedOption {
  const char* old_name;  // "--buckets" or "buckets"
  const char* new_name;  // "--num-buckets" or "num_buckets"
};
inline constexpr RenamedOption kRenamedFlags[] = {{"--buckets", "--num-buckets"},
                                                  {"--tokens", "--blocks-in-flight"},
                                                  {"--ready", "--ready-batches"}};
inline constexpr RenamedOption kRenamedKeywords[] = {{"buckets", "num_buckets"},
                                                     {"tokens", "blocks_in_flight"},
                                                     {"tokens_in_flight", "blocks_in_flight"},
                                                     {"ready", "ready_batches"}};

}  // namespace sluice::loader
