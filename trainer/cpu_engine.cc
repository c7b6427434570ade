#include "trainer/cpu_engine.h"

#include <algorithm>
#include <chrono>

#include "trainer/data_parallel.h"
#include "reference/optimizer.h"
#include "trainer/replicas.h"

namespace sluice::train {
namespace {

using Clock = std::chrono::steady_clock;

class CpuEngine : public Engine {
 public:
  CpuEngine(const reference::ModelConfig& config, int threads, double weight_decay,
            const Ranks& ranks, loader::Loader* loader)
      : replicas_(config, threads, ranks.rank * threads),
        adam_(replicas_.master().layout(), AdamOptions(weight_decay)),
        comm_(ranks.comm),
        loader_(loader),
        P_(replicas_.master().num_parameters()) {}

  size_t num_parameters() const override { return P_; }
  std::string Describe() const override {
    return "cpu, " + std::to_string(replicas_.count()) + " replica thread" +
           (replicas_.count() == 1 ? "" : "s");
  }

  Status Init(uint64_t seed) override {
    model().InitParameters(seed);
    return Status::OK();
  }
  Status Restore(const Checkpoint& c) override {
    std::copy(c.params.begin(), c.params.end(), model().params());
    if (!adam_.Restore(c.adam_m, c.adam_v, c.adam_step))
      return Status::Corruption("optimizer state does not match the model's " +
                                std::to_string(num_parameters()) + " parameters");
    return Status::OK();
  }
  Status Snapshot(Checkpoint* c) override {
    c->params.assign(model().params(), model().params() + num_parameters());
    c->adam_step = adam_.step();
    c->adam_m = adam_.m();
    c->adam_v = adam_.v();
    return Status::OK();
  }

  Status StartEpoch(const loader::ResumeState& at) override {
    batch_ = nullptr;
    return loader_->Start(at);
  }
  uint64_t num_batches() const override { return loader_->num_batches(); }
  Status Next(StepBatch* b, bool* end) override {
    const Clock::time_point start = Clock::now();
    SLUICE_RETURN_IF_ERROR(loader_->Next(&batch_));
    *b = StepBatch();
    b->wait_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    *end = batch_ == nullptr;
    if (*end) return Status::OK();
    b->index = batch_->index();
    TrainingRows(*batch_, &rows_, &b->frames);
    b->rows = static_cast<int64_t>(rows_.size());
    FindUnalignable(*batch_, rows_, &b->unalignable);
    return Status::OK();
  }
  loader::ResumeState Position() const override { return loader_->state(); }

  Status Step(int64_t total_rows, uint64_t seed, uint64_t step, double clip, double lr,
              double* flops, StepOutcome* finished) override {
    *finished = StepOutcome();
    double loss = 0;
    SLUICE_RETURN_IF_ERROR(replicas_.TrainStep(*batch_, rows_, seed, step, &loss));
    const size_t P = num_parameters();
    if (comm_ != nullptr)
      SLUICE_RETURN_IF_ERROR(CombineGradients(
          comm_, model().grads(), P, static_cast<int64_t>(rows_.size()), total_rows, &loss));
    finished->grad_norm = reference::ClipByGlobalNorm(model().grads(), P, clip);
    adam_.Step(model().params(), model().grads(), lr);
    *flops = 0;
    finished->valid = true;  // computed on this thread: the outcome is this step's
    finished->batch_index = batch_->index();
    finished->loss = loss;
    return Status::OK();
  }

  Status EvaluateRows(const loader::Batch& batch, const std::vector<int>& rows,
                      const RowFn& fn) override {
    return replicas_.Evaluate(batch, rows, fn);
  }

 private:
  static reference::AdamWOptions AdamOptions(double weight_decay) {
    reference::AdamWOptions o;
    o.weight_decay = weight_decay;
    return o;
  }
  reference::Model<float>& model() { return replicas_.master(); }

  Replicas replicas_;
  reference::AdamW<float> adam_;
  comm::Communicator* comm_;
  loader::Loader* loader_;
  const size_t P_;
  const loader::Batch* batch_ = nullptr;
  std::vector<int> rows_;
};

}  // namespace

std::unique_ptr<Engine> MakeCpuEngine(const reference::ModelConfig& config, int threads,
                                      double weight_decay, const Ranks& ranks,
                                      loader::Loader* loader) {
  return std::make_unique<CpuEngine>(config, threads, weight_decay, ranks, loader);
}

}  // namespace sluice::train
