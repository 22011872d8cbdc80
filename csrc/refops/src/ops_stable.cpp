// refops on the libtorch stable ABI: the operator refops::rms_norm registered with
// STABLE_TORCH_LIBRARY, for every torch from the one it targets (TORCH_TARGET_VERSION) on.
//
// Only torch's stable headers are included (torch/csrc/stable, torch/headeronly): the extension
// needs from libtorch nothing but its C shim (torch_*, aoti_torch_*), whose functions keep their ABI
// across releases. Built with -DTORCH_STABLE_ONLY -DTORCH_TARGET_VERSION=..., any other torch header
// (ATen, c10, torch/library.h) stops the compile with torch's own #error. Dispatch as in ops.cpp: a
// CPU tensor runs the CPU path below, a GPU tensor (the CUDA key, a ROCm torch's HIP devices) the HIP
// launcher of rms_norm.hip through its C ABI; the Meta key only computes the shape.
#include <Python.h>

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>
#include <torch/headeronly/util/Exception.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "refops_hip.h"
#include "rms_norm_cpu.h"

namespace refops {
namespace {

using torch::headeronly::ScalarType;
using torch::stable::Tensor;

void check_inputs(const Tensor &x, const Tensor &weight, double eps) {
    STD_TORCH_CHECK(x.dim() >= 1, "refops.rms_norm: x must have at least one dimension, got a 0-d tensor");
    STD_TORCH_CHECK(weight.dim() == 1 && weight.size(0) == x.size(x.dim() - 1),
                    "refops.rms_norm: weight must have shape [", x.size(x.dim() - 1),
                    "] (the last dimension of x)");
    STD_TORCH_CHECK(x.scalar_type() == weight.scalar_type(), "refops.rms_norm: x is ",
                    torch::headeronly::toString(x.scalar_type()), " but weight is ",
                    torch::headeronly::toString(weight.scalar_type()));
    STD_TORCH_CHECK(x.get_device() == weight.get_device() && x.is_cpu() == weight.is_cpu(),
                    "refops.rms_norm: x and weight are on different devices");
    STD_TORCH_CHECK(eps >= 0.0 && std::isfinite(eps), "refops.rms_norm: eps must be finite and >= 0, got ", eps);
}

// this torch's parallel_for, as rms_norm_rows (rms_norm_cpu.h) takes it
const auto parallel_for = [](int64_t begin, int64_t end, int64_t grain, const auto &f) {
    torch::stable::parallel_for(begin, end, grain, f);
};

int64_t rows_of(const Tensor &x, int64_t cols) { return cols == 0 ? 0 : x.numel() / cols; }

Tensor rms_norm_cpu(Tensor x, Tensor weight, double eps) {
    check_inputs(x, weight, eps);
    STD_TORCH_CHECK(x.is_cpu(), "refops.rms_norm: the CPU kernel got a tensor on device ", x.get_device());
    const Tensor xc = torch::stable::contiguous(x);
    const Tensor wc = torch::stable::contiguous(weight);
    Tensor out = torch::stable::empty_like(xc);
    const int64_t cols = xc.size(xc.dim() - 1);
    const int64_t rows = rows_of(xc, cols);
    switch (xc.scalar_type()) {
        case ScalarType::Float:
            rms_norm_rows<float>(static_cast<const float *>(xc.const_data_ptr()),
                                 static_cast<const float *>(wc.const_data_ptr()),
                                 static_cast<float *>(out.mutable_data_ptr()), rows, cols, eps, parallel_for);
            break;
        case ScalarType::Double:
            rms_norm_rows<double>(static_cast<const double *>(xc.const_data_ptr()),
                                  static_cast<const double *>(wc.const_data_ptr()),
                                  static_cast<double *>(out.mutable_data_ptr()), rows, cols, eps, parallel_for);
            break;
        default:
            STD_TORCH_CHECK(false, "\"refops_rms_norm_cpu\" not implemented for '",
                            torch::headeronly::toString(xc.scalar_type()), "'");
    }
    return out;
}

Tensor rms_norm_hip(Tensor x, Tensor weight, double eps) {
    check_inputs(x, weight, eps);
    STD_TORCH_CHECK(x.scalar_type() == ScalarType::Float, "refops.rms_norm: the HIP kernel takes float32, got ",
                    torch::headeronly::toString(x.scalar_type()));
    const Tensor xc = torch::stable::contiguous(x);
    const Tensor wc = torch::stable::contiguous(weight);
    Tensor out = torch::stable::empty_like(xc);
    const int64_t cols = xc.size(xc.dim() - 1);
    const int code = refops_hip_rms_norm_f32(static_cast<const float *>(xc.const_data_ptr()),
                                             static_cast<const float *>(wc.const_data_ptr()),
                                             static_cast<float *>(out.mutable_data_ptr()), rows_of(xc, cols), cols,
                                             static_cast<float>(eps), xc.get_device());
    STD_TORCH_CHECK(code == 0, "refops.rms_norm: HIP error ", code, " (", refops_hip_error_string(code),
                    ") on device ", xc.get_device());
    return out;
}

Tensor rms_norm_meta(Tensor x, Tensor weight, double eps) {
    check_inputs(x, weight, eps);
    return torch::stable::empty_like(x);
}

}  // namespace
}  // namespace refops

STABLE_TORCH_LIBRARY(refops, m) {
    m.def("rms_norm(Tensor x, Tensor weight, float eps=1e-06) -> Tensor");
}

STABLE_TORCH_LIBRARY_IMPL(refops, CPU, m) {
    m.impl("rms_norm", TORCH_BOX(&refops::rms_norm_cpu));
}

STABLE_TORCH_LIBRARY_IMPL(refops, CUDA, m) {
    m.impl("rms_norm", TORCH_BOX(&refops::rms_norm_hip));
}

STABLE_TORCH_LIBRARY_IMPL(refops, Meta, m) {
    m.impl("rms_norm", TORCH_BOX(&refops::rms_norm_meta));
}

// `import refops._C` loads this library after torch (its libtorch_cpu is then in the process, found
// by SONAME without an RPATH); the static initializers above register the operator.
extern "C" PyMODINIT_FUNC PyInit__C(void) {
    static PyModuleDef module = {PyModuleDef_HEAD_INIT, "refops._C",
                                 "registers torch.ops.refops (STABLE_TORCH_LIBRARY)", -1, nullptr};
    return PyModule_Create(&module);
}
