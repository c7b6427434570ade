#include "comm/gradient_buckets.h"

#include <algorithm>
#include <string>

namespace sluice::comm {

GradientBuckets::GradientBuckets(float* grads, size_t count, size_t bucket_elements,
                                 ReduceLane* lane)
    : grads_(grads), count_(count), bucket_(std::max<size_t>(bucket_elements, 1)), lane_(lane) {
  const size_t n = (count_ + bucket_ - 1) / bucket_;
  remaining_.resize(n);
  for (size_t b = 0; b < n; ++b) remaining_[b] = std::min(bucket_, count_ - b * bucket_);
  submitted_.reserve(n);
}

Status GradientBuckets::MarkReady(size_t offset, size_t count) {
  if (offset > count_ || count > count_ - offset)
    return Status::InvalidArgument("GradientBuckets::MarkReady: [" + std::to_string(offset) + ", " +
                                   std::to_string(offset + count) + ") is outside the " +
                                   std::to_string(count_) + "-element gradient buffer");
  // Spread the range over the buckets it covers.
  for (size_t pos = offset; pos < offset + count;) {
    const size_t b = pos / bucket_;
    const size_t end = std::min(offset + count, (b + 1) * bucket_);
    const size_t n = end - pos;
    if (n > remaining_[b])
      return Status::InvalidArgument("GradientBuckets::MarkReady: bucket " + std::to_string(b) +
                                     " marked past its size (a tensor marked twice this step?)");
    remaining_[b] -= n;
    marked_total_ += n;
    pos = end;
  }
  // Submit in order: a complete bucket waits for its predecessors.
  while (next_ < remaining_.size() && remaining_[next_] == 0) {
    const size_t first = next_ * bucket_;
    SLUICE_RETURN_IF_ERROR(lane_->Submit(grads_ + first, std::min(bucket_, count_ - first)));
    submitted_.push_back(static_cast<uint32_t>(next_));
    ++next_;
  }
  return Status::OK();
}

Status GradientBuckets::Finish() {
  // Wait first: what was submitted is in flight and reads the buffer.
  SLUICE_RETURN_IF_ERROR(lane_->Wait());
  if (marked_total_ != count_)
    return Status::InvalidArgument("GradientBuckets::Finish: " + std::to_string(marked_total_) +
                                   " of " + std::to_string(count_) +
                                   " gradient elements were marked ready this step");
  for (size_t b = 0; b < remaining_.size(); ++b)
    remaining_[b] = std::min(bucket_, count_ - b * bucket_);
  submitted_.clear();
  next_ = 0;
  marked_total_ = 0;
  return Status::OK();
}

}  // namespace sluice::comm
