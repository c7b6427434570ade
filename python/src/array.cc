#include "array.h"

#include <pybind11/stl.h>

namespace sluice::python {

namespace {

// What a DLManagedTensor owns: the lease and the shape and strides it points at.
struct Managed {
  DLManagedTensor tensor{};
  std::shared_ptr<BatchLease> lease;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

void DeleteManaged(DLManagedTensor* t) { delete static_cast<Managed*>(t->manager_ctx); }

// The capsule's destructor: a capsule no consumer took ("dltensor", not renamed
// "used_dltensor") still owns its tensor. Runs with the GIL; keeps any error being raised.
void DestroyCapsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "used_dltensor")) return;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (t == nullptr) {
    PyErr_WriteUnraisable(capsule);
  } else if (t->deleter != nullptr) {
    t->deleter(t);
  }
  PyErr_Restore(type, value, traceback);
}

DLDataType DLTypeOf(ElementType t) {
  switch (t) {
    case ElementType::kFloat32: return {kDLFloat, 32, 1};
    case ElementType::kFloat16: return {kDLFloat, 16, 1};
    case ElementType::kBFloat16: return {kDLBfloat, 16, 1};
    case ElementType::kInt32: return {kDLInt, 32, 1};
    case ElementType::kInt64: return {kDLInt, 64, 1};
    case ElementType::kUInt8: return {kDLUInt, 8, 1};
  }
  return {kDLFloat, 32, 1};
}

// A valid, aligned address for arrays with no elements (consumers reject a null data pointer).
alignas(256) const char kEmpty[256] = {};

}  // namespace

Array::Array(std::shared_ptr<BatchLease> lease, const void* data, std::vector<int64_t> shape,
             ElementType type)
    : lease_(std::move(lease)), data_(data), shape_(std::move(shape)), type_(type) {
  if (data_ == nullptr) data_ = kEmpty;  // only arrays with no elements have none
}

int64_t Array::size() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

std::string Array::dtype_name() const {
  switch (type_) {
    case ElementType::kFloat32: return "float32";
    case ElementType::kFloat16: return "float16";
    case ElementType::kBFloat16: return "bfloat16";
    case ElementType::kInt32: return "int32";
    case ElementType::kInt64: return "int64";
    case ElementType::kUInt8: return "uint8";
  }
  return "?";
}

py::capsule Array::ToDLPack(py::object stream) const {
  if (!stream.is_none())
    throw py::value_error("__dlpack__(stream=...): a batch is host memory; stream must be None");
  auto* m = new Managed;
  m->lease = lease_;
  m->shape = shape_;
  m->strides.resize(shape_.size());
  int64_t stride = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    m->strides[i] = stride;
    stride *= shape_[i];
  }
  DLTensor& t = m->tensor.dl_tensor;
  t.data = const_cast<void*>(data_);
  t.device = {kDLCPU, 0};
  t.ndim = static_cast<int32_t>(shape_.size());
  t.dtype = DLTypeOf(type_);
  t.shape = m->shape.data();
  t.strides = m->strides.data();
  t.byte_offset = 0;
  m->tensor.manager_ctx = m;
  m->tensor.deleter = DeleteManaged;
  PyObject* capsule = PyCapsule_New(&m->tensor, "dltensor", DestroyCapsule);
  if (capsule == nullptr) {
    delete m;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

py::buffer_info Array::Buffer() const {
  std::string format;
  switch (type_) {
    case ElementType::kFloat32: format = py::format_descriptor<float>::format(); break;
    case ElementType::kInt32: format = py::format_descriptor<int32_t>::format(); break;
    case ElementType::kInt64: format = py::format_descriptor<int64_t>::format(); break;
    case ElementType::kUInt8: format = py::format_descriptor<uint8_t>::format(); break;
    case ElementType::kFloat16: format = "e"; break;
    case ElementType::kBFloat16:
      throw py::buffer_error(
          "a bfloat16 array has no buffer-protocol format: use torch.from_dlpack(array)");
  }
  std::vector<py::ssize_t> shape(shape_.begin(), shape_.end()), strides(shape_.size());
  py::ssize_t stride = static_cast<py::ssize_t>(itemsize());
  for (size_t i = shape_.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape_[i];
  }
  return py::buffer_info(const_cast<void*>(data_), static_cast<py::ssize_t>(itemsize()), format,
                         static_cast<py::ssize_t>(shape_.size()), shape, strides,
                         /*readonly=*/false);
}

void RegisterArray(py::module_& m) {
  py::class_<Array>(m, "Array", py::buffer_protocol(),
                    R"(One array of a batch, in the batch's memory.

Export it without a copy: ``torch.from_dlpack(a)``, ``numpy.from_dlpack(a)``, or
``numpy.asarray(a)`` (not bfloat16). The memory stays valid and unchanged while this object or
any tensor or array made from it lives.)")
      .def_buffer([](const Array& a) { return a.Buffer(); })
      .def("__dlpack__", &Array::ToDLPack, py::arg("stream") = py::none(),
           "A DLPack capsule viewing this array (host memory: stream must be None).")
      .def(
          "__dlpack_device__", [](const Array&) { return py::make_tuple(int(kDLCPU), 0); },
          "(kDLCPU, 0): host memory.")
      .def_property_readonly(
          "shape",
          [](const Array& a) {
            py::tuple t(a.shape().size());
            for (size_t i = 0; i < a.shape().size(); ++i) t[i] = a.shape()[i];
            return t;
          },
          "The shape, a tuple of ints.")
      .def_property_readonly("dtype", &Array::dtype_name,
                             "'float32', 'float16', 'bfloat16' or 'int32'.")
      .def_property_readonly(
          "data_ptr", [](const Array& a) { return reinterpret_cast<uintptr_t>(a.data()); },
          "Address of the first element: the batch buffer's own memory.")
      .def_property_readonly("nbytes", [](const Array& a) { return a.size() * a.itemsize(); })
      .def("__len__", [](const Array& a) { return a.shape().empty() ? 0 : a.shape()[0]; })
      .def("__repr__", [](const Array& a) {
        std::string s = "sluice.Array(shape=(";
        for (size_t i = 0; i < a.shape().size(); ++i)
          s += (i ? ", " : "") + std::to_string(a.shape()[i]);
        return s + (a.shape().size() == 1 ? ",)" : ")") + ", dtype=" + a.dtype_name() + ")";
      });
}

}  // namespace sluice::python
