/* C interface between the HIP kernels (*.hip) and the CPython binding (module.c).
 *
 * The binding is plain C and never includes HIP headers: every function returns 0 on
 * success or a hipError_t value, which refk_error_name()/refk_error_string() describe.
 */
#ifndef REFKERNELS_H
#define REFKERNELS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* hipErrorNoDevice in HIP's hip_runtime_api.h; the binding maps it to NoDeviceError. */
#define REFK_ERROR_NO_DEVICE 100
/* Returned for a kernel name that is not compiled in (not a HIP error code). */
#define REFK_ERROR_UNKNOWN_KERNEL (-1)
/* Returned for a target id that does not start with gfx and a hex processor number. */
#define REFK_ERROR_BAD_TARGET (-2)

int refk_device_count(int *count);
/* gcn_arch receives e.g. "gfx90a:sramecc+:xnack-"; cu_count the number of compute units. */
int refk_device_info(int device, char *gcn_arch, size_t gcn_arch_len, int *cu_count);
const char *refk_error_name(int code);
const char *refk_error_string(int code);

/* "gfx942" -> number 0x942 and an occupancy weight in (0, 1) (std::stoi, sscanf, exp). */
int refk_arch_number(const char *target, long *number, double *weight);

/* Tiled single-precision GEMM, row-major: c[M,N] = a[M,K] * b[K,N]. */
int refk_gemm_f32(const char *kernel, const float *a, const float *b, float *c, int m, int n, int k);
/* Names of the GEMM kernels compiled in, NULL-terminated. */
const char *const *refk_gemm_kernels(void);

/* Row-wise sum reduction: out[r] = sum_c x[r, c]. */
int refk_rowsum_f32(const float *x, float *out, int rows, int cols);

#ifdef __cplusplus
}
#endif

#endif /* REFKERNELS_H */
