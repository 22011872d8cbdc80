/* C interface between the HIP kernel (rms_norm.hip, compiled by hipcc, no torch headers) and the
 * torch operator (ops.cpp, compiled by the host C++ compiler against torch's headers).
 *
 * Pointers are device pointers; every function returns 0 on success or a hipError_t value, which
 * refops_hip_error_string() describes. The kernel runs on the device's null stream and the launcher
 * waits for it (a CPU build of torch has no c10::hip stream API to take the current stream from).
 */
#ifndef REFOPS_HIP_H
#define REFOPS_HIP_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[r, c] = x[r, c] / sqrt(mean_c(x[r, :]^2) + eps) * weight[c], float32, row-major, contiguous. */
int refops_hip_rms_norm_f32(const float *x, const float *weight, float *out, int64_t rows, int64_t cols,
                            float eps, int device);
const char *refops_hip_error_string(int code);

#ifdef __cplusplus
}
#endif

#endif /* REFOPS_HIP_H */
