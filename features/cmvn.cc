#include "features/cmvn.h"

#include <cmath>
#include <string>

namespace sluice::features {
namespace {

// Column sums: the inner loop runs over columns, which are contiguous, so it vectorises.
void ColumnSums(const float* feats, int64_t frames, int dim, double* sum, double* sum_squares) {
  for (int64_t f = 0; f < frames; ++f) {
    const float* row = feats + f * dim;
    for (int j = 0; j < dim; ++j) {
      const double v = row[j];
      sum[j] += v;
      sum_squares[j] += v * v;
    }
  }
}

void Normalise(float* feats, int64_t frames, int dim, const float* mean, const float* inv_std) {
  for (int64_t f = 0; f < frames; ++f) {
    float* row = feats + f * dim;
    for (int j = 0; j < dim; ++j) row[j] = (row[j] - mean[j]) * inv_std[j];
  }
}

}  // namespace

void UtteranceCmvn(float* feats, int64_t frames, int dim, bool norm_vars) {
  if (frames <= 0 || dim <= 0) return;
  std::vector<double> sum(dim, 0.0), sum_squares(dim, 0.0);
  ColumnSums(feats, frames, dim, sum.data(), sum_squares.data());
  std::vector<float> mean(dim), inv_std(dim, 1.0f);
  for (int j = 0; j < dim; ++j) {
    const double m = sum[j] / static_cast<double>(frames);
    mean[j] = static_cast<float>(m);
    if (norm_vars) {
      const double var = sum_squares[j] / static_cast<double>(frames) - m * m;
      if (var > 1e-20) inv_std[j] = static_cast<float>(1.0 / std::sqrt(var));
    }
  }
  Normalise(feats, frames, dim, mean.data(), inv_std.data());
}

void CmvnStats::Accumulate(const float* feats, int64_t frames) {
  if (frames <= 0) return;
  ColumnSums(feats, frames, dim(), sum_.data(), sum_squares_.data());
  count_ += static_cast<double>(frames);
}

Status CmvnStats::Merge(const CmvnStats& other) {
  if (other.dim() != dim()) {
    return Status::InvalidArgument("cmvn: cannot merge statistics of dim " +
                                   std::to_string(other.dim()) + " into dim " +
                                   std::to_string(dim()));
  }
  for (int j = 0; j < dim(); ++j) {
    sum_[j] += other.sum_[j];
    sum_squares_[j] += other.sum_squares_[j];
  }
  count_ += other.count_;
  return Status::OK();
}

Status GlobalCmvn::FromStats(const CmvnStats& stats, bool norm_vars, double var_floor,
                             GlobalCmvn* out) {
  if (stats.count() <= 0) return Status::InvalidArgument("cmvn: statistics hold no frames");
  const int dim = stats.dim();
  GlobalCmvn g;
  g.mean.resize(dim);
  g.inv_std.assign(dim, 1.0f);
  for (int j = 0; j < dim; ++j) {
    const double m = stats.sum()[j] / stats.count();
    g.mean[j] = static_cast<float>(m);
    if (norm_vars) {
      const double var = std::max(stats.sum_squares()[j] / stats.count() - m * m, var_floor);
      if (var > 0) g.inv_std[j] = static_cast<float>(1.0 / std::sqrt(var));
    }
  }
  *out = std::move(g);
  return Status::OK();
}

Status GlobalCmvn::FromMeanStd(const std::vector<float>& mean, const std::vector<float>& std,
                               GlobalCmvn* out) {
  if (mean.size() != std.size() || mean.empty()) {
    return Status::InvalidArgument("cmvn: mean has " + std::to_string(mean.size()) +
                                   " values and std " + std::to_string(std.size()));
  }
  GlobalCmvn g;
  g.mean = mean;
  g.inv_std.resize(std.size());
  for (size_t j = 0; j < std.size(); ++j) {
    if (!(std[j] > 0) || !std::isfinite(std[j])) {
      return Status::InvalidArgument("cmvn: std of column " + std::to_string(j) +
                                     " is not a positive number");
    }
    g.inv_std[j] = 1.0f / std[j];
  }
  *out = std::move(g);
  return Status::OK();
}

Status GlobalCmvn::Apply(float* feats, int64_t frames, int dim) const {
  if (dim != this->dim()) {
    return Status::InvalidArgument("cmvn: features have dim " + std::to_string(dim) +
                                   ", statistics dim " + std::to_string(this->dim()));
  }
  Normalise(feats, frames, dim, mean.data(), inv_std.data());
  return Status::OK();
}

}  // namespace sluice::features
