// A growable byte buffer whose Resize does not zero-fill: block buffers are
// overwritten whole by pread or zstd, so the memset std::string::resize does
// would be pure waste on the loader's hot path. Capacity is kept across uses.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace sluice::shards {

class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(Buffer&&) noexcept = default;

  // Contents up to min(old size, n) are kept; bytes beyond are unspecified.
  void Resize(size_t n) {
    if (n > capacity_) {
      size_t cap = capacity_ ? capacity_ : 4096;
      while (cap < n) cap *= 2;
      std::unique_ptr<char[]> p(new char[cap]);
      if (size_) std::memcpy(p.get(), data_.get(), size_);
      data_ = std::move(p);
      capacity_ = cap;
    }
    size_ = n;
  }
  void Assign(std::string_view s) {
    Resize(s.size());
    if (!s.empty()) std::memcpy(data_.get(), s.data(), s.size());
  }
  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  std::string_view view() const { return {data_.get(), size_}; }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace sluice::shards
