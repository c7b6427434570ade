// Data parallelism of the CUDA model on the SIMT layer: N ranks as threads of this
// process, each on its own simulated device with its own stream, CudaModel, CudaAdamW and
// NcclCommunicator over the in-process NCCL, end a few training steps with the same parameters as
// one rank that trained on the whole batch. Each rank's step is trainer/cuda_engine.cc's
// CudaEngine::Step: Forward, ZeroGrad, Backward whose ready hook scales each finished tensor by
// train::GradientScale (rows * world / total_rows) and marks it ready in comm::GradientBuckets
// over the communicator's lane (the all-reduce average overlapping backward), Finish, clip,
// AdamW, train::CombineLoss.
//
// What must hold, and why (dropout off: ranks draw different masks by design, cuda_engine.cc):
// - Every rank ends each step with the same gradient, norm, loss and parameters, bit for bit: the
//   in-process NCCL reduces in rank order, so all ranks receive the same bits, and clip and AdamW
//   are deterministic functions of them.
// - Against one rank on the whole batch: each utterance's forward and backward are the same
//   computation in both runs (rows are independent: per-row kernels, GEMMs summing over k in the
//   same order whatever the number of rows, attention and CTC per utterance, padding masked; the
//   features' padding here is garbage that differs between the packings, to show it). What
//   differs: (a) the CTC gradient is scaled by 1/B_rank instead of 1/B_total before it is rounded
//   to bf16, and by GradientScale after the backward, in fp32. For equal shares the two scales are
//   a power of two apart and the bf16 bits the same up to that factor; for unequal ones the
//   roundings differ (2^-9 relative at most per element). (b) The weight and bias gradients are
//   sums over a rank's rows, then averaged, instead of one sum over all rows: the same terms,
//   associated differently. (c) A batch padded to another T: reductions over another length.
//   (b) and (c) are fp32 rounding. So the step-1 gradient agrees to fp32 accumulation error for
//   equal shares and to bf16 rounding otherwise, where a sum instead of an average, a missing
//   all-reduce or a missing weighting are O(1) errors (the last test).
// - From step 2 on the parameters differ a little, and bf16 rounding and conv2's ReLU mask turn
//   that into gradient differences at bf16 level. AdamW's first update is lr * g / (|g| + eps),
//   the sign of g, which makes a whole update of an element whose gradient is itself at rounding
//   level (the key bias, IsKeyBias). Parameters are compared per tensor as the relative L2 error
//   of their change from the initial values. AdamW and clipping are blind to the gradient's scale
//   (m / sqrt(v)), so only the gradient, norm and loss can see a sum instead of an average.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "assert_ok.h"
#include "comm/gradient_buckets.h"
#include "comm/launch_env.h"
#include "gpu/device.h"
#include "gpu/model/device_array.h"
#include "gpu/model/model.h"
#include "gpu/model/optimizer.h"
#include "gpu/model/scale.h"
#include "gpu/nccl_communicator.h"
#include "reference/conv2d.h"
#include "reference/model.h"
#include "trainer/data_parallel.h"

namespace sluice::gpu::model {
namespace {

constexpr int kVocab = 11;
constexpr int kMels = 20;
constexpr int kSteps = 3;
constexpr uint64_t kInitSeed = 5;
constexpr double kLr = 3e-3;
constexpr double kClip = 1.0;

reference::ModelConfig Config() {
  reference::ModelConfig c = reference::ModelConfig::Tiny(kVocab, kMels);
  c.dropout = 0;  // ranks draw different dropout masks (cuda_engine.cc); the sums agree without
  return c;
}

// One utterance: frames x kMels features and its labels (ids in [1, vocab), no two equal
// neighbours, at most T' - 1 of them: every alignment is possible).
struct Utterance {
  int frames = 0;
  std::vector<float> features;
  std::vector<int32_t> labels;
};

// Eight utterances, lengths varied so that halves of four share T = 61 and other splits do not.
std::vector<Utterance> MakeUtterances() {
  const std::vector<int> frames = {47, 23, 35, 61, 11, 61, 17, 52};
  std::mt19937 rng(2024);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<Utterance> out(frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    Utterance& ut = out[i];
    ut.frames = frames[i];
    ut.features.resize(static_cast<size_t>(ut.frames) * kMels);
    for (float& x : ut.features) x = u(rng);
    const int t2 = reference::SubsampledLength(ut.frames);
    const int n = 1 + static_cast<int>(rng() % static_cast<uint32_t>(std::min(6, t2 - 1)));
    int32_t prev = 0;
    for (int k = 0; k < n; ++k) {
      int32_t id = 0;
      do id = 1 + static_cast<int32_t>(rng() % (kVocab - 1));
      while (id == prev);
      ut.labels.push_back(id);
      prev = id;
    }
  }
  return out;
}

// utterances [first, first + count) padded into one batch as the loader pads a batch: T and S_max
// the largest of these rows. Padding frames hold garbage that depends on the packing (the model
// must ignore them), padding labels 0.
struct HostBatch {
  int B = 0, T = 0, S = 0;
  std::vector<float> features;
  std::vector<int32_t> frames, labels, label_lengths;
};

HostBatch Pack(const std::vector<Utterance>& all, int first, int count) {
  HostBatch h;
  h.B = count;
  for (int i = first; i < first + count; ++i) {
    h.T = std::max(h.T, all[i].frames);
    h.S = std::max(h.S, static_cast<int>(all[i].labels.size()));
  }
  h.features.assign(static_cast<size_t>(h.B) * h.T * kMels, 0);
  h.labels.assign(static_cast<size_t>(h.B) * h.S, 0);
  for (int b = 0; b < count; ++b) {
    const Utterance& ut = all[first + b];
    float* f = h.features.data() + static_cast<size_t>(b) * h.T * kMels;
    std::copy(ut.features.begin(), ut.features.end(), f);
    for (size_t j = ut.features.size(); j < static_cast<size_t>(h.T) * kMels; ++j) {
      f[j] = 3.0f + 0.25f * static_cast<float>((first + count + j) % 7);
    }
    h.frames.push_back(ut.frames);
    h.label_lengths.push_back(static_cast<int32_t>(ut.labels.size()));
    std::copy(ut.labels.begin(), ut.labels.end(), h.labels.begin() + b * h.S);
  }
  return h;
}

// The batch on the device (current device and stream), alive as long as the model reads it.
struct DeviceBatch {
  DeviceArray<float> features;
  DeviceArray<int32_t> frames, labels, label_lengths;
  CudaBatch view;
};

Status Upload(const HostBatch& h, void* stream, DeviceBatch* d) {
  SLUICE_RETURN_IF_ERROR(d->features.Allocate(h.features.size()));
  SLUICE_RETURN_IF_ERROR(d->frames.Allocate(h.frames.size()));
  SLUICE_RETURN_IF_ERROR(d->labels.Allocate(h.labels.size()));
  SLUICE_RETURN_IF_ERROR(d->label_lengths.Allocate(h.label_lengths.size()));
  SLUICE_RETURN_IF_ERROR(d->features.Upload(h.features.data(), h.features.size(), stream));
  SLUICE_RETURN_IF_ERROR(d->frames.Upload(h.frames.data(), h.frames.size(), stream));
  SLUICE_RETURN_IF_ERROR(d->labels.Upload(h.labels.data(), h.labels.size(), stream));
  SLUICE_RETURN_IF_ERROR(
      d->label_lengths.Upload(h.label_lengths.data(), h.label_lengths.size(), stream));
  d->view.features = d->features.data();
  d->view.frames = d->frames.data();
  d->view.labels = d->labels.data();
  d->view.label_lengths = d->label_lengths.data();
  d->view.B = h.B;
  d->view.T = h.T;
  d->view.S_max = h.S;
  return Status::OK();
}

// What a rank saw in one step: the averaged gradient before clipping, the global norm, the loss
// over all ranks' rows.
struct StepRecord {
  std::vector<float> grads;
  double norm = 0;
  double loss = 0;
};
struct RankResult {
  std::vector<StepRecord> steps;
  std::vector<float> params;
};

// The engine's step, or one of three mistakes the comparison must catch (the negative test).
enum class Variant {
  kEngine,
  kNoAllReduce,  // each rank steps on its own share's gradient
  kSum,          // the ranks' gradients summed, not averaged
  kUnweighted,   // averaged without GradientScale: the mean of the ranks' means
};

// One rank's training on `h` for kSteps steps, CudaEngine::Step's sequence. comm == nullptr: one
// rank (no buckets; the engine's scale of 1 is a no-op, still called as the engine calls it).
// `bucket` elements per GradientBuckets bucket.

Status Train(const HostBatch& h, int64_t total_rows, int rank, int world, comm::Communicator* comm,
             comm::ReduceLane* lane, size_t bucket, void* stream, RankResult* out,
             Variant variant = Variant::kEngine) {
  const reference::ModelConfig config = Config();
  CudaModelOptions mo;  // no rows: the engine's minimal model from Setup
  mo.max_batch = std::max(1, h.B);
  mo.max_frames = std::max(7, h.T);
  mo.max_labels = std::max(1, h.S);
  mo.stream = stream;
  std::unique_ptr<CudaModel> model;
  SLUICE_RETURN_IF_ERROR(CudaModel::Create(config, mo, &model));
  SLUICE_RETURN_IF_ERROR(model->InitParameters(kInitSeed));
  std::unique_ptr<CudaAdamW> adam;
  SLUICE_RETURN_IF_ERROR(CudaAdamW::Create(model->layout(), reference::AdamWOptions(), &adam));
  DeviceArray<double> norm, scratch;
  SLUICE_RETURN_IF_ERROR(norm.Allocate(1));
  SLUICE_RETURN_IF_ERROR(scratch.Allocate(GlobalNormScratch()));
  DeviceBatch batch;
  if (h.B > 0) SLUICE_RETURN_IF_ERROR(Upload(h, stream, &batch));
  const size_t n = model->num_parameters();
  std::unique_ptr<comm::GradientBuckets> buckets;
  if (lane != nullptr && variant != Variant::kNoAllReduce)
    buckets = std::make_unique<comm::GradientBuckets>(model->grads(), n, bucket, lane);

  double scale = comm != nullptr ? train::GradientScale(world, h.B, total_rows) : 1.0;
  if (variant == Variant::kSum) scale *= world;
  if (variant == Variant::kUnweighted) scale = 1;
  for (int step = 0; step < kSteps; ++step) {
    Status hook_status;
    auto ready = [&](size_t offset, size_t count) {
      if (!hook_status.ok()) return;
      hook_status = Scale(model->grads() + offset, count, static_cast<float>(scale), stream);
      if (hook_status.ok() && buckets != nullptr) hook_status = buckets->MarkReady(offset, count);
    };
    reference::StepContext ctx;
    ctx.seed = 77 + static_cast<uint64_t>(rank) * 0x9E3779B97F4A7C15ull;
    ctx.step = static_cast<uint64_t>(step);
    ctx.training = true;
    float mean = 0;
    if (h.B > 0) {
      SLUICE_RETURN_IF_ERROR(model->Forward(batch.view, ctx, &mean));
      SLUICE_RETURN_IF_ERROR(model->ZeroGrad());
      SLUICE_RETURN_IF_ERROR(model->Backward(ready));
    } else {
      // No row on this rank: it still joins the step's all-reduce, with zeros.
      SLUICE_RETURN_IF_ERROR(model->ZeroGrad());
      for (const reference::ParamTensor& t : model->layout()) ready(t.offset, t.count);
    }
    SLUICE_RETURN_IF_ERROR(hook_status);
    if (buckets != nullptr) SLUICE_RETURN_IF_ERROR(buckets->Finish());
    StepRecord rec;
    rec.grads.resize(n);
    SLUICE_RETURN_IF_ERROR(model->DownloadGrads(rec.grads.data()));  // after Finish: averaged
    SLUICE_RETURN_IF_ERROR(
        ClipByGlobalNorm(model->grads(), n, kClip, norm.data(), scratch.data(), stream));
    SLUICE_RETURN_IF_ERROR(adam->Step(model->params(), model->grads(), kLr, stream));
    rec.loss = mean;
    if (comm != nullptr) SLUICE_RETURN_IF_ERROR(train::CombineLoss(comm, scale, &rec.loss));
    SLUICE_RETURN_IF_ERROR(norm.Download(&rec.norm, 1, stream));
    out->steps.push_back(std::move(rec));
  }
  out->params.resize(n);
  return model->DownloadParameters(out->params.data());
}

// ||got - want|| / ||want - base|| over [offset, offset + count); base nullptr: zeros.
double RelL2(const std::vector<float>& got, const std::vector<float>& want, size_t offset,
             size_t count, const std::vector<float>* base = nullptr) {
  double e2 = 0, r2 = 0;
  for (size_t i = offset; i < offset + count; ++i) {
    const double b = base != nullptr ? (*base)[i] : 0.0;
    const double e = static_cast<double>(got[i]) - want[i];
    e2 += e * e;
    r2 += (want[i] - b) * (want[i] - b);
  }
  return r2 == 0 ? (e2 == 0 ? 0 : INFINITY) : std::sqrt(e2 / r2);
}

double RelDiff(double got, double want) { return std::abs(got - want) / std::abs(want); }

// How far a rank's run is from the one-rank run: the worst tensor of each measure.
struct Distance {
  double grad_step0 = 0;  // relative L2 of the gradient (averaged, before clipping), step 1
  double grad = 0;        // the same over every step, all but the convolutions
  double grad_conv = 0;   // the convolutions' (behind conv2's ReLU), every step
  double norm = 0;        // relative, every step
  double loss_step0 = 0;  // relative, step 1
  double loss = 0;        // relative, every step
  double param = 0;       // relative L2 of the change from the initial values, at the end
  std::string grad_tensor, param_tensor;
};

// The key bias's elements: columns [C, 2C) of a qkv.bias (reference/attention.h). Its gradient is
// zero in exact arithmetic (softmax ignores a shift of a query's scores by q.b_k) and only
// rounding here (|g| ~ 1e-5, the query and value biases' ~ 0.5), so AdamW's first step, the sign
// of g, moves each element by a whole lr either way: measured 0.7 lr apart for equal shares, 5 lr
// for unequal ones after three steps, in elements that do not change the loss. Left out of the
// parameter measure; still compared bit for bit between ranks.
bool IsKeyBias(const reference::ParamTensor& t, size_t i) {
  if (!t.name.ends_with("attn.qkv.bias")) return false;
  const size_t c = t.count / 3;
  return i >= t.offset + c && i < t.offset + 2 * c;
}

// The convolutions' gradients sit behind conv2's ReLU, whose mask the bf16 conv2 GEMM flips at
// outputs within rounding of 0: once the parameters differ (step 2 on), each flip moves these
// gradients by a whole term (model_test.cc: 2-9% relative L2 from flips alone on its shape).
bool BehindRelu(const reference::ParamTensor& t) { return t.name.starts_with("subsampling.conv"); }

Distance Measure(const RankResult& got, const RankResult& want, const std::vector<float>& init,
                 const std::vector<reference::ParamTensor>& layout) {
  Distance d;
  for (size_t step = 0; step < want.steps.size(); ++step) {
    const StepRecord& g = got.steps[step];
    const StepRecord& w = want.steps[step];
    for (const reference::ParamTensor& t : layout) {
      const double e = RelL2(g.grads, w.grads, t.offset, t.count);
      if (step == 0) d.grad_step0 = std::max(d.grad_step0, e);
      if (BehindRelu(t)) {
        d.grad_conv = std::max(d.grad_conv, e);
      } else if (e > d.grad) {
        d.grad = e;
        d.grad_tensor = t.name + " step " + std::to_string(step + 1);
      }
    }
    d.norm = std::max(d.norm, RelDiff(g.norm, w.norm));
    if (step == 0) d.loss_step0 = RelDiff(g.loss, w.loss);
    d.loss = std::max(d.loss, RelDiff(g.loss, w.loss));
  }
  std::vector<float> p = got.params;
  for (const reference::ParamTensor& t : layout) {
    for (size_t i = t.offset; i < t.offset + t.count; ++i) {
      if (IsKeyBias(t, i)) p[i] = want.params[i];  // no error, no weight: only the rest count
    }
  }
  for (const reference::ParamTensor& t : layout) {
    double e2 = 0, r2 = 0;
    for (size_t i = t.offset; i < t.offset + t.count; ++i) {
      if (IsKeyBias(t, i)) continue;
      const double e = static_cast<double>(p[i]) - want.params[i];
      const double c = static_cast<double>(want.params[i]) - init[i];
      e2 += e * e;
      r2 += c * c;
    }
    const double e = r2 == 0 ? (e2 == 0 ? 0 : INFINITY) : std::sqrt(e2 / r2);
    if (e > d.param) d.param = e, d.param_tensor = t.name;
  }
  return d;
}

// The tolerances. "Measured" is the worst over the four splits below (the same in forward and
// reverse thread order: every run here is deterministic), "wrong" the smallest of the wrong
// variants that the measure is asserted to catch (WrongReductionsExceedTheTolerances).
// Equal shares, step 1: only fp32 association differs. Measured 1.2e-7.
constexpr double kGradStep0EqualShares = 1e-6;
// Any shares, any step, per tensor: bf16 rounding of the output gradient (2^-9 relative at most,
// RMS 2^-9/sqrt(3) = 1.1e-3) compounding in quadrature through the ~15 bf16 GEMM operands
// between the loss and the first convolution (~4e-3; measured at step 1: 4.0e-3), and from step 2
// on the parameters' differences. Measured 1.3e-2 (subsampling.out.weight, step 3); wrong 0.41.
constexpr double kGrad = 3e-2;
// The convolutions from step 2 on, also moved by ReLU mask flips (BehindRelu). Measured 7.2e-2;
// wrong 0.51.
constexpr double kGradConv = 0.2;
// The global norm before clipping, every step. Measured 1.7e-3; wrong 5e-2.
constexpr double kNorm = 1e-2;
// Step 1's mean loss over all rows (CombineLoss): the same per-utterance losses, a mean in another
// order, in fp32 then double. Measured 5.4e-8; wrong (unweighted) 5.1e-3.
constexpr double kLossStep0 = 1e-6;
// Any step. Measured 2.6e-4; wrong 1.7e-2.
constexpr double kLoss = 1e-3;
// The parameters' change after kSteps steps, per tensor, key biases left out. Measured 7.8e-2
// (subsampling.conv1.weight, unequal shares; 7.3e-4 for equal halves); wrong 0.83.
constexpr double kParam = 0.2;

void Print(const char* what, const std::vector<int>& rows, double seconds, const Distance& d) {
  std::string split;
  for (int r : rows) split += (split.empty() ? "" : "+") + std::to_string(r);
  std::printf(
      "%s, %zu ranks (%s rows): %.2f s; gradient step 1 %.2g, any step %.2g (%s), "
      "convolutions %.2g; norm %.2g; loss step 1 %.2g, any %.2g; parameter change %.2g "
      "(%s)\n",
      what, rows.size(), split.c_str(), seconds, d.grad_step0, d.grad, d.grad_tensor.c_str(),
      d.grad_conv, d.norm, d.loss_step0, d.loss, d.param, d.param_tensor.c_str());
}

class DataParallelSimt : public ::testing::Test {
 protected:
  // NCCL's bootstrap through NCCL_COMM_ID, set before any rank thread starts (every rank thread
  // derives the same id from it, gpu/simt/nccl_host.h). The one-rank run on the whole batch, once
  // for every test.
  static void SetUpTestSuite() {
    setenv("NCCL_COMM_ID", "127.0.0.1:29513", 1);
    utterances_ = new std::vector<Utterance>(MakeUtterances());
    whole_ = new RankResult();
    init_ = new std::vector<float>();
    layout_ = new std::vector<reference::ParamTensor>();
    const auto t0 = std::chrono::steady_clock::now();
    whole_status_ = new Status([] {
      const HostBatch h = Pack(*utterances_, 0, static_cast<int>(utterances_->size()));
      SLUICE_RETURN_IF_ERROR(SetDevice(0));
      std::unique_ptr<Stream> stream;
      SLUICE_RETURN_IF_ERROR(Stream::Create(&stream));
      SLUICE_RETURN_IF_ERROR(Train(h, h.B, 0, 1, nullptr, nullptr, 0, stream->handle(), whole_));
      // The initial parameters, to measure the change training made, and the layout.
      CudaModelOptions mo;
      mo.max_batch = 1;
      mo.max_frames = 7;
      mo.max_labels = 1;
      std::unique_ptr<CudaModel> m;
      SLUICE_RETURN_IF_ERROR(CudaModel::Create(Config(), mo, &m));
      SLUICE_RETURN_IF_ERROR(m->InitParameters(kInitSeed));
      init_->resize(m->num_parameters());
      *layout_ = m->layout();
      return m->DownloadParameters(init_->data());
    }());
    std::printf("1 rank, %zu rows: %.2f s\n", utterances_->size(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  static void TearDownTestSuite() {
    unsetenv("NCCL_COMM_ID");
    delete utterances_;
    delete whole_;
    delete whole_status_;
    delete init_;
    delete layout_;
  }

  // Runs rows.size() ranks on consecutive shares of the utterances (rank r gets rows[r]), each a
  // thread on device first_device + r (a device per rank, as CudaLaunch::Open picks LOCAL_RANK's),
  // with its own stream carrying the model and the collectives. *distance: rank 0's from the
  // one-rank run. `bucket` 0: the engine's size (ResetBuckets: one bucket for this model).
  void RunRanks(const std::vector<int>& rows, int first_device, size_t bucket, Variant variant,
                std::vector<RankResult>* results, Distance* distance) {
    ASSERT_OK(*whole_status_);
    const int world = static_cast<int>(rows.size());
    ASSERT_EQ(std::accumulate(rows.begin(), rows.end(), 0), static_cast<int>(utterances_->size()));
    if (bucket == 0) bucket = std::min<size_t>(init_->size(), size_t{25} << 18);
    results->assign(world, RankResult());
    std::vector<Status> status(world);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    int first = 0;
    for (int r = 0; r < world; ++r) {
      threads.emplace_back([&, r, first] {
        status[r] = [&]() -> Status {
          comm::LaunchEnv env;
          env.rank = r;
          env.world = world;
          env.local_rank = first_device + r;
          SLUICE_RETURN_IF_ERROR(SetDevice(env.local_rank));
          std::unique_ptr<Stream> stream;  // destroyed last: the communicator enqueues on it
          SLUICE_RETURN_IF_ERROR(Stream::Create(&stream));
          NcclOptions no;
          no.stream = stream->handle();  // as CudaLaunch::Open: the compute stream
          std::unique_ptr<NcclCommunicator> comm;
          SLUICE_RETURN_IF_ERROR(NcclCommunicator::Create(env, no, &comm));
          std::unique_ptr<comm::ReduceLane> lane;
          SLUICE_RETURN_IF_ERROR(comm->MakeLane(&lane));
          const HostBatch h = Pack(*utterances_, first, rows[r]);
          return Train(h, static_cast<int64_t>(utterances_->size()), r, world, comm.get(),
                       lane.get(), bucket, stream->handle(), &(*results)[r], variant);
        }();
      });
      first += rows[r];
    }
    for (std::thread& t : threads) t.join();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (int r = 0; r < world; ++r) ASSERT_OK(status[r]) << "rank " << r;
    *distance = Measure((*results)[0], *whole_, *init_, *layout_);
    static const char* const kNames[] = {"engine", "no all-reduce", "sum", "unweighted"};
    Print(kNames[static_cast<int>(variant)], rows, seconds, *distance);
  }

  // The engine's step on these shares: every rank the same bits, and the one-rank run's values
  // within the tolerances.
  void ExpectSameAsOneRank(const std::vector<int>& rows, int first_device, size_t bucket) {
    std::vector<RankResult> results;
    Distance d;
    ASSERT_NO_FATAL_FAILURE(RunRanks(rows, first_device, bucket, Variant::kEngine, &results, &d));
    for (size_t r = 1; r < results.size(); ++r) {
      for (int step = 0; step < kSteps; ++step) {
        const StepRecord& a = results[r].steps[step];
        const StepRecord& b = results[0].steps[step];
        EXPECT_TRUE(a.grads == b.grads) << "rank " << r << ", step " << step + 1;
        EXPECT_EQ(a.norm, b.norm) << "rank " << r << ", step " << step + 1;
        EXPECT_EQ(a.loss, b.loss) << "rank " << r << ", step " << step + 1;
      }
      EXPECT_TRUE(results[r].params == results[0].params) << "rank " << r;
    }
    const bool equal = std::all_of(rows.begin(), rows.end(), [&](int n) { return n == rows[0]; });
    if (equal) {
      EXPECT_LE(d.grad_step0, kGradStep0EqualShares);
    }
    EXPECT_LE(d.grad_conv, kGradConv);
    EXPECT_LE(d.grad, kGrad) << d.grad_tensor;
    EXPECT_LE(d.norm, kNorm);
    EXPECT_LE(d.loss_step0, kLossStep0);
    EXPECT_LE(d.loss, kLoss);
    EXPECT_LE(d.param, kParam) << d.param_tensor;
  }

  static std::vector<Utterance>* utterances_;
  static RankResult* whole_;
  static Status* whole_status_;
  static std::vector<float>* init_;
  static std::vector<reference::ParamTensor>* layout_;
};
std::vector<Utterance>* DataParallelSimt::utterances_ = nullptr;
RankResult* DataParallelSimt::whole_ = nullptr;
Status* DataParallelSimt::whole_status_ = nullptr;
std::vector<float>* DataParallelSimt::init_ = nullptr;
std::vector<reference::ParamTensor>* DataParallelSimt::layout_ = nullptr;

// Both halves padded to T = 61, buckets of 4096 elements (a dozen, most reduced while backward
// runs).
TEST_F(DataParallelSimt, TwoRanksOnEqualHalvesMatchOneRankOnTheWholeBatch) {
  ExpectSameAsOneRank({4, 4}, 0, 4096);
}

// 3 and 5 rows, T = 47 and 61: GradientScale weights the ranks 0.75 and 1.25.
TEST_F(DataParallelSimt, TwoRanksOnUnequalSharesAreWeightedByRows) {
  ExpectSameAsOneRank({3, 5}, 2, 4096);
}

// Three ranks with the engine's bucket size (one bucket for this model, reduced after backward),
// and four ranks of two rows padded to four different T.
TEST_F(DataParallelSimt, ThreeAndFourRanksMatchOneRank) {
  ExpectSameAsOneRank({3, 3, 2}, 4, 0);
  ExpectSameAsOneRank({2, 2, 2, 2}, 7, 4096);
}

// A rank without rows (the engine's zeros, weight 0) and one with all eight (weight 2): the
// average is (0 + 2g) / 2, exactly g, and that rank's forward and backward are the one-rank run's
// computation, so every value must be the one-rank run's bits.
TEST_F(DataParallelSimt, ARankWithoutRowsJoinsWithZerosAndChangesNothing) {
  std::vector<RankResult> results;
  Distance d;
  ASSERT_NO_FATAL_FAILURE(RunRanks({0, 8}, 11, 4096, Variant::kEngine, &results, &d));
  for (int r = 0; r < 2; ++r) {
    for (int step = 0; step < kSteps; ++step) {
      const StepRecord& a = results[r].steps[step];
      const StepRecord& b = whole_->steps[step];
      EXPECT_TRUE(a.grads == b.grads) << "rank " << r << ", step " << step + 1;
      EXPECT_EQ(a.norm, b.norm) << "rank " << r << ", step " << step + 1;
      EXPECT_EQ(a.loss, b.loss) << "rank " << r << ", step " << step + 1;
    }
    EXPECT_TRUE(results[r].params == whole_->params) << "rank " << r;
  }
}

// The tolerances mean something: each of three mistakes exceeds them. A sum instead of an
// average is caught by the gradient, norm and loss only: clipping to a norm the gradient exceeds
// and AdamW's m / sqrt(v) both cancel a gradient's scale, so its parameters come out as the
// engine's (asserted, so that nobody relies on the parameters alone).
TEST_F(DataParallelSimt, WrongReductionsExceedTheTolerances) {
  std::vector<RankResult> results;
  Distance d;
  auto expect_caught = [&](bool loss_step0, bool param) {
    EXPECT_GT(d.grad, kGrad);
    EXPECT_GT(d.grad_conv, kGradConv);
    EXPECT_GT(d.norm, kNorm);
    if (loss_step0) {
      EXPECT_GT(d.loss_step0, kLossStep0);
    }
    EXPECT_GT(d.loss, kLoss);
    if (param) {
      EXPECT_GT(d.param, kParam);
    }
  };
  {
    SCOPED_TRACE("no all-reduce");
    ASSERT_NO_FATAL_FAILURE(RunRanks({4, 4}, 13, 4096, Variant::kNoAllReduce, &results, &d));
    // Step 1's loss is still CombineLoss's, right.
    expect_caught(/*loss_step0=*/false, /*param=*/true);
    EXPECT_FALSE(results[0].params == results[1].params);
  }
  {
    SCOPED_TRACE("sum");
    ASSERT_NO_FATAL_FAILURE(RunRanks({4, 4}, 13, 4096, Variant::kSum, &results, &d));
    expect_caught(/*loss_step0=*/true, /*param=*/false);
    EXPECT_LE(d.param, kParam);
  }
  {
    SCOPED_TRACE("unweighted");
    ASSERT_NO_FATAL_FAILURE(RunRanks({3, 5}, 13, 4096, Variant::kUnweighted, &results, &d));
    expect_caught(/*loss_step0=*/true, /*param=*/true);
  }
}

}  // namespace
}  // namespace sluice::gpu::model
