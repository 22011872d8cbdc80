// RMSNorm on the GPU: one work-group per row, the sum of squares reduced in LDS.
// No torch header here: torch's CPU wheel has no ATen/hip headers, so the launcher is plain C ABI.
#include <hip/hip_runtime.h>

#include "refops_hip.h"

namespace {

constexpr int kBlock = 256;

__global__ void rms_norm(const float *__restrict__ x, const float *__restrict__ weight,
                         float *__restrict__ out, int64_t cols, float eps) {
    __shared__ float partial[kBlock];
    const float *row = x + static_cast<int64_t>(blockIdx.x) * cols;
    float *dst = out + static_cast<int64_t>(blockIdx.x) * cols;
    float acc = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += kBlock) {
        acc += row[c] * row[c];
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int stride = kBlock / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) {
            partial[threadIdx.x] += partial[threadIdx.x + stride];
        }
        __syncthreads();
    }
    const float scale = rsqrtf(partial[0] / static_cast<float>(cols) + eps);
    for (int64_t c = threadIdx.x; c < cols; c += kBlock) {
        dst[c] = row[c] * scale * weight[c];
    }
}

}  // namespace

extern "C" int refops_hip_rms_norm_f32(const float *x, const float *weight, float *out, int64_t rows,
                                       int64_t cols, float eps, int device) {
    hipError_t err = hipSetDevice(device);
    if (err != hipSuccess) {
        return static_cast<int>(err);
    }
    if (rows == 0 || cols == 0) {
        return 0;
    }
    hipLaunchKernelGGL(rms_norm, dim3(static_cast<unsigned>(rows)), dim3(kBlock), 0, 0, x, weight, out,
                       cols, eps);
    if ((err = hipGetLastError()) != hipSuccess) {
        return static_cast<int>(err);
    }
    return static_cast<int>(hipDeviceSynchronize());
}

extern "C" const char *refops_hip_error_string(int code) {
    return hipGetErrorString(static_cast<hipError_t>(code));
}
