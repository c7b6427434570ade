#include "trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint.h"
#include "cpu_engine.h"
#include "data_parallel.h"
#include "engine.h"
#include "error_rate.h"
#include "features/tokenizer.h"
#include "gpu/communicator.h"
#include "gpu/launch_env.h"
#include "gpu/reference/model.h"
#include "gpu/reference/schedule.h"
#include "greedy_decode.h"
#include "held_out.h"
#include "loader/dataset_tokenizer.h"
#include "loader/loader.h"
#include "loader/plan.h"
#include "shards/checksum.h"
#include "shards/dataset.h"
#include "shards/manifest.h"
#ifdef SLUICE_HAVE_MPI
#include "gpu/mpi_communicator.h"
#endif
#ifdef SLUICE_HAVE_GPU_MODEL
#include "cuda_engine.h"
#endif

namespace sluice::train {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// ---- Datasets ---------------------------------------------------------------------------------

struct TokenizedDataset {
  std::string dir;
  shards::Manifest manifest;
  std::unique_ptr<features::Tokenizer> tokenizer;
  uint64_t fingerprint = 0;
};

Status OpenTokenized(const std::string& dir, TokenizedDataset* d) {
  d->dir = dir;
  SLUICE_RETURN_IF_ERROR(shards::LoadManifest(dir, &d->manifest));
  const shards::Manifest& m = d->manifest;
  if (m.kind != "audio")
    return Status::InvalidArgument(dir + ": a " + m.kind + " dataset; sluice-train needs audio with transcripts");
  if (m.tokenizer.is_null() || !m.has_field("tokens"))
    return Status::InvalidArgument(dir + "/manifest.json: the records carry no token ids, which CTC training needs. "
                                   "HINT: shardify audio -m MANIFEST.jsonl -o " + dir +
                                   " --tokenizer char (or bpe:N, unigram:N, spm:PATH)");
  SLUICE_RETURN_IF_ERROR(loader::LoadDatasetTokenizer(m.tokenizer, dir, &d->tokenizer));
  d->fingerprint = TokenizerFingerprint(m.tokenizer);
  return Status::OK();
}

// Loader options for training (shuffled) or evaluation (file order, so every epoch's evaluation
// sees the same rows in the same batches), each rank reading its partition.
Status MakeLoaderOptions(const TrainOptions& o, const TokenizedDataset& d, bool training, const Ranks& ranks,
                         loader::LoaderOptions* lo) {
  SLUICE_RETURN_IF_ERROR(TrainLoaderOptions(o, d.dir, d.manifest.sample_rate, !d.manifest.features.is_null(),
                                            training, lo));
  lo->rank = ranks.rank;
  lo->world = ranks.world;
  // --eval-fraction: the held-out records are out of the training loader's plan and make up the
  // evaluation loader's, so neither decodes the other's records (both still read the blocks: a
  // key hash spreads the held-out records over nearly all of them).
  const double fraction = o.eval_dataset.empty() ? o.eval_fraction : 0.0;
  if (fraction > 0) {
    if (training)
      lo->select = [fraction](std::string_view key) { return !IsHeldOut(key, fraction); };
    else
      lo->select = [fraction](std::string_view key) { return IsHeldOut(key, fraction); };
  }
  return Status::OK();
}

// --eval-fraction must leave records on both sides: a loader with none is an error that would
// otherwise name LoaderOptions::select rather than the flag.
Status CheckHeldOut(const std::string& dir, double fraction) {
  std::unique_ptr<shards::Dataset> ds;
  SLUICE_RETURN_IF_ERROR(shards::Dataset::Open(dir, shards::ReadOptions(), &ds));
  uint64_t total = 0, held = 0;
  for (size_t s = 0; s < ds->num_shards(); ++s)
    for (size_t i = 0; i < ds->shard(s).num_records(); ++i, ++total) held += IsHeldOut(ds->shard(s).key(i), fraction);
  if (held == 0 || held == total) {
    char f[32];
    std::snprintf(f, sizeof f, "%g", fraction);
    return Status::InvalidArgument("--eval-fraction " + std::string(f) + " holds out " + (held ? "all" : "none") +
                                   " of " + dir + "'s " + std::to_string(total) +
                                   " records. HINT: another fraction, a separate --eval DIR, or "
                                   "--eval-fraction 0 for no evaluation");
  }
  return Status::OK();
}

// Checkpoint config "held_out_plan": 2 since --eval-fraction's records left the training plan.
constexpr int kHeldOutPlan = 2;

// ---- Evaluation -------------------------------------------------------------------------------

struct EvalResult {
  double loss = 0;  // mean CTC loss per utterance
  ErrorCounts errors;
  std::vector<std::pair<std::string, std::string>> examples;  // (reference, hypothesis)
};

// Greedy decoding of every row of `eval` (a separate --eval dataset, or the training dataset's
// held-out records: MakeLoaderOptions). With several ranks each decodes its partition and the
// counts and losses are summed over ranks (a collective); the examples are this rank's.
Status Evaluate(loader::Loader* eval, Engine* engine, int V, const features::Tokenizer& tok,
                size_t max_examples, gpu::Communicator* comm, EvalResult* out) {
  *out = EvalResult();
  SLUICE_RETURN_IF_ERROR(eval->Start(0));
  std::vector<int> rows;
  std::vector<int32_t> ids;
  std::string hypothesis, reference;
  double loss_sum = 0;
  const loader::Batch* batch = nullptr;
  while (true) {
    SLUICE_RETURN_IF_ERROR(eval->Next(&batch));
    if (batch == nullptr) break;
    rows.clear();
    // Rows past size - repeated repeat records only to even out the ranks' batch counts: scoring
    // them would count those utterances twice.
    for (size_t r = 0; r + batch->repeated() < batch->size(); ++r) rows.push_back(static_cast<int>(r));
    if (rows.empty()) continue;
    SLUICE_RETURN_IF_ERROR(engine->EvaluateRows(
        *batch, rows, [&](int i, double loss, const float* log_probs, int frames) -> Status {
          const int r = rows[i];
          loss_sum += loss;
          SLUICE_RETURN_IF_ERROR(GreedyDecode(log_probs, frames, V, tok, &ids, &hypothesis));
          // The reference is the decoded token ids: the transcript as the tokenizer normalised it.
          reference.clear();
          SLUICE_RETURN_IF_ERROR(tok.Decode(batch->tokens() + static_cast<size_t>(r) * batch->max_tokens(),
                                            batch->token_lengths()[r], &reference));
          out->errors.Add(reference, hypothesis);
          if (out->examples.size() < max_examples) out->examples.emplace_back(reference, hypothesis);
          return Status::OK();
        }));
  }
  if (comm != nullptr) {
    ErrorCounts& e = out->errors;
    int64_t counts[5] = {static_cast<int64_t>(e.char_edits), static_cast<int64_t>(e.chars),
                         static_cast<int64_t>(e.word_edits), static_cast<int64_t>(e.words),
                         static_cast<int64_t>(e.utterances)};
    SLUICE_RETURN_IF_ERROR(SumOverRanks(comm, counts, 5));
    e.char_edits = counts[0], e.chars = counts[1], e.word_edits = counts[2], e.words = counts[3];
    e.utterances = counts[4];
    SLUICE_RETURN_IF_ERROR(SumDoubles(comm, &loss_sum, 1));
  }
  if (out->errors.utterances > 0) out->loss = loss_sum / out->errors.utterances;
  return Status::OK();
}

// ---- Checkpoints ------------------------------------------------------------------------------

// `pattern` with {rank} replaced: --resume and --checkpoint may name one file per rank.
std::string RankPath(const std::string& pattern, int rank) {
  std::string path = pattern;
  const size_t at = path.find("{rank}");
  if (at != std::string::npos) path.replace(at, 6, std::to_string(rank));
  return path;
}

std::string CheckpointPath(const std::string& pattern, uint64_t step, int rank) {
  std::string path = RankPath(pattern, rank);
  const size_t at = path.find("{step}");
  if (at != std::string::npos) path.replace(at, 6, std::to_string(step));
  return path;
}

// ---- Logging ----------------------------------------------------------------------------------

struct EpochTotals {
  uint64_t steps = 0, utterances = 0;
  double audio_seconds = 0, wait_seconds = 0, compute_seconds = 0;
  double flops = 0;  // model FLOPs of this rank's steps (engines that estimate them)
};

// `s` with "prefix: " before its message, same code.
Status Prefixed(const Status& s, const std::string& prefix) {
  const std::string m = prefix + ": " + s.message();
  if (s.IsCorruption()) return Status::Corruption(m);
  if (s.IsIOError()) return Status::IOError(m);
  if (s.IsUnsupported()) return Status::Unsupported(m);
  if (s.IsNotFound()) return Status::NotFound(m);
  return Status::InvalidArgument(m);
}

// The engine of o.device: the CPU replicas, or the CUDA model where it was built.
Status MakeEngine(const TrainOptions& o, const reference::ModelConfig& config, const Ranks& ranks,
                  loader::Loader* loader, std::unique_ptr<Engine>* out) {
  if (o.device == "cpu") {
    *out = MakeCpuEngine(config, o.replicas, o.weight_decay, ranks, loader);
    return Status::OK();
  }
#ifdef SLUICE_HAVE_GPU_MODEL
  return MakeCudaEngine(config, o.weight_decay, ranks, loader, out);
#else
  return Status::Unsupported("--device cuda: not built");
#endif
}

// The run on this rank; with ranks.comm, every rank runs it in step with the others.
Status Train(const TrainOptions& o, const Ranks& ranks) {
  gpu::Communicator* const comm = ranks.comm;
  const bool lead = ranks.rank == 0;  // prints, and writes the checkpoints unless they name {rank}
  if (o.device != "cpu" && o.device != "cuda")
    return Status::InvalidArgument("--device '" + o.device + "': expected cpu or cuda");
  if (o.replicas < 1) return Status::InvalidArgument("--replicas must be at least 1");

  // Data: the training set, and where the evaluation rows come from.
  TokenizedDataset train_set;
  SLUICE_RETURN_IF_ERROR(OpenTokenized(o.dataset, &train_set));
  const features::Tokenizer& tok = *train_set.tokenizer;
  loader::LoaderOptions lo;
  SLUICE_RETURN_IF_ERROR(MakeLoaderOptions(o, train_set, true, ranks, &lo));
#ifdef SLUICE_HAVE_GPU_MODEL
  if (o.device == "cuda") ConfigureCudaLoader(&lo);
#endif
  const double held_out = o.eval_dataset.empty() ? o.eval_fraction : 0.0;
  if (held_out > 0) SLUICE_RETURN_IF_ERROR(CheckHeldOut(o.dataset, held_out));
  std::unique_ptr<loader::Loader> loader;
  SLUICE_RETURN_IF_ERROR(loader::Loader::Open(o.dataset, lo, &loader));

  std::unique_ptr<loader::Loader> eval_loader;
  TokenizedDataset eval_set;
  if (!o.eval_dataset.empty()) {
    SLUICE_RETURN_IF_ERROR(OpenTokenized(o.eval_dataset, &eval_set));
    if (eval_set.fingerprint != train_set.fingerprint)
      return Status::InvalidArgument(o.eval_dataset + ": its tokenizer differs from " + o.dataset +
                                     "'s, so its token ids mean other things. HINT: shardify both with the same "
                                     "--tokenizer (spm:PATH with one model for BPE)");
  }
  if (!o.eval_dataset.empty() || held_out > 0) {
    const TokenizedDataset& source = o.eval_dataset.empty() ? train_set : eval_set;
    loader::LoaderOptions elo;
    SLUICE_RETURN_IF_ERROR(MakeLoaderOptions(o, source, false, ranks, &elo));
    SLUICE_RETURN_IF_ERROR(loader::Loader::Open(source.dir, elo, &eval_loader));
  }

  // Model: vocabulary from the tokenizer (its id 0 is the CTC blank), input width from the loader.
  const int vocab = tok.vocab_size();
  const int dim = loader->extractor().dim();
  if (o.preset != "tiny" && o.preset != "small")
    return Status::InvalidArgument("--preset '" + o.preset + "': expected tiny or small");
  reference::ModelConfig config = o.preset == "small" ? reference::ModelConfig::Small(vocab, dim)
                                                      : reference::ModelConfig::Tiny(vocab, dim);
  config.dropout = static_cast<float>(o.dropout);
  if (!reference::ParseActivation(o.activation, &config.activation))
    return Status::InvalidArgument("--activation '" + o.activation + "': expected gelu or swish");
  SLUICE_RETURN_IF_ERROR(config.Validate());
  std::unique_ptr<Engine> engine;
  SLUICE_RETURN_IF_ERROR(MakeEngine(o, config, ranks, loader.get(), &engine));
  const size_t P = engine->num_parameters();

  const nlohmann::json run = RunConfigJson(o, lo);
  TrainCounters counters;
  counters.seed = o.seed;
  loader::ResumeState state;
  reference::ScheduleOptions schedule;
  schedule.peak_lr = o.lr;
  schedule.min_lr = o.lr * o.min_lr_ratio;
  if (!o.resume.empty()) {
    const std::string resume = RankPath(o.resume, ranks.rank);
    Checkpoint c;
    SLUICE_RETURN_IF_ERROR(ReadCheckpoint(resume, &c));
    // The loader's partition, and so every step's rows, depend on the world size.
    const int stored_world = c.config.value("world", 1);
    if (stored_world != ranks.world)
      return Status::InvalidArgument(resume + ": written by a run of " + std::to_string(stored_world) +
                                     " rank(s), this run has " + std::to_string(ranks.world) +
                                     ". HINT: resume with as many ranks as the run that wrote it (mpirun -np " +
                                     std::to_string(stored_world) + ")");
    // Until held-out records left the training loader's plan (held_out_plan 2), their batches
    // held them: the stored loader position names a batch of another plan.
    if (held_out > 0 && c.config.value("held_out_plan", 1) < kHeldOutPlan)
      return Status::InvalidArgument(resume + ": written by a sluice-train whose --eval-fraction batches included "
                                     "the held-out records, so its loader position does not apply to this "
                                     "version's batches. HINT: start a fresh run, or resume with the sluice-train "
                                     "that wrote it");
    if (c.vocab != vocab || c.tokenizer_fingerprint != train_set.fingerprint)
      return Status::InvalidArgument(
          resume + ": vocabulary mismatch: the checkpoint's model has " + std::to_string(c.vocab) +
          " classes (tokenizer " + shards::ChecksumHex(c.tokenizer_fingerprint) + "), dataset " + o.dataset + " has " +
          std::to_string(vocab) + " (tokenizer " + shards::ChecksumHex(train_set.fingerprint) +
          "). HINT: resume on a dataset shardified with the same --tokenizer; a new vocabulary needs a fresh run");
    SLUICE_RETURN_IF_ERROR(CheckRunConfig(run, c.config.value("run", nlohmann::json::object()), resume));
    if (c.params.size() != P)
      return Status::Corruption(resume + ": " + std::to_string(c.params.size()) + " parameters, the " + o.preset +
                                " model has " + std::to_string(P));
    if (c.adam_m.size() != P || c.adam_v.size() != P)
      return Status::Corruption(resume + ": optimizer state does not match the model's " + std::to_string(P) +
                                " parameters");
    // The layout is the same on every device (gpu/reference ParameterLayout, fp32), so a
    // checkpoint of either device resumes on the other.
    const Status restored = engine->Restore(c);
    if (!restored.ok()) return Status::Corruption(resume + ": " + restored.message());
    counters = c.counters;
    state = c.loader;
    schedule.total_steps = c.config.at("schedule").at("total_steps").get<int64_t>();
    schedule.warmup_steps = c.config.at("schedule").at("warmup_steps").get<int64_t>();
  } else {
    SLUICE_RETURN_IF_ERROR(engine->Init(o.seed));
    // Without --steps the decay ends after `epochs` epochs of the first epoch's batch count.
    if (o.steps > 0) {
      schedule.total_steps = o.steps;
    } else {
      // The plan alone gives the count: starting the loader here would set its pipeline reading
      // and decoding only for StartEpoch to stop it. The loop agrees on the count over ranks
      // before the first step.
      loader::EpochPlan plan;
      const loader::LoaderOptions& lopt = loader->options();
      SLUICE_RETURN_IF_ERROR(loader::MakeEpochPlan(loader->index(), lopt.batching, lopt.seed, 0, lopt.rank,
                                                   lopt.world, &plan));
      schedule.total_steps = static_cast<int64_t>(o.epochs * plan.batches.size());
    }
    schedule.warmup_steps =
        o.warmup_steps >= 0 ? o.warmup_steps : std::min<int64_t>(500, schedule.total_steps / 10);
  }
  schedule.total_steps = std::max<int64_t>(schedule.total_steps, 1);
  const int64_t last_step = o.steps > 0 ? o.steps : INT64_MAX;

  const nlohmann::json config_json = {
      {"model",
       {{"preset", o.preset}, {"n_mels", config.n_mels}, {"d_model", config.d_model}, {"n_heads", config.n_heads},
        {"n_layers", config.n_layers}, {"d_ff", config.d_ff}, {"vocab", config.vocab}, {"dropout", config.dropout},
        {"activation", reference::ActivationName(config.activation)}}},
      {"run", run},
      {"schedule", {{"total_steps", schedule.total_steps}, {"warmup_steps", schedule.warmup_steps}}},
      {"tokenizer", train_set.manifest.tokenizer},
      {"world", ranks.world},
      {"held_out_plan", kHeldOutPlan},
  };
  // Every rank holds the same checkpoint; rank 0 writes it, or each rank its own with {rank}.
  const bool writes = lead || o.checkpoint.find("{rank}") != std::string::npos;
  // Collective with several ranks: call it on every rank.
  auto save = [&](uint64_t step, const loader::ResumeState& at) -> Status {
    Checkpoint c;
    SLUICE_RETURN_IF_ERROR(engine->Snapshot(&c));
    if (comm != nullptr)
      SLUICE_RETURN_IF_ERROR(
          CheckSameParameters(comm, c.params.data(), P, "checkpoint at step " + std::to_string(step)));
    if (!writes) return Status::OK();
    c.config = config_json;
    c.tokenizer_fingerprint = train_set.fingerprint;
    c.vocab = vocab;
    c.loader = at;
    c.counters = counters;
    return WriteCheckpoint(CheckpointPath(o.checkpoint, step, ranks.rank), c);
  };

  if (!o.json && lead) {
    const shards::Manifest& m = train_set.manifest;
    std::printf("sluice-train: %s: %llu records, %.2f h of audio; %s tokenizer, %d classes; %s features, %d bins\n",
                o.dataset.c_str(), static_cast<unsigned long long>(m.records), m.seconds() / 3600,
                m.tokenizer.value("type", "?").c_str(), vocab, loader::FeatureKindName(loader->extractor().kind()),
                dim);
    std::printf("model %s: %zu parameters (d_model %d, %d layers, %d heads, %s) on %s; "
                "%lld steps (warm-up %lld), peak lr %g%s\n",
                o.preset.c_str(), P, config.d_model, config.n_layers, config.n_heads,
                reference::ActivationName(config.activation), engine->Describe().c_str(),
                static_cast<long long>(schedule.total_steps), static_cast<long long>(schedule.warmup_steps), o.lr,
                o.resume.empty() ? "" : (", resumed at step " + std::to_string(counters.step)).c_str());
    if (comm != nullptr)
      std::printf("data parallel: %d ranks, each on its partition of every epoch, gradients all-reduced over %s\n",
                  ranks.world, comm->backend());
    std::fflush(stdout);
  }

  // The loader reports audio in frames; its extractor knows the frame rate.
  const double frame_seconds = loader->extractor().kind() == loader::FeatureKind::kRaw
                                   ? 1.0 / loader->extractor().sample_rate()
                                   : o.features.frame_shift_ms / 1000.0;
  const double peak = engine->peak_flops();

  // ---- The loop ----
  bool stop = false;
  for (uint64_t epoch = state.epoch; epoch < o.epochs && !stop; ++epoch) {
    const uint64_t start_batch = epoch == state.epoch ? state.batches : 0;
    if (start_batch == 0) {
      counters.epoch_loss_sum = 0;
      counters.epoch_steps = 0;
    }
    SLUICE_RETURN_IF_ERROR(engine->StartEpoch(epoch, start_batch));
    // Every rank must take as many steps as the others, or an all-reduce waits forever.
    if (comm != nullptr)
      SLUICE_RETURN_IF_ERROR(
          gpu::AgreeOnBatchCount(comm, engine->num_batches(), ("epoch " + std::to_string(epoch)).c_str()));
    const Clock::time_point epoch_start = Clock::now();
    EpochTotals totals;
    double lr = 0, grad_norm = 0;
    bool epoch_done = false;
    while (true) {
      if (static_cast<int64_t>(counters.step) >= last_step) {
        stop = true;
        break;
      }
      StepBatch batch;
      bool end = false;
      SLUICE_RETURN_IF_ERROR(engine->Next(&batch, &end));
      totals.wait_seconds += batch.wait_seconds;
      if (end) {
        epoch_done = true;
        break;
      }
      // The step's rows over all ranks, which weigh each rank's gradient (data_parallel.h); a
      // rank with no row would still join the step, with a zero gradient.
      StepRows step_rows{batch.rows, batch.frames};
      if (comm != nullptr) SLUICE_RETURN_IF_ERROR(GatherStepRows(comm, batch.rows, batch.frames, &step_rows));
      if (step_rows.total_rows == 0) continue;

      const Clock::time_point compute_start = Clock::now();
      double loss = 0, flops = 0;
      lr = reference::LearningRate(schedule, static_cast<int64_t>(counters.step));
      Status s = engine->Step(step_rows.total_rows, counters.seed, counters.step, o.clip, lr, &loss, &grad_norm,
                              &flops);
      if (!s.ok())
        return Prefixed(s, o.dataset + ": epoch " + std::to_string(epoch) + " batch " + std::to_string(batch.index));
      const double compute = Since(compute_start);

      const double audio = static_cast<double>(step_rows.total_frames) * frame_seconds;
      const uint64_t utterances = static_cast<uint64_t>(step_rows.total_rows);
      ++counters.step;
      counters.utterances += utterances;
      counters.audio_seconds += audio;
      counters.epoch_loss_sum += loss;
      ++counters.epoch_steps;
      ++totals.steps;
      totals.utterances += utterances;
      totals.audio_seconds += audio;
      totals.compute_seconds += compute;
      totals.flops += flops;
      if (lead && !o.json && o.log_every > 0 && counters.step % o.log_every == 0) {
        const double step_seconds = compute + batch.wait_seconds;
        std::printf("step %5llu/%lld  epoch %llu  loss %.4f  |g| %.3f  lr %.2e  %3zu utt  %6.1f utt/s  "
                    "%.4f h/s  wait %.1f ms (%.1f%%)",
                    static_cast<unsigned long long>(counters.step), static_cast<long long>(schedule.total_steps),
                    static_cast<unsigned long long>(epoch), loss, grad_norm, lr, static_cast<size_t>(utterances),
                    utterances / step_seconds, audio / 3600 / step_seconds, batch.wait_seconds * 1e3,
                    100 * batch.wait_seconds / step_seconds);
        if (peak > 0) std::printf("  MFU %.1f%%", 100 * flops / (step_seconds * peak));
        std::printf("\n");
        std::fflush(stdout);
      }
      if (!o.checkpoint.empty() && o.checkpoint_every > 0 &&
          counters.step % static_cast<uint64_t>(o.checkpoint_every) == 0) {
        SLUICE_RETURN_IF_ERROR(save(counters.step, engine->Position()));
      }
    }

    // ---- End of epoch (or of the run): evaluate, report, checkpoint ----
    const double train_wall = Since(epoch_start);
    EvalResult eval;
    const Clock::time_point eval_start = Clock::now();
    if (eval_loader != nullptr)
      SLUICE_RETURN_IF_ERROR(Evaluate(eval_loader.get(), engine.get(), vocab, tok,
                                      static_cast<size_t>(o.eval_examples), comm, &eval));
    const double eval_seconds = Since(eval_start);
    const double mean_loss = counters.epoch_steps ? counters.epoch_loss_sum / counters.epoch_steps : 0.0;
    const double busy = totals.compute_seconds + totals.wait_seconds;
    nlohmann::json line = {
        {"epoch", epoch},
        {"partial", !epoch_done},
        {"step", counters.step},
        {"steps", totals.steps},
        {"loss", mean_loss},
        {"lr", lr},
        {"eval_loss", eval.loss},
        {"cer", eval.errors.cer()},
        {"wer", eval.errors.wer()},
        {"eval_utterances", eval.errors.utterances},
        {"utterances", totals.utterances},
        {"audio_hours", totals.audio_seconds / 3600},
        {"wall_seconds", train_wall},
        {"wait_seconds", totals.wait_seconds},
        {"eval_seconds", eval_seconds},
        {"utterances_per_second", busy > 0 ? totals.utterances / busy : 0.0},
        {"audio_hours_per_second", busy > 0 ? totals.audio_seconds / 3600 / busy : 0.0},
        {"steps_per_second", busy > 0 ? totals.steps / busy : 0.0},
        {"wait_fraction", busy > 0 ? totals.wait_seconds / busy : 0.0},
    };
    // Model FLOPs utilisation of this rank's device (docs/train.md, "MFU"); CUDA only.
    if (o.device == "cuda") line["mfu"] = busy > 0 && peak > 0 ? totals.flops / (busy * peak) : 0.0;
    if (lead && o.json) {
      std::printf("%s\n", line.dump().c_str());
    } else if (lead) {
      std::printf("epoch %llu%s: loss %.4f  eval loss %.4f  CER %.2f%%  WER %.2f%% (%llu utterances)  "
                  "%.1f s, %.2f steps/s, data wait %.2f s (%.1f%%), eval %.1f s",
                  static_cast<unsigned long long>(epoch), epoch_done ? "" : " (partial)", mean_loss, eval.loss,
                  100 * eval.errors.cer(), 100 * eval.errors.wer(),
                  static_cast<unsigned long long>(eval.errors.utterances), train_wall,
                  line["steps_per_second"].get<double>(), totals.wait_seconds,
                  100 * line["wait_fraction"].get<double>(), eval_seconds);
      if (line.contains("mfu")) std::printf(", MFU %.1f%%", 100 * line["mfu"].get<double>());
      std::printf("\n");
      for (const auto& [ref, hyp] : eval.examples) std::printf("  ref: %s\n  hyp: %s\n", ref.c_str(), hyp.c_str());
    }
    std::fflush(stdout);
    if (!o.checkpoint.empty()) {
      // A finished epoch resumes at the next one; a run stopped by --steps where it stopped.
      const loader::ResumeState at = epoch_done ? loader::ResumeState{epoch + 1, 0} : engine->Position();
      if (epoch_done) {
        counters.epoch_loss_sum = 0;
        counters.epoch_steps = 0;
      }
      SLUICE_RETURN_IF_ERROR(save(counters.step, at));
    }
  }
  return Status::OK();
}

}  // namespace

Status RunTraining(const TrainOptions& o) {
  gpu::LaunchEnv env;
  SLUICE_RETURN_IF_ERROR(gpu::ReadLaunchEnv(&env));
  if (o.device == "cuda") {
#ifdef SLUICE_HAVE_GPU_MODEL
    // The GPU, its compute stream and, with several ranks, NCCL on that stream (cuda_engine.h).
    std::unique_ptr<CudaLaunch> launch;
    SLUICE_RETURN_IF_ERROR(CudaLaunch::Open(env, &launch));
    const Status s = Train(o, launch->ranks());
    if (!s.ok() && env.world > 1) {
      // As on the CPU: the other ranks would wait in their next collective. Under mpirun MPI ends
      // the job; under torchrun or srun this rank's exit does (the launcher stops the others).
      std::fprintf(stderr, "sluice-train: rank %d of %d (%s environment): %s\n", env.rank, env.world,
                   env.launcher.c_str(), s.ToString().c_str());
      std::fflush(stderr);
      launch->Abort(1);
    }
    return s;
#else
    return Status::Unsupported("--device cuda: this sluice-train was built without the CUDA trainer (gpu/model "
                               "needs nvcc and cuBLASLt at configure time). HINT: --device cpu, or reconfigure "
                               "on a machine with the CUDA toolkit (meson setup -Dcuda=enabled)");
#endif
  }
  if (env.world == 1) return Train(o, Ranks{});
  const std::string where = "rank " + std::to_string(env.rank) + " of " + std::to_string(env.world) + " (" +
                            env.launcher + " environment)";
#ifdef SLUICE_HAVE_MPI
  // The CPU trainer's collectives run over MPI, whichever launcher set the variables: srun with
  // MPI support (PMIx) starts MPI ranks just as mpirun does.
  std::unique_ptr<gpu::MpiCommunicator> comm;
  Status s = gpu::MpiCommunicator::Create(&comm);
  if (!s.ok()) return Status::IOError(where + ": starting MPI: " + s.message());
  if (comm->world() != env.world || comm->rank() != env.rank)
    return Status::InvalidArgument(where + ", but MPI sees rank " + std::to_string(comm->rank()) + " of " +
                                   std::to_string(comm->world()) +
                                   ". HINT: on the CPU the ranks talk over MPI: start them with mpirun -np N "
                                   "(or srun with MPI support), not as independent processes");
  s = Train(o, Ranks{env.rank, env.world, env.local_rank, comm.get(), nullptr});
  if (!s.ok()) {
    // The other ranks are, or soon will be, blocked in a collective this rank will never join:
    // end the whole job rather than leave it hanging.
    std::fprintf(stderr, "sluice-train: %s: %s\n", where.c_str(), s.ToString().c_str());
    std::fflush(stderr);
    comm->Abort(1);
  }
  return s;
#else
  return Status::Unsupported(where + ": this sluice-train was built without MPI, which data parallelism on the "
                             "CPU needs. HINT: apt-get install libopenmpi-dev openmpi-bin, then reconfigure");
#endif
}

}  // namespace sluice::train
