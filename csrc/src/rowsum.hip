// Row-wise sum reduction: one work-group per row, a tree reduction in LDS.
#include <hip/hip_runtime.h>

#include "refkernels.h"

namespace {

constexpr int kBlock = 256;

__global__ void rowsum(const float *__restrict__ x, float *__restrict__ out, int cols) {
    __shared__ float partial[kBlock];
    const float *row = x + static_cast<size_t>(blockIdx.x) * cols;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < cols; c += kBlock) {
        acc += row[c];
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int stride = kBlock / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) {
            partial[threadIdx.x] += partial[threadIdx.x + stride];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[blockIdx.x] = partial[0];
    }
}

}  // namespace

extern "C" int refk_rowsum_f32(const float *x, float *out, int rows, int cols) {
    int devices = 0;
    hipError_t err = hipGetDeviceCount(&devices);
    if (err != hipSuccess) {
        return static_cast<int>(err);
    }
    const size_t x_bytes = sizeof(float) * static_cast<size_t>(rows) * cols;
    const size_t out_bytes = sizeof(float) * static_cast<size_t>(rows);
    float *dx = nullptr;
    float *dout = nullptr;
    if ((err = hipMalloc(&dx, x_bytes)) != hipSuccess) goto done;
    if ((err = hipMalloc(&dout, out_bytes)) != hipSuccess) goto done;
    if ((err = hipMemcpy(dx, x, x_bytes, hipMemcpyHostToDevice)) != hipSuccess) goto done;
    hipLaunchKernelGGL(rowsum, dim3(rows), dim3(kBlock), 0, 0, dx, dout, cols);
    if ((err = hipGetLastError()) != hipSuccess) goto done;
    err = hipMemcpy(out, dout, out_bytes, hipMemcpyDeviceToHost);
done:
    (void)hipFree(dx);
    (void)hipFree(dout);
    return static_cast<int>(err);
}
