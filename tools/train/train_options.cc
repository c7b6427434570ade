#include "train_options.h"

namespace sluice::train {
namespace {

// false when off, else the masks' options (the loader ignores them when off).
nlohmann::json SpecAugmentJson(const TrainOptions& o) {
  if (!o.spec_augment) return false;
  const features::SpecAugmentOptions& a = o.spec_augment_options;
  return {{"num_freq_masks", a.num_freq_masks}, {"max_freq_width", a.max_freq_width},
          {"num_time_masks", a.num_time_masks}, {"max_time_width", a.max_time_width},
          {"max_time_ratio", a.max_time_ratio}, {"fill_value", a.fill_value}};
}

}  // namespace

nlohmann::json RunConfigJson(const TrainOptions& o) {
  const tools::FeatureArgs& f = o.features;
  return {
      {"preset", o.preset},
      {"epochs", o.epochs},
      {"steps", o.steps},
      {"lr", o.lr},
      {"min_lr_ratio", o.min_lr_ratio},
      {"warmup_steps", o.warmup_steps},
      {"weight_decay", o.weight_decay},
      {"clip", o.clip},
      {"dropout", o.dropout},
      {"activation", o.activation},
      {"seed", o.seed},
      {"threads", o.threads},
      {"max_frames", o.max_frames},
      {"max_batch_size", o.max_batch_size},
      {"eval_fraction", o.eval_dataset.empty() ? o.eval_fraction : 0.0},
      {"cmvn", o.cmvn},
      {"spec_augment", SpecAugmentJson(o)},
      {"features",
       {{"kind", o.feature_kind},
        {"frame_length_ms", f.frame_length_ms},
        {"frame_shift_ms", f.frame_shift_ms},
        {"num_mel_bins", f.num_mel_bins},
        {"dither", f.dither},
        {"preemphasis_coefficient", f.preemphasis_coefficient},
        {"remove_dc_offset", f.remove_dc_offset},
        {"window_type", f.window_type},
        {"snip_edges", f.snip_edges},
        {"low_freq", f.low_freq},
        {"high_freq", f.high_freq},
        {"use_energy", f.use_energy},
        {"n_fft", f.n_fft},
        {"normalize", f.normalize}}},
  };
}

}  // namespace sluice::train
