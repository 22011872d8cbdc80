// refops: the torch operator refops::rms_norm, registered with TORCH_LIBRARY.
//
// Compiled by the host C++ compiler against torch's headers (a CPU torch wheel has no ATen/hip
// headers), linked with libtorch_cpu, libc10 and libamdhip64. Dispatch: a CPU tensor runs the CPU
// path below; a GPU tensor (the CUDA dispatch key, which a ROCm build of torch uses for HIP devices)
// calls the HIP launcher of rms_norm.hip through its C ABI; the Meta key only computes the shape.
#include <Python.h>

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/Device.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cmath>
#include <cstdint>

#include "refops_hip.h"
#include "rms_norm_cpu.h"

namespace refops {
namespace {

void check_inputs(const at::Tensor &x, const at::Tensor &weight, double eps) {
    TORCH_CHECK(x.dim() >= 1, "refops.rms_norm: x must have at least one dimension, got a 0-d tensor");
    TORCH_CHECK(weight.dim() == 1 && weight.size(0) == x.size(-1),
                "refops.rms_norm: weight must have shape [", x.size(-1), "] (the last dimension of x), got ",
                weight.sizes());
    TORCH_CHECK(x.scalar_type() == weight.scalar_type(), "refops.rms_norm: x is ", x.scalar_type(),
                " but weight is ", weight.scalar_type());
    const c10::Device device = x.device();
    TORCH_CHECK(weight.device() == device, "refops.rms_norm: x is on ", device, " but weight is on ",
                weight.device());
    TORCH_CHECK(eps >= 0.0 && std::isfinite(eps), "refops.rms_norm: eps must be finite and >= 0, got ", eps);
}

// this torch's parallel_for, as rms_norm_rows (rms_norm_cpu.h) takes it
const auto parallel_for = [](int64_t begin, int64_t end, int64_t grain, const auto &f) {
    at::parallel_for(begin, end, grain, f);
};

at::Tensor rms_norm_cpu(const at::Tensor &x, const at::Tensor &weight, double eps) {
    check_inputs(x, weight, eps);
    TORCH_CHECK(x.device().is_cpu(), "refops.rms_norm: the CPU kernel got a tensor on ", x.device());
    const at::Tensor xc = x.contiguous();
    const at::Tensor wc = weight.contiguous();
    at::Tensor out = at::empty_like(xc);
    const int64_t cols = xc.size(-1);
    const int64_t rows = cols == 0 ? 0 : xc.numel() / cols;
    AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "refops_rms_norm_cpu", [&] {
        rms_norm_rows<scalar_t>(xc.const_data_ptr<scalar_t>(), wc.const_data_ptr<scalar_t>(),
                                out.mutable_data_ptr<scalar_t>(), rows, cols, eps, parallel_for);
    });
    return out;
}

at::Tensor rms_norm_hip(const at::Tensor &x, const at::Tensor &weight, double eps) {
    check_inputs(x, weight, eps);
    const c10::Device device = x.device();
    TORCH_CHECK(x.scalar_type() == at::kFloat, "refops.rms_norm: the HIP kernel takes float32, got ",
                x.scalar_type(), " on ", device);
    const at::Tensor xc = x.contiguous();
    const at::Tensor wc = weight.contiguous();
    at::Tensor out = at::empty_like(xc);
    const int64_t cols = xc.size(-1);
    const int64_t rows = cols == 0 ? 0 : xc.numel() / cols;
    const int code = refops_hip_rms_norm_f32(xc.const_data_ptr<float>(), wc.const_data_ptr<float>(),
                                             out.mutable_data_ptr<float>(), rows, cols,
                                             static_cast<float>(eps), device.has_index() ? device.index() : 0);
    TORCH_CHECK(code == 0, "refops.rms_norm: HIP error ", code, " (", refops_hip_error_string(code), ") on ",
                device);
    return out;
}

at::Tensor rms_norm_meta(const at::Tensor &x, const at::Tensor &weight, double eps) {
    check_inputs(x, weight, eps);
    return at::empty_like(x, x.options().memory_format(at::MemoryFormat::Contiguous));
}

}  // namespace
}  // namespace refops

TORCH_LIBRARY(refops, m) {
    m.def("rms_norm(Tensor x, Tensor weight, float eps=1e-06) -> Tensor");
}

TORCH_LIBRARY_IMPL(refops, CPU, m) {
    m.impl("rms_norm", &refops::rms_norm_cpu);
}

TORCH_LIBRARY_IMPL(refops, CUDA, m) {
    m.impl("rms_norm", &refops::rms_norm_hip);
}

TORCH_LIBRARY_IMPL(refops, Meta, m) {
    m.impl("rms_norm", &refops::rms_norm_meta);
}

// `import refops._C` loads this library (after torch: its libtorch_cpu and libc10 are then in the
// process, found by SONAME without an RPATH); the static initializers above register the operator.
extern "C" PyMODINIT_FUNC PyInit__C(void) {
    static PyModuleDef module = {PyModuleDef_HEAD_INIT, "refops._C",
                                 "registers torch.ops.refops (TORCH_LIBRARY)", -1, nullptr};
    return PyModule_Create(&module);
}
