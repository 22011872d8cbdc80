// Device code of buildkit-ctypesdemo: one kernel, and a C entry point the library exports.
#include <hip/hip_runtime.h>

__global__ void ctypesdemo_fill(int *out, int value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value;
}

extern "C" int ctypesdemo_devices(void) {
  int count = 0;
  return hipGetDeviceCount(&count) == hipSuccess ? count : 0;
}
