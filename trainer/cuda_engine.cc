#include "trainer/device_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "trainer/data_parallel.h"
#include "gpu/cuda_feed_backend.h"
#include "gpu/device.h"
#include "gpu/feeder.h"
#include "comm/gradient_buckets.h"
#include "gpu/loader_source.h"
#include "gpu/model/model.h"
#include "gpu/model/optimizer.h"
#include "gpu/model/scale.h"
#include "gpu/pinned_allocator.h"
#include "reference/conv2d.h"
#include "trainer/model_flops.h"
#include "trainer/row_batch.h"
#ifdef SLUICE_HAVE_NCCL
#include "gpu/nccl_communicator.h"
#endif
#ifdef SLUICE_HAVE_MPI
#include "comm/mpi_communicator.h"
#endif

// This file is built twice (trainer/meson.build): for CUDA, and for the SIMT layer, where
// SLUICE_SIMT_DEVICE is defined and gpu/ is the CPU device backend's build (its namespace renamed
// to sluice::gpu_simt there, so both builds link into one sluice-train). Everything but the
// exported table is in an unnamed namespace, so the two builds never share a symbol.
#if SLUICE_SIMT_DEVICE
#define SLUICE_DEVICE_NAME "simt"
#else
#define SLUICE_DEVICE_NAME "cuda"
#endif

namespace sluice::train {
namespace {

// ---- The launch: device, stream, communicator -------------------------------------------------

class CudaLaunch : public DeviceLaunch {
 public:
  static Status Open(const comm::LaunchEnv& env, std::unique_ptr<DeviceLaunch>* out);
  const Ranks& ranks() const override { return ranks_; }
  void Abort(int code) override;

 private:
  struct State;
  CudaLaunch();
  std::unique_ptr<State> s_;
  Ranks ranks_;
};

struct CudaLaunch::State {
  std::unique_ptr<gpu::Stream> stream;  // destroyed last: the communicator enqueues on it
#ifdef SLUICE_HAVE_MPI
  std::unique_ptr<comm::MpiCommunicator> mpi;  // NCCL's bootstrap under mpirun
#endif
#ifdef SLUICE_HAVE_NCCL
  std::unique_ptr<gpu::NcclCommunicator> nccl;
#endif
};

CudaLaunch::CudaLaunch() : s_(std::make_unique<State>()) {}

Status CudaLaunch::Open(const comm::LaunchEnv& env, std::unique_ptr<DeviceLaunch>* out) {
#if SLUICE_SIMT_DEVICE
  // The SIMT build's collectives meet in one process (gpu/simt/nccl_host.h); the ranks of a
  // launcher are separate processes.
  if (env.world > 1)
    return Status::Unsupported(
        "--device simt with " + std::to_string(env.world) + " ranks (" + env.launcher +
        " environment): the SIMT layer runs one rank per process; its in-process collectives "
        "are for tests. HINT: run one rank, or --device cpu for data parallelism over MPI");
#endif
  int count = 0;
  const Status probe = gpu::ProbeDevices(&count);
  if (!probe.ok())
    return Status::Unsupported(
        "--device " SLUICE_DEVICE_NAME ": " + probe.message() +
        ". HINT: run on a machine with an NVIDIA GPU and its driver, or train with --device cpu");
  std::unique_ptr<CudaLaunch> l(new CudaLaunch());
  SLUICE_RETURN_IF_ERROR(gpu::SetDevice(env.local_rank % count));
  SLUICE_RETURN_IF_ERROR(gpu::Stream::Create(&l->s_->stream));
  l->ranks_ = Ranks{env.rank, env.world, env.local_rank, nullptr, l->s_->stream->handle()};
  if (env.world > 1) {
#ifdef SLUICE_HAVE_NCCL
    gpu::NcclOptions no;
    no.stream = l->s_->stream->handle();  // the lanes wait for backward's work on this stream
#ifdef SLUICE_HAVE_MPI
    // Under mpirun (no MASTER_ADDR, no NCCL_COMM_ID) the unique id travels over MPI.
    if (env.master_addr.empty() && std::getenv("NCCL_COMM_ID") == nullptr) {
      SLUICE_RETURN_IF_ERROR(comm::MpiCommunicator::Create(&l->s_->mpi));
      if (l->s_->mpi->world() != env.world)
        return Status::InvalidArgument(
            "the launcher says " + std::to_string(env.world) + " ranks, MPI sees " +
            std::to_string(l->s_->mpi->world()) +
            ". HINT: start the ranks with mpirun -np N, or set MASTER_ADDR and "
            "MASTER_PORT (torchrun, srun) for NCCL's own rendezvous");
      no.bootstrap = l->s_->mpi.get();
    }
#endif
    SLUICE_RETURN_IF_ERROR(gpu::NcclCommunicator::Create(env, no, &l->s_->nccl));
    l->ranks_.comm = l->s_->nccl.get();
#else
    return Status::Unsupported(
        "--device " SLUICE_DEVICE_NAME " with " + std::to_string(env.world) +
        " ranks: this sluice-train was built without NCCL. HINT: install NCCL "
        "(libnccl-dev) and reconfigure, or run one rank");
#endif
  }
  *out = std::move(l);
  return Status::OK();
}

void CudaLaunch::Abort(int code) {
#ifdef SLUICE_HAVE_MPI
  if (s_->mpi != nullptr) s_->mpi->Abort(code);
#endif
  (void)code;
}

void ConfigureCudaLoader(loader::LoaderOptions* lo) {
  lo->allocator = gpu::MakePinnedAllocator();
  // A whole step of slack for each copy (gpu/loader_source.h): at least 2, more when asked
  // (--consumer-batches).
  lo->consumer_batches = std::max(lo->consumer_batches, 2);
}

// The loader as the feeder's source: a batch the model takes as it is goes to the feeder as the
// loader made it (pinned memory, a true asynchronous copy); otherwise its rows are re-padded into
// a RowBatch (as the CPU trainer's shares are), from ordinary memory. What the trainer needs of
// each batch after the feeder has returned it to the loader (rows, frames) is queued in fetch
// order, which is the order the feeder hands batches out.
class TrainingSource : public gpu::BatchSource {
 public:
  struct Info {
    uint64_t index = 0;
    int64_t rows = 0, frames = 0;
    std::vector<Unalignable> unalignable;
  };

  TrainingSource(loader::Loader* loader, int vocab)
      : loader_(loader),
        vocab_(vocab),
        compacted_(std::max(1, loader->options().consumer_batches)) {}

  Status Next(gpu::HostBatch* out, bool* end) override {
    const loader::Batch* b = nullptr;
    SLUICE_RETURN_IF_ERROR(loader_->Next(&b));
    *end = b == nullptr;
    if (*end) return Status::OK();
    Info info;
    info.index = b->index();
    TrainingRows(*b, &rows_, &info.frames);
    info.rows = static_cast<int64_t>(rows_.size());
    FindUnalignable(*b, rows_, &info.unalignable);
    infos_.push_back(info);
    gpu::HostBatch& h = *out;
    h = gpu::HostBatchOf(*b);
    // The loader's batch goes as it is where the model takes it unchanged: float32 features,
    // T >= 7, tokens, and every id in [1, vocab); else RowBatch::Fill re-pads it, or fails naming
    // the record (as the CPU trainer does) instead of a device-side check naming a row.
    const bool whole =
        b->features_f32() != nullptr && b->frames() >= 7 && b->max_tokens() >= 1 && TokensValid(*b);
    if (!whole) {
      // A batch the feeder got from call n is valid until call n + holds(): a ring of holds().
      RowBatch& rb = compacted_[calls_ % compacted_.size()];
      SLUICE_RETURN_IF_ERROR(rb.Fill(*b, rows_.data(), static_cast<int>(rows_.size()), vocab_));
      const reference::ModelBatch<float> v = rb.View();
      h.rows = static_cast<size_t>(v.B);
      h.frames = v.T;
      h.dtype = loader::DType::kFloat32;
      h.features = v.features;
      h.features_bytes = static_cast<size_t>(v.B) * v.T * b->dim() * sizeof(float);
      h.lengths = v.frames;
      h.max_tokens = v.S_max;
      h.tokens = v.labels;
      h.token_lengths = v.label_lengths;
    }
    ++calls_;
    return Status::OK();
  }
  int holds() const override { return loader_->options().consumer_batches; }

  // Every row's token ids in [1, vocab) (the model's labels, docs in gpu/model/model.h).
  bool TokensValid(const loader::Batch& b) const {
    const int32_t* tokens = b.tokens();
    for (size_t r = 0; r < b.size(); ++r) {
      const int32_t L = b.token_lengths()[r];
      if (L < 0 || L > b.max_tokens()) return false;
      const int32_t* t = tokens + r * static_cast<size_t>(b.max_tokens());
      for (int32_t k = 0; k < L; ++k)
        if (t[k] < 1 || t[k] >= vocab_) return false;
    }
    return true;
  }

  void Reset() {
    infos_.clear();
    calls_ = 0;
  }
  // The oldest batch not yet popped: the one the feeder just handed out.
  Status Pop(uint64_t index, Info* out) {
    if (infos_.empty() || infos_.front().index != index)
      return Status::Corruption(
          SLUICE_DEVICE_NAME " trainer: the feeder handed out batch " + std::to_string(index) +
          ", the source expected " +
          (infos_.empty() ? std::string("none") : std::to_string(infos_.front().index)));
    *out = std::move(infos_.front());
    infos_.pop_front();
    return Status::OK();
  }

 private:
  loader::Loader* loader_;
  int vocab_;
  std::vector<RowBatch> compacted_;
  std::vector<int> rows_;
  std::deque<Info> infos_;
  uint64_t calls_ = 0;
};

using gpu::model::CudaModel;

class CudaEngine : public Engine {
 public:
  CudaEngine(const reference::ModelConfig& config, const Ranks& ranks, loader::Loader* loader)
      : config_(config), ranks_(ranks), loader_(loader), source_(loader, config.vocab) {}

  ~CudaEngine() override {
    if (slots_ != nullptr) {
      // The GPU may still be writing the last step's slot.
      for (auto& e : slot_events_)
        if (e != nullptr) (void)e->Synchronize();
      pinned_->Free(slots_, 2 * sizeof(OutcomeSlot), 64);
    }
    if (feeder_ != nullptr) {
      const Status s = feeder_->Finish();
      if (!s.ok()) std::fprintf(stderr, "sluice-train: %s\n", s.ToString().c_str());
    }
  }

  // Device, model, optimizer and the NCCL lane; before anything else is called.
  Status Setup(double weight_decay) {
    int count = 0;
    SLUICE_RETURN_IF_ERROR(gpu::ProbeDevices(&count));
    device_ = gpu::DeviceDescription(ranks_.local_rank % count);
    peak_ = PeakBf16Flops(device_);
    // A minimal model until the first epoch's plan says how large the batches are (StartEpoch).
    options_.max_batch = 1;
    options_.max_frames = 7;
    options_.max_labels = 1;
    options_.stream = ranks_.stream;
    SLUICE_RETURN_IF_ERROR(CudaModel::Create(config_, options_, &model_));
    reference::AdamWOptions ao;
    ao.weight_decay = weight_decay;
    SLUICE_RETURN_IF_ERROR(gpu::model::CudaAdamW::Create(model_->layout(), ao, &adam_));
    SLUICE_RETURN_IF_ERROR(norm_.Allocate(1));
    SLUICE_RETURN_IF_ERROR(norm_scratch_.Allocate(gpu::model::GlobalNormScratch()));
    pinned_ = gpu::MakePinnedAllocator();
    slots_ = static_cast<OutcomeSlot*>(pinned_->Allocate(2 * sizeof(OutcomeSlot), 64));
    if (slots_ == nullptr) return Status::IOError("sluice-train: no host memory for step results");
    for (auto& e : slot_events_)
      SLUICE_RETURN_IF_ERROR(gpu::Event::Create(/*timing=*/false, /*blocking=*/true, &e));
    // Collective: every rank makes its lane here, at the same point.
    if (ranks_.comm != nullptr) SLUICE_RETURN_IF_ERROR(ranks_.comm->MakeLane(&lane_));
    ResetBuckets();
    return Status::OK();
  }

  size_t num_parameters() const override { return model_->num_parameters(); }
  std::string Describe() const override { return device_; }
  double peak_flops() const override { return peak_; }

  Status Init(uint64_t seed) override { return model_->InitParameters(seed); }
  Status Restore(const Checkpoint& c) override {
    SLUICE_RETURN_IF_ERROR(model_->UploadParameters(c.params.data()));
    return adam_->Restore(c.adam_m, c.adam_v, c.adam_step, stream());
  }
  Status Snapshot(Checkpoint* c) override {
    c->params.resize(num_parameters());
    SLUICE_RETURN_IF_ERROR(model_->DownloadParameters(c->params.data()));
    c->adam_step = adam_->step();
    return adam_->Download(&c->adam_m, &c->adam_v, stream());
  }

  Status StartEpoch(const loader::ResumeState& at) override {
    // Copies from the previous epoch's (or a stopped epoch's) batches may still be in flight.
    if (feeder_ != nullptr) SLUICE_RETURN_IF_ERROR(feeder_->Finish());
    SLUICE_RETURN_IF_ERROR(loader_->Start(at));
    // Before the feeder takes batches: after a state of another world size the loader starts
    // its new plan at batch 0, and Position() needs that stretch's world and history.
    start_ = loader_->state();
    source_.Reset();
    // The model's buffers for the largest batch of the plan (labels: as many as output frames;
    // a longer transcript is an impossible alignment, and a batch that needs more grows them).
    const loader::BatchShape largest = loader_->max_batch_shape();
    const int rows = std::max<int>(1, static_cast<int>(largest.rows));
    const int frames = std::max<int>(7, static_cast<int>(largest.frames));
    SLUICE_RETURN_IF_ERROR(
        EnsureCapacity(rows, frames, std::max(1, reference::SubsampledLength(frames) + 1)));
    if (feeder_ == nullptr) {
      gpu::CudaFeedOptions co;
      co.compute_stream = stream();
      std::unique_ptr<gpu::FeedBackend> backend;
      SLUICE_RETURN_IF_ERROR(gpu::MakeCudaFeedBackend(co, &backend));
      gpu::FeederOptions fo;
      fo.capacity = gpu::CapacityForPlan(
          *loader_, static_cast<size_t>(reference::SubsampledLength(frames) + 1));
      fo.wait_history = 64;
      SLUICE_RETURN_IF_ERROR(gpu::Feeder::Create(std::move(backend), &source_, fo, &feeder_));
    } else {
      SLUICE_RETURN_IF_ERROR(feeder_->Rewind());
    }
    position_ = start_.batches;
    last_wait_ = feeder_->stats().data_wait_seconds;
    current_ = nullptr;
    return Status::OK();
  }
  uint64_t num_batches() const override { return loader_->num_batches(); }

  Status Next(StepBatch* b, bool* end) override {
    current_ = nullptr;
    SLUICE_RETURN_IF_ERROR(feeder_->Next(&current_));
    *b = StepBatch();
    // The feeder settles a step's GPU-measured wait a few steps later (and all of them at the
    // end of the epoch): each step reports what was settled since the last, the epoch the total.
    const double waited = feeder_->stats().data_wait_seconds;
    b->wait_seconds = waited - last_wait_;
    last_wait_ = waited;
    *end = current_ == nullptr;
    if (*end) return Status::OK();
    SLUICE_RETURN_IF_ERROR(source_.Pop(current_->index, &info_));
    position_ = current_->index + 1;
    b->index = current_->index;
    b->rows = info_.rows;
    b->frames = info_.frames;
    b->unalignable = std::move(info_.unalignable);
    return Status::OK();
  }
  // The loader's state (world, earlier stretches) at the batch the model last took, not at the
  // feeder's read-ahead.
  loader::ResumeState Position() const override {
    loader::ResumeState at = start_;
    at.batches = position_;
    return at;
  }

  Status Step(int64_t total_rows, uint64_t seed, uint64_t step, double clip, double lr,
              double* flops, StepOutcome* finished) override {
    comm::Communicator* comm = ranks_.comm;
    const double scale =
        comm != nullptr ? GradientScale(ranks_.world, info_.rows, total_rows) : 1.0;
    *finished = StepOutcome();
    *flops = 0;
    Status hook_status;
    // Called on the host right after the work finishing a tensor's gradient is enqueued on the
    // model's stream: the scale kernel follows it there, and the bucket's NCCL lane waits for
    // that stream's work at Submit, so the all-reduce reads the finished, scaled gradient.
    auto ready = [&](size_t offset, size_t count) {
      if (!hook_status.ok()) return;
      hook_status =
          gpu::model::Scale(model_->grads() + offset, count, static_cast<float>(scale), stream());
      if (hook_status.ok() && buckets_ != nullptr) hook_status = buckets_->MarkReady(offset, count);
    };
    if (info_.rows > 0) {
      if (current_->dtype != loader::DType::kFloat32 || current_->tokens == nullptr)
        return Status::InvalidArgument(SLUICE_DEVICE_NAME " trainer: batch " +
                                       std::to_string(current_->index) +
                                       " reached the device without float32 features and tokens");
      const int B = static_cast<int>(current_->rows), T = static_cast<int>(current_->frames);
      const int S = static_cast<int>(current_->max_tokens);
      SLUICE_RETURN_IF_ERROR(EnsureCapacity(B, T, S));
      gpu::model::CudaBatch cb;
      cb.features = static_cast<const float*>(current_->features);
      cb.frames = current_->lengths;
      cb.labels = current_->tokens;
      cb.label_lengths = current_->token_lengths;
      cb.B = B, cb.T = T, cb.S_max = S;
      reference::StepContext ctx;
      // Ranks draw different dropout masks: rank 0 keeps the seed (a 1-rank run's masks).
      ctx.seed = seed + static_cast<uint64_t>(ranks_.rank) * 0x9E3779B97F4A7C15ull;
      ctx.step = step;
      ctx.training = true;
      // Enqueued only: the host goes on to enqueue backward and the optimizer while the GPU runs
      // the forward; the loss (and a bad batch's error) is read a step later (Settle).
      SLUICE_RETURN_IF_ERROR(model_->Forward(cb, ctx, nullptr));
      *flops = TrainStepFlops(config_, B, T);
      SLUICE_RETURN_IF_ERROR(model_->ZeroGrad());
      SLUICE_RETURN_IF_ERROR(model_->Backward(ready));
    } else {
      // No row on this rank: it still joins the step's all-reduce, with zeros.
      SLUICE_RETURN_IF_ERROR(model_->ZeroGrad());
      for (const reference::ParamTensor& t : model_->layout()) ready(t.offset, t.count);
    }
    SLUICE_RETURN_IF_ERROR(hook_status);
    if (buckets_ != nullptr)
      SLUICE_RETURN_IF_ERROR(buckets_->Finish());  // the stream waits for them
    SLUICE_RETURN_IF_ERROR(gpu::model::ClipByGlobalNorm(
        model_->grads(), num_parameters(), clip, norm_.data(), norm_scratch_.data(), stream()));
    SLUICE_RETURN_IF_ERROR(adam_->Step(model_->params(), model_->grads(), lr, stream()));
    // The step's flags, loss and norm go to a pinned slot behind it on the stream; the host reads
    // them only once the NEXT step is enqueued, so the GPU does not wait for the host in between.
    InFlight now;
    now.active = true;
    now.slot = static_cast<int>(enqueued_++ % 2);
    now.batch_index = current_->index;
    now.has_rows = info_.rows > 0;
    now.frames = static_cast<int>(current_->frames);
    now.scale = scale;
    OutcomeSlot& out = slots_[now.slot];
    if (now.has_rows) SLUICE_RETURN_IF_ERROR(model_->CopyForwardAsync(out.flags, &out.loss));
    SLUICE_RETURN_IF_ERROR(norm_.DownloadAsync(&out.grad_norm, 1, stream()));
    SLUICE_RETURN_IF_ERROR(slot_events_[now.slot]->Record(stream()));
    // With ranks the loss is combined on the host (CombineLoss: a collective on this stream that
    // would wait for the step just enqueued anyway), so the step is settled at once.
    if (comm != nullptr) return Settle(now, finished);
    const InFlight previous = in_flight_;
    in_flight_ = now;
    return previous.active ? Settle(previous, finished) : Status::OK();
  }

  Status Flush(StepOutcome* finished) override {
    *finished = StepOutcome();
    if (!in_flight_.active) return Status::OK();
    in_flight_.active = false;
    return Settle(in_flight_, finished);
  }

  GemmCounts gemm_counts() const override {
    if (model_ == nullptr) return {};
    return {static_cast<int64_t>(model_->gemm_fallback_calls()),
            static_cast<int64_t>(model_->gemm_under_aligned_calls())};
  }

  Status EvaluateRows(const loader::Batch& batch, const std::vector<int>& rows,
                      const RowFn& fn) override {
    SLUICE_RETURN_IF_ERROR(
        eval_rows_.Fill(batch, rows.data(), static_cast<int>(rows.size()), config_.vocab));
    const reference::ModelBatch<float> v = eval_rows_.View();
    SLUICE_RETURN_IF_ERROR(EnsureCapacity(v.B, v.T, v.S_max));
    const size_t n_features = static_cast<size_t>(v.B) * v.T * config_.n_mels;
    SLUICE_RETURN_IF_ERROR(Upload(&eval_features_, v.features, n_features));
    SLUICE_RETURN_IF_ERROR(Upload(&eval_frames_, v.frames, static_cast<size_t>(v.B)));
    SLUICE_RETURN_IF_ERROR(Upload(&eval_labels_, v.labels, static_cast<size_t>(v.B) * v.S_max));
    SLUICE_RETURN_IF_ERROR(Upload(&eval_label_lengths_, v.label_lengths, static_cast<size_t>(v.B)));
    gpu::model::CudaBatch cb{eval_features_.data(), eval_frames_.data(), eval_labels_.data(),
                             eval_label_lengths_.data(), v.B, v.T, v.S_max};
    float mean = 0;
    SLUICE_RETURN_IF_ERROR(model_->Forward(cb, reference::StepContext{}, &mean));
    SLUICE_RETURN_IF_ERROR(model_->DownloadLosses(&losses_));
    SLUICE_RETURN_IF_ERROR(model_->DownloadLogProbs(&log_probs_));
    SLUICE_RETURN_IF_ERROR(model_->DownloadOutputLengths(&output_lengths_));
    const size_t per_row = static_cast<size_t>(model_->output_frames()) * config_.vocab;
    for (int i = 0; i < v.B; ++i)
      SLUICE_RETURN_IF_ERROR(
          fn(i, losses_[i], log_probs_.data() + i * per_row, output_lengths_[i]));
    return Status::OK();
  }

 private:
  void* stream() const { return ranks_.stream; }

  // A step's results as the GPU left them in pinned host memory (one slot per step in flight).
  struct OutcomeSlot {
    int32_t flags[2];  // CudaModel's device flags: a bad batch's utterance + 1, 0 when fine
    float loss;        // this rank's mean loss
    double grad_norm;
  };
  // A step enqueued whose slot the host has not read yet.
  struct InFlight {
    bool active = false;
    int slot = 0;
    uint64_t batch_index = 0;
    bool has_rows = false;
    int frames = 0;
    double scale = 1;  // this rank's share of the mean (data_parallel.h)
  };

  // Waits for f's slot and turns it into its outcome; with ranks, combines the loss (collective).
  Status Settle(const InFlight& f, StepOutcome* out) {
    SLUICE_RETURN_IF_ERROR(slot_events_[f.slot]->Synchronize());
    const OutcomeSlot& o = slots_[f.slot];
    out->valid = true;
    out->batch_index = f.batch_index;
    out->grad_norm = o.grad_norm;
    out->loss = 0;
    if (f.has_rows) {
      out->status = CudaModel::ForwardStatus(o.flags, f.frames, config_.vocab);
      if (!out->status.ok()) return Status::OK();
      out->loss = o.loss;
    }
    if (ranks_.comm != nullptr) return CombineLoss(ranks_.comm, f.scale, &out->loss);
    return Status::OK();
  }

  void ResetBuckets() {
    buckets_.reset();
    if (lane_ == nullptr) return;
    // 25 MiB of floats per bucket (gradient_buckets.h): full NCCL bandwidth, and the small
    // preset's 11 M parameters still make two buckets, the first reduced while backward runs.
    const size_t bucket = std::min<size_t>(num_parameters(), size_t{25} << 18);
    buckets_ = std::make_unique<comm::GradientBuckets>(model_->grads(), num_parameters(), bucket,
                                                       lane_.get());
  }

  // The model's buffers hold B rows of T frames and S labels, growing (by at least a quarter, so
  // that growth is rare) where a batch needs more: the parameters move to a new model, the
  // optimizer state (a separate object) stays.
  Status EnsureCapacity(int B, int T, int S) {
    gpu::model::CudaModelOptions o = options_;
    auto grow = [](int have, int need) {
      return need <= have ? have : std::max(need, have + have / 4);
    };
    o.max_batch = grow(o.max_batch, B);
    o.max_frames = grow(o.max_frames, T);
    o.max_labels = grow(o.max_labels, S);
    if (o.max_batch == options_.max_batch && o.max_frames == options_.max_frames &&
        o.max_labels == options_.max_labels)
      return Status::OK();
    std::vector<float> params(num_parameters());
    SLUICE_RETURN_IF_ERROR(model_->DownloadParameters(params.data()));
    model_.reset();  // frees its buffers before the larger ones are allocated
    SLUICE_RETURN_IF_ERROR(CudaModel::Create(config_, o, &model_));
    SLUICE_RETURN_IF_ERROR(model_->UploadParameters(params.data()));
    options_ = o;
    ResetBuckets();  // they point into the gradient buffer
    return Status::OK();
  }

  template <typename T>
  Status Upload(gpu::model::DeviceArray<T>* a, const T* host, size_t n) {
    if (a->size() < n) SLUICE_RETURN_IF_ERROR(a->Allocate(n));
    return a->Upload(host, n, stream());
  }

  const reference::ModelConfig config_;
  const Ranks ranks_;
  loader::Loader* const loader_;
  std::string device_;
  double peak_ = 0;
  TrainingSource source_;
  gpu::model::CudaModelOptions options_;
  std::unique_ptr<CudaModel> model_;
  std::unique_ptr<gpu::model::CudaAdamW> adam_;
  gpu::model::DeviceArray<double> norm_, norm_scratch_;
  std::shared_ptr<gpu::PinnedAllocator> pinned_;
  OutcomeSlot* slots_ = nullptr;  // [2], pinned: written by the GPU, read after slot_events_
  std::unique_ptr<gpu::Event> slot_events_[2];
  InFlight in_flight_;
  uint64_t enqueued_ = 0;
  std::unique_ptr<comm::ReduceLane> lane_;
  std::unique_ptr<comm::GradientBuckets> buckets_;
  std::unique_ptr<gpu::Feeder> feeder_;  // after the model: destroyed (and finished) first
  const gpu::DeviceBatch* current_ = nullptr;
  TrainingSource::Info info_;
  loader::ResumeState start_;  // the started epoch's state at its first batch
  uint64_t position_ = 0;
  double last_wait_ = 0;
  // Evaluation: rows compacted on the host, uploaded synchronously (no feeder).
  RowBatch eval_rows_;
  gpu::model::DeviceArray<float> eval_features_;
  gpu::model::DeviceArray<int32_t> eval_frames_, eval_labels_, eval_label_lengths_;
  std::vector<float> losses_, log_probs_;
  std::vector<int32_t> output_lengths_;
};

Status MakeCudaEngine(const reference::ModelConfig& config, double weight_decay, const Ranks& ranks,
                      loader::Loader* loader, std::unique_ptr<Engine>* out) {
  auto engine = std::make_unique<CudaEngine>(config, ranks, loader);
  SLUICE_RETURN_IF_ERROR(engine->Setup(weight_decay));
  *out = std::move(engine);
  return Status::OK();
}

// A batch like asr_torch_step.py's synthetic_batch (not the same values: the step's time does not
// depend on them): features N(0, 1), rows of `frames` or uniform in [frames/2, frames] with the
// first row the longest, label_ratio labels per encoder frame, classes in [1, vocab).
struct SyntheticBatch {
  std::vector<float> features;
  std::vector<int32_t> frames, labels, label_lengths;
  int S_max = 1;
};

SyntheticBatch MakeSyntheticBatch(const StepBenchOptions& o) {
  SyntheticBatch b;
  std::mt19937_64 rng(o.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  b.features.resize(static_cast<size_t>(o.batch) * o.frames * o.n_mels);
  for (float& f : b.features) f = normal(rng);
  std::uniform_int_distribution<int> length(std::max(7, o.frames / 2), o.frames);
  std::uniform_int_distribution<int32_t> label(1, o.vocab - 1);
  for (int r = 0; r < o.batch; ++r) {
    const int len = r == 0 || !o.uniform_lengths ? o.frames : length(rng);
    b.frames.push_back(len);
    b.label_lengths.push_back(
        std::max(1, static_cast<int>(o.label_ratio * reference::SubsampledLength(len))));
    b.S_max = std::max(b.S_max, b.label_lengths.back());
  }
  b.labels.assign(static_cast<size_t>(o.batch) * b.S_max, 0);
  for (int r = 0; r < o.batch; ++r)
    for (int k = 0; k < b.label_lengths[r]; ++k)
      b.labels[static_cast<size_t>(r) * b.S_max + k] = label(rng);
  return b;
}

// CudaEngine::Step without loader, feeder or ranks: the same calls on a batch already uploaded,
// the host waiting for each step's end (the loss, then the norm) as asr_torch_step.py does.
Status BenchStep(const StepBenchOptions& o, StepBenchResult* r) {
  if (o.preset != "tiny" && o.preset != "small")
    return Status::InvalidArgument("--preset '" + o.preset + "': expected tiny or small");
  if (o.batch < 1 || o.frames < 7 || o.steps < 1 || o.warmup_steps < 0 || o.vocab < 2 ||
      !(o.label_ratio > 0))
    return Status::InvalidArgument(
        "step bench: needs --batch >= 1, --frames >= 7 (two stride-2 convolutions), --steps >= 1, "
        "--warmup-steps >= 0, --vocab >= 2 and --label-ratio > 0");
  int count = 0;
  const Status probe = gpu::ProbeDevices(&count);
  if (!probe.ok())
    return Status::Unsupported("--device " SLUICE_DEVICE_NAME ": " + probe.message() +
                               ". HINT: run on a machine with an NVIDIA GPU and its driver");
  SLUICE_RETURN_IF_ERROR(gpu::SetDevice(0));
  std::unique_ptr<gpu::Stream> stream;
  SLUICE_RETURN_IF_ERROR(gpu::Stream::Create(&stream));
  reference::ModelConfig config = o.preset == "small"
                                      ? reference::ModelConfig::Small(o.vocab, o.n_mels)
                                      : reference::ModelConfig::Tiny(o.vocab, o.n_mels);
  config.dropout = static_cast<float>(o.dropout);
  SLUICE_RETURN_IF_ERROR(config.Validate());
  const SyntheticBatch h = MakeSyntheticBatch(o);

  gpu::model::CudaModelOptions mo;
  mo.max_batch = o.batch;
  mo.max_frames = o.frames;
  mo.max_labels = h.S_max;
  mo.stream = stream->handle();
  std::unique_ptr<CudaModel> model;
  SLUICE_RETURN_IF_ERROR(CudaModel::Create(config, mo, &model));
  SLUICE_RETURN_IF_ERROR(model->InitParameters(o.seed));
  reference::AdamWOptions ao;
  ao.weight_decay = o.weight_decay;
  std::unique_ptr<gpu::model::CudaAdamW> adam;
  SLUICE_RETURN_IF_ERROR(gpu::model::CudaAdamW::Create(model->layout(), ao, &adam));
  gpu::model::DeviceArray<double> norm, norm_scratch;
  SLUICE_RETURN_IF_ERROR(norm.Allocate(1));
  SLUICE_RETURN_IF_ERROR(norm_scratch.Allocate(gpu::model::GlobalNormScratch()));
  gpu::model::DeviceArray<float> features;
  gpu::model::DeviceArray<int32_t> frames, labels, label_lengths;
  void* st = stream->handle();
  SLUICE_RETURN_IF_ERROR(features.Allocate(h.features.size()));
  SLUICE_RETURN_IF_ERROR(features.Upload(h.features.data(), h.features.size(), st));
  for (auto [dst, src] :
       {std::pair{&frames, &h.frames}, {&labels, &h.labels}, {&label_lengths, &h.label_lengths}}) {
    SLUICE_RETURN_IF_ERROR(dst->Allocate(src->size()));
    SLUICE_RETURN_IF_ERROR(dst->Upload(src->data(), src->size(), st));
  }
  const gpu::model::CudaBatch cb{
      features.data(), frames.data(), labels.data(), label_lengths.data(),
      o.batch,         o.frames,      h.S_max};

  *r = StepBenchResult();
  r->device = gpu::DeviceDescription(0);
  r->parameters = static_cast<int64_t>(model->num_parameters());
  r->encoder_frames = reference::SubsampledLength(o.frames);
  for (int32_t f : h.frames) {
    r->frames_total += f;
    r->encoder_frames_total += reference::SubsampledLength(f);
  }
  r->step_flops = TrainStepFlops(config, o.batch, o.frames);
  r->peak_flops = PeakBf16Flops(r->device);
  SLUICE_RETURN_IF_ERROR(stream->Synchronize());  // the uploads are not part of a step
  for (int i = 0; i < o.warmup_steps + o.steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const reference::StepContext ctx{o.seed, static_cast<uint64_t>(i), true};
    SLUICE_RETURN_IF_ERROR(model->Forward(cb, ctx, nullptr));
    SLUICE_RETURN_IF_ERROR(model->ZeroGrad());
    SLUICE_RETURN_IF_ERROR(model->Backward());
    SLUICE_RETURN_IF_ERROR(gpu::model::ClipByGlobalNorm(
        model->grads(), model->num_parameters(), o.clip, norm.data(), norm_scratch.data(), st));
    SLUICE_RETURN_IF_ERROR(adam->Step(model->params(), model->grads(), o.lr, st));
    float loss = 0;
    SLUICE_RETURN_IF_ERROR(model->ReadForward(&loss));
    double grad_norm = 0;
    SLUICE_RETURN_IF_ERROR(norm.Download(&grad_norm, 1, st));  // synchronises the stream
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i >= o.warmup_steps) r->step_seconds.push_back(dt);
    if (i == 0) r->first_loss = loss;
    r->last_loss = loss;
  }
  r->gemm_fallbacks = static_cast<int64_t>(model->gemm_fallback_calls());
  r->gemm_under_aligned = static_cast<int64_t>(model->gemm_under_aligned_calls());
  return Status::OK();
}

constexpr DeviceBackend kBackend{SLUICE_DEVICE_NAME, &CudaLaunch::Open, &ConfigureCudaLoader,
                                 &MakeCudaEngine, &BenchStep};

}  // namespace

#if SLUICE_SIMT_DEVICE
const DeviceBackend* SimtBackend() { return &kBackend; }
#else
const DeviceBackend* CudaBackend() { return &kBackend; }
#endif

}  // namespace sluice::train
