#include "trainer/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/launch_env.h"
#include "features/tokenizer.h"
#include "loader/loader.h"
#include "reference/model.h"
#include "reference/schedule.h"
#include "shards/checksum.h"
#include "shards/manifest.h"
#include "storage/url.h"
#include "trainer/alignment.h"
#include "trainer/checkpoint.h"
#include "trainer/cpu_engine.h"
#include "trainer/data_parallel.h"
#include "trainer/datasets.h"
#include "trainer/device_backend.h"
#include "trainer/engine.h"
#include "trainer/evaluate.h"
#ifdef SLUICE_HAVE_MPI
#include "comm/mpi_communicator.h"
#endif

namespace sluice::train {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Every rank's unalignable count summed, and the named ones of all ranks in rank order (the
// first UnalignableTally::kNamed of them).
Status GatherUnalignable(comm::Communicator* comm, UnalignableTally* tally) {
  nlohmann::json mine = nlohmann::json::array();
  for (const Unalignable& u : tally->first)
    mine.push_back({u.key, u.frames, u.tokens, u.min_frames});
  const std::string text = nlohmann::json{{"count", tally->count}, {"first", mine}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::vector<std::string> all;
  SLUICE_RETURN_IF_ERROR(AllGatherStrings(comm, text, &all));
  UnalignableTally merged;
  for (const std::string& rank_text : all) {
    const nlohmann::json j = nlohmann::json::parse(rank_text);
    std::vector<Unalignable> found;
    for (const auto& u : j["first"])
      found.push_back({u[0].get<std::string>(), u[1].get<int>(), u[2].get<int>(), u[3].get<int>()});
    merged.Add(found);
    // Add counted the named ones only; the rest of this rank's count goes on top.
    merged.count += j["count"].get<uint64_t>() - found.size();
  }
  *tally = std::move(merged);
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

// ---- The run ----------------------------------------------------------------------------------

struct EpochTotals {
  uint64_t steps = 0, utterances = 0;
  double audio_seconds = 0, wait_seconds = 0, compute_seconds = 0;
  double flops = 0;  // model FLOPs of this rank's steps (engines that estimate them)
  double lr = 0;     // of the last step
  bool done = false;  // the epoch ran to its end (not stopped by --steps)
  UnalignableTally unalignable;  // this rank's rows CTC could not align (alignment.h)
  Clock::time_point start;  // after the ranks agreed on the batch count: the epoch's wall clock
};

// One rank's training run, in the order Train() calls its steps: OpenData, BuildEngine,
// InitOrResume, PrintHeader, then RunEpoch and EndEpoch per epoch. With ranks.comm every rank
// runs it in step with the others, so the collectives inside line up.
class Run {
 public:
  Run(const TrainOptions& o, const Ranks& ranks) : o_(o), ranks_(ranks), lead_(ranks.rank == 0) {}

  Status OpenData();
  Status BuildEngine();
  Status InitOrResume();
  void PrintHeader() const;
  // Steps through `epoch` from the resume position; *stop when --steps is reached.
  Status RunEpoch(uint64_t epoch, EpochTotals* totals, bool* stop);
  // Evaluates, reports and checkpoints the epoch that RunEpoch ended.
  Status EndEpoch(uint64_t epoch, const EpochTotals& totals);

  const loader::ResumeState& start() const { return state_; }

 private:
  Status Resume(const std::string& path);
  nlohmann::json ConfigJson() const;
  // Collective with several ranks: call it on every rank.
  Status Save(uint64_t step, const loader::ResumeState& at);
  // A step whose outcome (loss, gradient norm) Engine::Step gives later, with what its log line
  // reports besides them.
  struct PendingStep {
    uint64_t step = 0;  // the run's step count after it
    double wait = 0, flops = 0, audio = 0, lr = 0;
    uint64_t utterances = 0;
  };
  // `seconds`: since the previous step ended (its data wait included).
  void LogStep(uint64_t epoch, const PendingStep& p, double loss, double grad_norm,
               double seconds) const;

  const TrainOptions& o_;
  const Ranks ranks_;
  const bool lead_;  // prints, and writes the checkpoints unless they name {rank}

  // OpenData
  TokenizedDataset train_set_, eval_set_;
  loader::LoaderOptions train_lo_;  // the training loader's options, recorded in the run config
  std::string data_name_;           // DATASET, or the mixture's "A + B + ..." for messages
  std::vector<std::string> source_names_;  // each training source's, passwords hidden
  std::vector<uint64_t> data_content_;     // each training source's DatasetFingerprint
  std::unique_ptr<loader::Loader> loader_, eval_loader_;
  double frame_seconds_ = 0;  // of one feature frame, for the hours of audio reported
  // BuildEngine
  int vocab_ = 0;
  reference::ModelConfig config_;
  std::unique_ptr<Engine> engine_;
  size_t num_params_ = 0;
  // InitOrResume
  nlohmann::json run_config_;
  TrainCounters counters_;
  loader::ResumeState state_;
  reference::ScheduleOptions schedule_;
  nlohmann::json config_json_;
  // RunEpoch/EndEpoch: the epoch whose loader EndEpoch already started (UINT64_MAX: none).
  uint64_t started_ahead_ = UINT64_MAX;
};

Status Run::OpenData() {
  loader::MixOptions mix;
  SLUICE_RETURN_IF_ERROR(TrainMixture(o_, &mix));
  for (const loader::MixSource& src : mix.sources) {
    source_names_.push_back(storage::RedactUrl(src.dir));
    data_name_ += (data_name_.empty() ? "" : " + ") + source_names_.back();
  }
  // The first source stands for all in what they must share (tokenizer, rate, features): the
  // loader refuses a mixture whose sources disagree, naming both.
  SLUICE_RETURN_IF_ERROR(OpenTokenized(mix.sources[0].dir, o_.loader.storage, &train_set_));
  // What the run trains on, for its record: each source's content, wherever it lies.
  data_content_.push_back(train_set_.content);
  for (size_t i = 1; i < mix.sources.size(); ++i) {
    data_content_.emplace_back();
    SLUICE_RETURN_IF_ERROR(
        ReadDatasetFingerprint(mix.sources[i].dir, o_.loader.storage, &data_content_.back()));
  }
  loader::LoaderOptions& lo = train_lo_;
  SLUICE_RETURN_IF_ERROR(MakeLoaderOptions(o_, true, ranks_, &lo));
  if (const DeviceBackend* device = FindDeviceBackend(o_.device)) device->configure_loader(&lo);
  const double held_out = o_.eval_dataset.empty() ? o_.eval_fraction : 0.0;
  // Evaluation over a mixture: every source's held-out records once each (weights = their
  // counts, so the mixture's largest-remainder shares are exactly those counts).
  loader::MixOptions eval_mix;
  for (const loader::MixSource& src : mix.sources) {
    uint64_t held = 0;
    if (held_out > 0)
      SLUICE_RETURN_IF_ERROR(CheckHeldOut(src.dir, o_.loader.storage, held_out, &held));
    if (held > 0) eval_mix.sources.push_back({src.dir, static_cast<double>(held)});
    eval_mix.epoch_records += held;
  }
  SLUICE_RETURN_IF_ERROR(loader::Loader::Open(mix, lo, &loader_));
  // The loader reports audio in frames, at the dataset's frame shift (its stored features' own).
  frame_seconds_ = loader_->feature_info().frame_shift_seconds;

  if (!o_.eval_dataset.empty()) {
    SLUICE_RETURN_IF_ERROR(OpenTokenized(o_.eval_dataset, o_.loader.storage, &eval_set_));
    if (eval_set_.fingerprint != train_set_.fingerprint)
      return Status::InvalidArgument(
          eval_set_.name + ": its tokenizer differs from " + train_set_.name +
          "'s, so its token ids mean other things. HINT: shardify both with the same "
          "--tokenizer (spm:PATH with one model for BPE)");
  }
  if (!o_.eval_dataset.empty() || held_out > 0) {
    const TokenizedDataset& source = o_.eval_dataset.empty() ? train_set_ : eval_set_;
    loader::LoaderOptions elo;
    SLUICE_RETURN_IF_ERROR(MakeLoaderOptions(o_, false, ranks_, &elo));
    if (o_.eval_dataset.empty() && mix.sources.size() > 1)
      SLUICE_RETURN_IF_ERROR(loader::Loader::Open(eval_mix, elo, &eval_loader_));
    else
      SLUICE_RETURN_IF_ERROR(loader::Loader::Open(source.dir, elo, &eval_loader_));
  }
  return Status::OK();
}

// Model: vocabulary from the tokenizer (its id 0 is the CTC blank), input width from the loader.
Status Run::BuildEngine() {
  vocab_ = train_set_.tokenizer->vocab_size();
  const int dim = loader_->feature_info().dim;
  if (o_.preset != "tiny" && o_.preset != "small")
    return Status::InvalidArgument("--preset '" + o_.preset + "': expected tiny or small");
  config_ = o_.preset == "small" ? reference::ModelConfig::Small(vocab_, dim)
                                 : reference::ModelConfig::Tiny(vocab_, dim);
  config_.dropout = static_cast<float>(o_.dropout);
  if (!reference::ParseActivation(o_.activation, &config_.activation))
    return Status::InvalidArgument("--activation '" + o_.activation + "': expected gelu or swish");
  SLUICE_RETURN_IF_ERROR(config_.Validate());
  if (o_.device == "cpu") {
    engine_ = MakeCpuEngine(config_, o_.replicas, o_.weight_decay, ranks_, loader_.get());
  } else {
    const DeviceBackend* device = FindDeviceBackend(o_.device);  // RunTraining checked it
    if (device == nullptr) return Status::Unsupported("--device " + o_.device + ": not built");
    SLUICE_RETURN_IF_ERROR(
        device->make_engine(config_, o_.weight_decay, ranks_, loader_.get(), &engine_));
  }
  num_params_ = engine_->num_parameters();
  return Status::OK();
}

Status Run::InitOrResume() {
  // The loader resolved which noise and impulse responses the augmentation draws from (their
  // datasets' content, not their paths): a resume on other clips is another run.
  train_lo_.noise_content = loader_->options().noise_content;
  train_lo_.rir_content = loader_->options().rir_content;
  // Likewise the conversation template and encoder spec, by what they mean, not their paths.
  train_lo_.conversation.chat_template_content =
      loader_->options().conversation.chat_template_content;
  train_lo_.conversation.encoder_frames_content =
      loader_->options().conversation.encoder_frames_content;
  run_config_ = RunConfigJson(o_, train_lo_, loader_->feature_info().sample_rate, data_content_);
  counters_.seed = o_.seed;
  schedule_.peak_lr = o_.lr;
  schedule_.min_lr = o_.lr * o_.min_lr_ratio;
  if (!o_.resume.empty()) {
    SLUICE_RETURN_IF_ERROR(Resume(RankPath(o_.resume, ranks_.rank)));
  } else {
    SLUICE_RETURN_IF_ERROR(engine_->Init(o_.seed));
    // Without --steps the decay ends after `epochs` epochs of the first epoch's batch count.
    if (o_.steps > 0) {
      schedule_.total_steps = o_.steps;
    } else {
      // The plan alone gives the count: starting the loader here would set its pipeline reading
      // and decoding only for StartEpoch to stop it. The loop agrees on the count over ranks
      // before the first step.
      uint64_t batches = 0;
      SLUICE_RETURN_IF_ERROR(loader_->CountBatches(0, &batches));
      schedule_.total_steps = static_cast<int64_t>(o_.epochs * batches);
    }
    schedule_.warmup_steps = o_.warmup_steps >= 0
                                 ? o_.warmup_steps
                                 : std::min<int64_t>(500, schedule_.total_steps / 10);
  }
  schedule_.total_steps = std::max<int64_t>(schedule_.total_steps, 1);
  config_json_ = ConfigJson();
  return Status::OK();
}

Status Run::Resume(const std::string& path) {
  Checkpoint c;
  SLUICE_RETURN_IF_ERROR(ReadCheckpoint(path, &c));
  // The keys read below, checked before use: a file that passes its checksum but was written by
  // something else must be an error, not an exception out of nlohmann::json.
  const auto integer = [](const nlohmann::json& j, const char* key) {
    return j.is_object() && j.contains(key) && j.at(key).is_number_integer();
  };
  const nlohmann::json& conf = c.config;
  if (!integer(conf, "world") || !conf.contains("schedule") ||
      !integer(conf.at("schedule"), "total_steps") || !integer(conf.at("schedule"), "warmup_steps"))
    return Status::Corruption(path + ": its configuration lacks an integer \"world\", "
                                     "\"schedule.total_steps\" or \"schedule.warmup_steps\" "
                                     "(docs/formats/checkpoint.md)");
  // Another world size continues the epoch with the records its ranks have not taken (the
  // loader's elastic resume): the state must say which world took them. A state written before
  // it records none; the checkpoint's config does.
  const int stored_world = conf.at("world").get<int>();
  if (c.loader.world == 0) c.loader.world = stored_world;
  if (c.vocab != vocab_ || c.tokenizer_fingerprint != train_set_.fingerprint)
    return Status::InvalidArgument(
        path + ": vocabulary mismatch: the checkpoint's model has " + std::to_string(c.vocab) +
        " classes (tokenizer " + shards::ChecksumHex(c.tokenizer_fingerprint) + "), dataset " +
        data_name_ + " has " + std::to_string(vocab_) + " (tokenizer " +
        shards::ChecksumHex(train_set_.fingerprint) +
        "). HINT: resume on a dataset shardified with the same --tokenizer; a new vocabulary needs "
        "a fresh run");
  SLUICE_RETURN_IF_ERROR(CheckRunConfig(
      run_config_, c.config.value("run", nlohmann::json::object()), path, source_names_));
  if (c.params.size() != num_params_)
    return Status::Corruption(path + ": " + std::to_string(c.params.size()) + " parameters, the " +
                              o_.preset + " model has " + std::to_string(num_params_));
  if (c.adam_m.size() != num_params_ || c.adam_v.size() != num_params_)
    return Status::Corruption(path + ": optimizer state does not match the model's " +
                              std::to_string(num_params_) + " parameters");
  // The layout is the same on every device (reference ParameterLayout, fp32), so a checkpoint of
  // either device resumes on the other.
  const Status restored = engine_->Restore(c);
  if (!restored.ok()) return Prefixed(restored, path);
  counters_ = c.counters;
  state_ = c.loader;
  schedule_.total_steps = conf.at("schedule").at("total_steps").get<int64_t>();
  schedule_.warmup_steps = conf.at("schedule").at("warmup_steps").get<int64_t>();
  return Status::OK();
}

nlohmann::json Run::ConfigJson() const {
  const reference::ModelConfig& m = config_;
  return {
      {"model",
       {{"preset", o_.preset}, {"n_mels", m.n_mels}, {"d_model", m.d_model},
        {"n_heads", m.n_heads}, {"n_layers", m.n_layers}, {"d_ff", m.d_ff}, {"vocab", m.vocab},
        {"dropout", m.dropout}, {"activation", reference::ActivationName(m.activation)}}},
      {"run", run_config_},
      {"schedule",
       {{"total_steps", schedule_.total_steps}, {"warmup_steps", schedule_.warmup_steps}}},
      {"tokenizer", *train_set_.manifest.tokenizer},
      {"world", ranks_.world},
  };
}

Status Run::Save(uint64_t step, const loader::ResumeState& at) {
  Checkpoint c;
  SLUICE_RETURN_IF_ERROR(engine_->Snapshot(&c));
  if (ranks_.comm != nullptr)
    SLUICE_RETURN_IF_ERROR(CheckSameParameters(ranks_.comm, c.params.data(), num_params_,
                                               "checkpoint at step " + std::to_string(step)));
  // Every rank holds the same checkpoint; rank 0 writes it, or each rank its own with {rank}.
  const bool writes = lead_ || o_.checkpoint.find("{rank}") != std::string::npos;
  if (!writes) return Status::OK();
  c.config = config_json_;
  c.tokenizer_fingerprint = train_set_.fingerprint;
  c.vocab = vocab_;
  c.loader = at;
  c.counters = counters_;
  return WriteCheckpoint(CheckpointPath(o_.checkpoint, step, ranks_.rank), c);
}

void Run::PrintHeader() const {
  if (o_.json || !lead_) return;
  const shards::Manifest& m = train_set_.manifest;
  std::printf("sluice-train: %s: %llu records, %.2f h of audio; %s tokenizer, %d classes; "
              "%s features, %d bins\n",
              data_name_.c_str(), static_cast<unsigned long long>(m.records), m.seconds() / 3600,
              m.tokenizer->value("type", "?").c_str(), vocab_,
              loader::FeatureKindName(loader_->feature_info().kind), config_.n_mels);
  if (!o_.data.empty()) {
    std::printf("mixture (records above: the first source's):");
    for (const std::string& spec : o_.data) std::printf(" %s", storage::RedactUrl(spec).c_str());
    std::printf("; %llu records per epoch%s\n", static_cast<unsigned long long>(o_.mix_records),
                o_.mix_records ? "" : " (0: the sources' sum)");
  }
  std::printf("model %s: %zu parameters (d_model %d, %d layers, %d heads, %s) on %s; "
              "%lld steps (warm-up %lld), peak lr %g%s\n",
              o_.preset.c_str(), num_params_, config_.d_model, config_.n_layers, config_.n_heads,
              reference::ActivationName(config_.activation), engine_->Describe().c_str(),
              static_cast<long long>(schedule_.total_steps),
              static_cast<long long>(schedule_.warmup_steps), o_.lr,
              o_.resume.empty() ? ""
                                : (", resumed at step " + std::to_string(counters_.step)).c_str());
  if (!o_.resume.empty() && state_.world != ranks_.world && state_.batches > 0)
    std::printf("elastic resume: epoch %llu was at batch %llu of %d rank(s); its remaining "
                "records are split over %d\n",
                static_cast<unsigned long long>(state_.epoch),
                static_cast<unsigned long long>(state_.batches), state_.world, ranks_.world);
  if (ranks_.comm != nullptr)
    std::printf("data parallel: %d ranks, each on its partition of every epoch, gradients "
                "all-reduced over %s\n",
                ranks_.world, ranks_.comm->backend());
  std::fflush(stdout);
}

Status Run::RunEpoch(uint64_t epoch, EpochTotals* totals, bool* stop) {
  comm::Communicator* const comm = ranks_.comm;
  const int64_t last_step = o_.steps > 0 ? o_.steps : INT64_MAX;
  const loader::ResumeState at = epoch == state_.epoch ? state_ : loader::ResumeState{epoch};
  if (at.batches == 0 && at.earlier.empty()) {  // the epoch's start, at any world size
    counters_.epoch_loss_sum = 0;
    counters_.epoch_steps = 0;
  }
  if (started_ahead_ != epoch) SLUICE_RETURN_IF_ERROR(engine_->StartEpoch(at));
  started_ahead_ = UINT64_MAX;
  // Every rank must take as many steps as the others, or an all-reduce waits forever.
  if (comm != nullptr)
    SLUICE_RETURN_IF_ERROR(comm::AgreeOnBatchCount(comm, engine_->num_batches(),
                                                   ("epoch " + std::to_string(epoch)).c_str()));
  totals->start = Clock::now();
  // Steps enqueued whose outcome has not come back yet: at most a device engine's previous one
  // and the one just enqueued. A fixed ring, so that the step loop allocates nothing.
  PendingStep pending[2];
  size_t pending_first = 0, pending_count = 0;
  Clock::time_point last_end = totals->start;
  // Books an ended step: the epoch's loss and its log line; an error the device found in a
  // batch is reported with that batch.
  auto settle = [&](const StepOutcome& out) -> Status {
    if (!out.valid) return Status::OK();
    if (!out.status.ok())
      return Prefixed(out.status, data_name_ + ": epoch " + std::to_string(epoch) + " batch " +
                                      std::to_string(out.batch_index));
    if (pending_count == 0)
      return Status::IOError("sluice-train: the engine reported a step that was never taken");
    const PendingStep p = pending[pending_first];
    pending_first = (pending_first + 1) % 2;
    --pending_count;
    counters_.epoch_loss_sum += out.loss;
    ++counters_.epoch_steps;
    const double seconds = Since(last_end);
    last_end = Clock::now();
    LogStep(epoch, p, out.loss, out.grad_norm, seconds);
    return Status::OK();
  };
  auto flush = [&]() -> Status {
    StepOutcome out;
    SLUICE_RETURN_IF_ERROR(engine_->Flush(&out));
    return settle(out);
  };
  while (true) {
    if (static_cast<int64_t>(counters_.step) >= last_step) {
      *stop = true;
      return flush();
    }
    StepBatch batch;
    bool end = false;
    SLUICE_RETURN_IF_ERROR(engine_->Next(&batch, &end));
    totals->wait_seconds += batch.wait_seconds;
    if (end) {
      totals->done = true;
      return flush();
    }
    totals->unalignable.Add(batch.unalignable);
    // The step's rows over all ranks, which weigh each rank's gradient (data_parallel.h); a
    // rank with no row would still join the step, with a zero gradient.
    StepRows step_rows{batch.rows, batch.frames};
    if (comm != nullptr)
      SLUICE_RETURN_IF_ERROR(GatherStepRows(comm, batch.rows, batch.frames, &step_rows));
    if (step_rows.total_rows == 0) continue;

    const Clock::time_point compute_start = Clock::now();
    double flops = 0;
    StepOutcome finished;
    totals->lr = reference::LearningRate(schedule_, static_cast<int64_t>(counters_.step));
    const Status s = engine_->Step(step_rows.total_rows, counters_.seed, counters_.step, o_.clip,
                                   totals->lr, &flops, &finished);
    if (!s.ok())
      return Prefixed(s, data_name_ + ": epoch " + std::to_string(epoch) + " batch " +
                             std::to_string(batch.index));
    // A device engine's: enqueuing this step and waiting for the previous one to end.
    const double compute = Since(compute_start);

    const double audio = static_cast<double>(step_rows.total_frames) * frame_seconds_;
    const uint64_t utterances = static_cast<uint64_t>(step_rows.total_rows);
    ++counters_.step;
    counters_.utterances += utterances;
    counters_.audio_seconds += audio;
    ++totals->steps;
    totals->utterances += utterances;
    totals->audio_seconds += audio;
    totals->compute_seconds += compute;
    totals->flops += flops;
    if (pending_count == 2)
      return Status::IOError("sluice-train: the engine left two steps without an outcome");
    pending[(pending_first + pending_count++) % 2] = {counters_.step, batch.wait_seconds, flops,
                                                      audio, totals->lr, utterances};
    SLUICE_RETURN_IF_ERROR(settle(finished));
    if (!o_.checkpoint.empty() && o_.checkpoint_every > 0 &&
        counters_.step % static_cast<uint64_t>(o_.checkpoint_every) == 0) {
      SLUICE_RETURN_IF_ERROR(flush());  // the checkpoint's epoch loss counts every step so far
      SLUICE_RETURN_IF_ERROR(Save(counters_.step, engine_->Position()));
    }
  }
}

void Run::LogStep(uint64_t epoch, const PendingStep& p, double loss, double grad_norm,
                  double step_seconds) const {
  if (!lead_ || o_.json || o_.log_every <= 0 || p.step % o_.log_every != 0) return;
  std::printf("step %5llu/%lld  epoch %llu  loss %.4f  |g| %.3f  lr %.2e  %3zu utt  %6.1f utt/s  "
              "%.4f h/s  wait %.1f ms (%.1f%%)",
              static_cast<unsigned long long>(p.step),
              static_cast<long long>(schedule_.total_steps), static_cast<unsigned long long>(epoch),
              loss, grad_norm, p.lr, static_cast<size_t>(p.utterances), p.utterances / step_seconds,
              p.audio / 3600 / step_seconds, p.wait * 1e3, 100 * p.wait / step_seconds);
  const double peak = engine_->peak_flops();
  if (peak > 0) std::printf("  MFU %.1f%%", 100 * p.flops / (step_seconds * peak));
  std::printf("\n");
  std::fflush(stdout);
}

Status Run::EndEpoch(uint64_t epoch, const EpochTotals& totals) {
  const double train_wall = Since(totals.start);
  // The next epoch's loader starts before the evaluation, so that its first batches are read,
  // decoded and copied while the evaluation runs rather than while the first step waits for them.
  const bool steps_left = o_.steps <= 0 || static_cast<int64_t>(counters_.step) < o_.steps;
  if (totals.done && epoch + 1 < o_.epochs && steps_left) {
    SLUICE_RETURN_IF_ERROR(engine_->StartEpoch(loader::ResumeState{epoch + 1}));
    started_ahead_ = epoch + 1;
  }
  EvalResult eval;
  const Clock::time_point eval_start = Clock::now();
  if (eval_loader_ != nullptr)
    SLUICE_RETURN_IF_ERROR(Evaluate(eval_loader_.get(), engine_.get(), vocab_,
                                    *train_set_.tokenizer, static_cast<size_t>(o_.eval_examples),
                                    ranks_.comm, &eval));
  const double eval_seconds = Since(eval_start);
  // Over all ranks (collectives: every rank is here): the count, and the first named of each
  // rank in rank order, so an utterance is named whichever rank's shard held it.
  UnalignableTally tally = totals.unalignable;
  if (ranks_.comm != nullptr) SLUICE_RETURN_IF_ERROR(GatherUnalignable(ranks_.comm, &tally));
  const int64_t unalignable = static_cast<int64_t>(tally.count);
  nlohmann::json unalignable_keys = nlohmann::json::array();
  for (const Unalignable& u : tally.first) unalignable_keys.push_back(u.key);
  const double mean_loss =
      counters_.epoch_steps ? counters_.epoch_loss_sum / counters_.epoch_steps : 0.0;
  const double busy = totals.compute_seconds + totals.wait_seconds;
  nlohmann::json line = {
      {"epoch", epoch},
      {"partial", !totals.done},
      {"step", counters_.step},
      {"steps", totals.steps},
      {"loss", mean_loss},
      {"lr", totals.lr},
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
      {"unalignable", unalignable},
      {"unalignable_keys", unalignable_keys},
  };
  // Model FLOPs utilisation of this rank's device (docs/train.md, "MFU"); CUDA only.
  const double peak = engine_->peak_flops();
  if (o_.device != "cpu") line["mfu"] = busy > 0 && peak > 0 ? totals.flops / (busy * peak) : 0.0;
  // A GEMM on the slow fallback kernel costs many times a cuBLASLt one: said, never silent.
  const Engine::GemmCounts gemm = engine_->gemm_counts();
  if (gemm.fallbacks >= 0) line["gemm_fallbacks"] = gemm.fallbacks;
  if (gemm.under_aligned >= 0) line["gemm_under_aligned"] = gemm.under_aligned;
  if (lead_ && o_.json) {
    std::printf("%s\n", line.dump().c_str());
  } else if (lead_) {
    std::printf("epoch %llu%s: loss %.4f  eval loss %.4f  CER %.2f%%  WER %.2f%% (%llu utterances)"
                "  %.1f s, %.2f steps/s, data wait %.2f s (%.1f%%), eval %.1f s",
                static_cast<unsigned long long>(epoch), totals.done ? "" : " (partial)", mean_loss,
                eval.loss, 100 * eval.errors.cer(), 100 * eval.errors.wer(),
                static_cast<unsigned long long>(eval.errors.utterances), train_wall,
                line["steps_per_second"].get<double>(), totals.wait_seconds,
                100 * line["wait_fraction"].get<double>(), eval_seconds);
    if (line.contains("mfu")) std::printf(", MFU %.1f%%", 100 * line["mfu"].get<double>());
    std::printf("\n");
    for (const auto& [ref, hyp] : eval.examples)
      std::printf("  ref: %s\n  hyp: %s\n", ref.c_str(), hyp.c_str());
  }
  // Not only in --json: a silent loss of 0 is what this line exists to prevent.
  if (lead_ && unalignable > 0)
    std::fprintf(o_.json ? stderr : stdout, "epoch %llu: %s\n",
                 static_cast<unsigned long long>(epoch), tally.Message().c_str());
  std::fflush(stdout);
  if (o_.checkpoint.empty()) return Status::OK();
  // A finished epoch resumes at the next one; a run stopped by --steps where it stopped.
  const loader::ResumeState at =
      totals.done ? loader::ResumeState{epoch + 1, 0} : engine_->Position();
  if (totals.done) {
    counters_.epoch_loss_sum = 0;
    counters_.epoch_steps = 0;
  }
  return Save(counters_.step, at);
}

// The run on this rank: open the data, build the engine, start or resume, then the epochs.
Status Train(const TrainOptions& o, const Ranks& ranks) {
  if (o.device != "cpu" && o.device != "cuda" && o.device != "simt")
    return Status::InvalidArgument("--device '" + o.device + "': expected cpu, cuda or simt");
  if (o.replicas < 1) return Status::InvalidArgument("--replicas must be at least 1");
  Run run(o, ranks);
  SLUICE_RETURN_IF_ERROR(run.OpenData());
  SLUICE_RETURN_IF_ERROR(run.BuildEngine());
  SLUICE_RETURN_IF_ERROR(run.InitOrResume());
  run.PrintHeader();
  bool stop = false;
  for (uint64_t epoch = run.start().epoch; epoch < o.epochs && !stop; ++epoch) {
    EpochTotals totals;
    SLUICE_RETURN_IF_ERROR(run.RunEpoch(epoch, &totals, &stop));
    SLUICE_RETURN_IF_ERROR(run.EndEpoch(epoch, totals));
  }
  return Status::OK();
}

}  // namespace

Status RunTraining(const TrainOptions& o) {
  comm::LaunchEnv env;
  SLUICE_RETURN_IF_ERROR(comm::ReadLaunchEnv(&env));
  if (o.device != "cpu") {
    const DeviceBackend* device = FindDeviceBackend(o.device);
    if (device == nullptr && o.device == "cuda")
      return Status::Unsupported(
          "--device cuda: this sluice-train was built without the CUDA trainer (gpu/model "
          "needs nvcc and cuBLASLt at configure time). HINT: --device cpu, or reconfigure "
          "on a machine with the CUDA toolkit (meson setup -Dcuda=enabled)");
    if (device == nullptr)
      return Status::Unsupported(
          "--device " + o.device + ": this sluice-train was built without the SIMT trainer "
          "(it needs the CUDA toolkit's headers at configure time, not a GPU). HINT: "
          "--device cpu, or install the CUDA toolkit under /usr/local/cuda and reconfigure");
    // The device, its compute stream and, with several ranks, NCCL on that stream.
    std::unique_ptr<DeviceLaunch> launch;
    SLUICE_RETURN_IF_ERROR(device->open(env, &launch));
    const Status s = Train(o, launch->ranks());
    if (!s.ok() && env.world > 1) {
      // As on the CPU: the other ranks would wait in their next collective. Under mpirun MPI ends
      // the job; under torchrun or srun this rank's exit does (the launcher stops the others).
      std::fprintf(stderr, "sluice-train: rank %d of %d (%s environment): %s\n", env.rank,
                   env.world, env.launcher.c_str(), s.ToString().c_str());
      std::fflush(stderr);
      launch->Abort(1);
    }
    return s;
  }
  if (env.world == 1) return Train(o, Ranks{});
  const std::string where = "rank " + std::to_string(env.rank) + " of " +
                            std::to_string(env.world) + " (" + env.launcher + " environment)";
#ifdef SLUICE_HAVE_MPI
  // The CPU trainer's collectives run over MPI, whichever launcher set the variables: srun with
  // MPI support (PMIx) starts MPI ranks just as mpirun does.
  std::unique_ptr<comm::MpiCommunicator> comm;
  Status s = comm::MpiCommunicator::Create(&comm);
  if (!s.ok()) return Prefixed(s, where + ": starting MPI");
  if (comm->world() != env.world || comm->rank() != env.rank)
    return Status::InvalidArgument(
        where + ", but MPI sees rank " + std::to_string(comm->rank()) + " of " +
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
  return Status::Unsupported(
      where +
      ": this sluice-train was built without MPI, which data parallelism on the "
      "CPU needs. HINT: apt-get install libopenmpi-dev openmpi-bin, then reconfigure");
#endif
}

}  // namespace sluice::train
