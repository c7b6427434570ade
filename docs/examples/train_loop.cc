// The loop a trainer writes around sluice's loader (docs/loader.md). Build it against the
// installed SDK with pkg-config or CMake (CMakeLists.txt beside it), or as a Meson subproject
// (`dependency('sluice')`):
//
//   c++ -std=c++20 train_loop.cc $(pkg-config --cflags --libs sluice) -o train_loop
//   cmake -S . -B build && cmake --build build
//
// The test suite builds and runs it on a tiny dataset, in the build tree and (suite `install`)
// against an installed tree, where it compiles with -Wall -Wextra -Wconversion -Wsign-conversion.
//
//   train_loop DATASET_DIR [RESUME_STATE_JSON]
#include <cstdio>
#include <memory>
#include <string>

#include <sluice/loader/loader.h>

namespace {

// Stands in for a training step: here, the mean of the real (unpadded) feature frames.
double TrainStep(const sluice::loader::Batch& batch) {
  const float* x = batch.features_f32();
  const auto dim = static_cast<size_t>(batch.dim());
  const size_t row_floats = static_cast<size_t>(batch.frames()) * dim;
  double sum = 0;
  size_t count = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const float* row = x + i * row_floats;
    const size_t n = static_cast<size_t>(batch.lengths()[i]) * dim;  // the unpadded frames
    for (size_t k = 0; k < n; ++k) sum += row[k];
    count += n;
  }
  return count ? sum / static_cast<double>(count) : 0.0;
}

sluice::Status Train(const std::string& dir, sluice::loader::ResumeState state) {
  sluice::loader::LoaderOptions options;
  options.kind = sluice::loader::FeatureKind::kFbank;  // 80 log-mel bins, 25/10 ms frames
  options.batching.max_frames = 20000;                 // about 200 s of audio per batch
  options.seed = 1234;
  options.rank = 0;   // from RANK / WORLD_SIZE in a real launcher
  options.world = 1;

  std::unique_ptr<sluice::Loader> loader;
  SLUICE_RETURN_IF_ERROR(sluice::Loader::Open(dir, options, &loader));
  // The model's input width and the time a frame stands for come from the dataset.
  const sluice::loader::FeatureInfo& features = loader->feature_info();
  std::printf("%s features, %d bins, %.1f ms per frame\n",
              sluice::loader::FeatureKindName(features.kind), features.dim,
              features.frame_shift_seconds * 1000);
  const uint64_t epochs = 2;
  // A learning-rate schedule is laid out before training from the batch counts alone.
  uint64_t total_steps = 0;
  for (uint64_t epoch = 0; epoch < epochs; ++epoch) {
    uint64_t batches = 0;
    SLUICE_RETURN_IF_ERROR(loader->CountBatches(epoch, &batches));
    total_steps += batches;
  }
  std::printf("%llu steps in %llu epochs\n", static_cast<unsigned long long>(total_steps),
              static_cast<unsigned long long>(epochs));
  for (uint64_t epoch = state.epoch; epoch < epochs; ++epoch) {
    // Resume mid-epoch once (a state saved at another world size continues with the rest of the
    // epoch), then start later epochs at their first batch.
    SLUICE_RETURN_IF_ERROR(epoch == state.epoch ? loader->Start(state) : loader->Start(epoch));
    // Device buffers sized once per epoch, for its largest batch.
    const sluice::loader::BatchShape largest = loader->max_batch_shape();
    std::printf("epoch %llu: %llu batches, at most %llu rows x %llu frames\n",
                static_cast<unsigned long long>(epoch),
                static_cast<unsigned long long>(loader->num_batches()),
                static_cast<unsigned long long>(largest.rows),
                static_cast<unsigned long long>(largest.frames));
    const sluice::loader::Batch* batch = nullptr;
    double loss = 0;
    while (true) {
      SLUICE_RETURN_IF_ERROR(loader->Next(&batch));
      if (batch == nullptr) break;  // end of epoch: every rank gets here after the same count
      loss = TrainStep(*batch);
      // A checkpoint stores loader->state().ToJson() beside the weights:
      // {"batches":N,"epoch":E,"world":W}.
    }
    const sluice::loader::EpochStats s = loader->stats();
    std::printf("epoch %llu: %llu batches, %llu utterances, %.1f s of audio in %.2f s "
                "(waited %.2f s), last step %.3f, state %s\n",
                static_cast<unsigned long long>(epoch), static_cast<unsigned long long>(s.batches),
                static_cast<unsigned long long>(s.utterances), s.audio_seconds, s.wall_seconds,
                s.wait_seconds, loss, loader->state().ToJson().c_str());
  }
  return sluice::Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DATASET_DIR [RESUME_STATE_JSON]\n", argv[0]);
    return 2;
  }
  sluice::loader::ResumeState state;
  if (argc > 2) {
    sluice::Status st = sluice::loader::ResumeState::FromJson(argv[2], &state);
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 2;
    }
  }
  const sluice::Status st = Train(argv[1], state);
  if (!st.ok()) {
    std::fprintf(stderr, "train_loop: %s\n", st.ToString().c_str());
    return 1;
  }
  return 0;
}
