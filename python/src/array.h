// Array: one array of a batch (features, lengths, tokens, token_lengths; packed batches' positions,
// doc_ids, loss_mask, cu_seqlens, row_cu_seqlens) as a Python object that
// exports itself through DLPack (__dlpack__ / __dlpack_device__, so torch.from_dlpack and
// numpy.from_dlpack view it without a copy) and through the buffer protocol (numpy.asarray;
// not for bfloat16, which the buffer protocol cannot name). Every capsule and every tensor made
// from it holds the batch's lease (batch_lease.h): the memory stays valid and unchanged for as
// long as any of them lives.
#pragma once

#include <dlpack/dlpack.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "batch_lease.h"

namespace sluice::python {

namespace py = pybind11;

enum class ElementType { kFloat32, kFloat16, kBFloat16, kInt32, kInt64, kUInt8 };

class Array {
 public:
  Array(std::shared_ptr<BatchLease> lease, const void* data, std::vector<int64_t> shape,
        ElementType type);

  const void* data() const { return data_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  ElementType type() const { return type_; }
  std::string dtype_name() const;  // "float32", "float16", "bfloat16", "int32", "int64", "uint8"
  size_t itemsize() const {
    switch (type_) {
      case ElementType::kFloat32:
      case ElementType::kInt32: return 4;
      case ElementType::kInt64: return 8;
      case ElementType::kUInt8: return 1;
      case ElementType::kFloat16:
      case ElementType::kBFloat16: return 2;
    }
    return 4;
  }
  int64_t size() const;  // elements

  // A "dltensor" capsule owning a DLManagedTensor that holds the lease. `stream` must be None:
  // the memory is host memory.
  py::capsule ToDLPack(py::object stream) const;
  // The buffer protocol's view (read-write; the batch is the caller's copy). BufferError for
  // bfloat16.
  py::buffer_info Buffer() const;

 private:
  std::shared_ptr<BatchLease> lease_;
  const void* data_;
  std::vector<int64_t> shape_;
  ElementType type_;
};

void RegisterArray(py::module_& m);

}  // namespace sluice::python
