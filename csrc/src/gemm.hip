// Tiled single-precision GEMM in two tile configurations (16x16 and 32x32 work-groups).
//
// Each work-group computes a TILE x TILE block of C, staging TILE x TILE blocks of A and B
// through LDS (shared memory). The tuned dispatch table (refkernels/tuned/gemm.csv) chooses
// the configuration per (gfx, cu_num, M, N, K).
#include <hip/hip_runtime.h>

#include <cstring>

#include "refkernels.h"

namespace {

template <int TILE>
__global__ void gemm_tiled(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
                           int m, int n, int k) {
    __shared__ float a_tile[TILE][TILE];
    __shared__ float b_tile[TILE][TILE + 1];  // +1 avoids LDS bank conflicts on the transposed read

    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;

    for (int k0 = 0; k0 < k; k0 += TILE) {
        const int ak = k0 + threadIdx.x;
        const int bk = k0 + threadIdx.y;
        a_tile[threadIdx.y][threadIdx.x] = (row < m && ak < k) ? a[static_cast<size_t>(row) * k + ak] : 0.0f;
        b_tile[threadIdx.y][threadIdx.x] = (bk < k && col < n) ? b[static_cast<size_t>(bk) * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TILE; ++kk) {
            acc += a_tile[threadIdx.y][kk] * b_tile[kk][threadIdx.x];
        }
        __syncthreads();
    }
    if (row < m && col < n) {
        c[static_cast<size_t>(row) * n + col] = acc;
    }
}

template <int TILE>
hipError_t launch_gemm(const float *a, const float *b, float *c, int m, int n, int k) {
    const dim3 block(TILE, TILE);
    const dim3 grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
    hipLaunchKernelGGL(gemm_tiled<TILE>, grid, block, 0, 0, a, b, c, m, n, k);
    return hipGetLastError();
}

using Launcher = hipError_t (*)(const float *, const float *, float *, int, int, int);

struct KernelEntry {
    const char *name;
    Launcher launch;
};

const KernelEntry kKernels[] = {
    {"gemm_tile16", launch_gemm<16>},
    {"gemm_tile32", launch_gemm<32>},
};

const char *const kKernelNames[] = {"gemm_tile16", "gemm_tile32", nullptr};

}  // namespace

extern "C" const char *const *refk_gemm_kernels(void) { return kKernelNames; }

extern "C" int refk_gemm_f32(const char *kernel, const float *a, const float *b, float *c, int m, int n, int k) {
    Launcher launch = nullptr;
    for (const KernelEntry &entry : kKernels) {
        if (std::strcmp(entry.name, kernel) == 0) {
            launch = entry.launch;
        }
    }
    if (launch == nullptr) {
        return REFK_ERROR_UNKNOWN_KERNEL;
    }
    int devices = 0;
    hipError_t err = hipGetDeviceCount(&devices);
    if (err != hipSuccess) {
        return static_cast<int>(err);
    }
    const size_t a_bytes = sizeof(float) * static_cast<size_t>(m) * k;
    const size_t b_bytes = sizeof(float) * static_cast<size_t>(k) * n;
    const size_t c_bytes = sizeof(float) * static_cast<size_t>(m) * n;
    float *da = nullptr;
    float *db = nullptr;
    float *dc = nullptr;
    if ((err = hipMalloc(&da, a_bytes)) != hipSuccess) goto done;
    if ((err = hipMalloc(&db, b_bytes)) != hipSuccess) goto done;
    if ((err = hipMalloc(&dc, c_bytes)) != hipSuccess) goto done;
    if ((err = hipMemcpy(da, a, a_bytes, hipMemcpyHostToDevice)) != hipSuccess) goto done;
    if ((err = hipMemcpy(db, b, b_bytes, hipMemcpyHostToDevice)) != hipSuccess) goto done;
    if ((err = launch(da, db, dc, m, n, k)) != hipSuccess) goto done;
    err = hipMemcpy(c, dc, c_bytes, hipMemcpyDeviceToHost);
done:
    (void)hipFree(da);
    (void)hipFree(db);
    (void)hipFree(dc);
    return static_cast<int>(err);
}
