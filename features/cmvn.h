// Cepstral mean and variance normalisation of feature matrices [frames, dim], row-major.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace sluice::features {

// Per utterance: subtract each column's mean over the frames, and with norm_vars divide by its
// standard deviation (population, as Kaldi's apply-cmvn; columns with zero variance are only
// centred). Statistics in double.
void UtteranceCmvn(float* feats, int64_t frames, int dim, bool norm_vars);

// Per-column sums over a dataset (Kaldi's compute-cmvn-stats), for GlobalCmvn.
class CmvnStats {
 public:
  explicit CmvnStats(int dim) : sum_(dim, 0.0), sum_squares_(dim, 0.0) {}
  void Accumulate(const float* feats, int64_t frames);
  // Adds another accumulator of the same dim (e.g. one per thread); InvalidArgument otherwise.
  Status Merge(const CmvnStats& other);

  int dim() const { return static_cast<int>(sum_.size()); }
  double count() const { return count_; }  // frames accumulated
  const std::vector<double>& sum() const { return sum_; }
  const std::vector<double>& sum_squares() const { return sum_squares_; }

 private:
  std::vector<double> sum_;
  std::vector<double> sum_squares_;
  double count_ = 0;
};

// Global CMVN: x' = (x - mean) * inv_std per column.
struct GlobalCmvn {
  std::vector<float> mean;     // per column
  std::vector<float> inv_std;  // per column; ones when variances are not normalised

  // From accumulated statistics; variances floored at var_floor. InvalidArgument with no frames.
  static Status FromStats(const CmvnStats& stats, bool norm_vars, double var_floor,
                          GlobalCmvn* out);
  // From per-column mean and std (std > 0), e.g. loaded from a model's config.
  static Status FromMeanStd(const std::vector<float>& mean, const std::vector<float>& std,
                            GlobalCmvn* out);

  int dim() const { return static_cast<int>(mean.size()); }
  // InvalidArgument when dim differs from the statistics' dim.
  Status Apply(float* feats, int64_t frames, int dim) const;
};

}  // namespace sluice::features
