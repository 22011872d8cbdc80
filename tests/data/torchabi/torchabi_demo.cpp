// The torch-abi rule's test subject: a small torch extension (tests/helpers/torch_ext.py builds it
// with g++ against torch 2.13.0+cpu's own headers and libraries).
//   default                       c10::Device, TORCH_CHECK, at::add / at::mul
//   -D_GLIBCXX_USE_CXX11_ABI=0    the same source with the other C++ ABI (std::string of GCC < 5)
//   -DTORCHABI_DEMO_OLD_API       also at::qr (removed in torch 2.14) and at::toDLPackNonOwning
//                                 (a third parameter added in torch 2.14)
#include <Python.h>
#include <string>

#include <ATen/core/Tensor.h>
#include <ATen/ops/add.h>
#include <ATen/ops/mul.h>
#include <c10/core/Device.h>
#include <c10/util/Exception.h>
#ifdef TORCHABI_DEMO_OLD_API
#include <ATen/DLConvertor.h>
#include <ATen/ops/qr.h>
#endif

namespace torchabi_demo {

at::Tensor scaled_sum(const at::Tensor& a, const at::Tensor& b, const std::string& device) {
  const c10::Device wanted(device);
  TORCH_CHECK(a.device() == wanted, "tensor is on ", a.device(), ", expected ", wanted);
  TORCH_CHECK(a.sizes() == b.sizes(), "shape mismatch: ", a.sizes(), " vs ", b.sizes());
  return at::mul(at::add(a, b), 2);
}

#ifdef TORCHABI_DEMO_OLD_API
at::Tensor orthonormal(const at::Tensor& a) { return std::get<0>(at::qr(a)); }

void borrow(const at::Tensor& a, DLTensor* out) { at::toDLPackNonOwning(a, out); }
#endif

}  // namespace torchabi_demo

static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};

extern "C" PyObject* PyInit__C(void) {
  (void)&torchabi_demo::scaled_sum;
#ifdef TORCHABI_DEMO_OLD_API
  (void)&torchabi_demo::orthonormal;
  (void)&torchabi_demo::borrow;
#endif
  return PyModule_Create(&module);
}
