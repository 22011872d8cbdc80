// Device queries and error strings for the C binding (host code only).
#include <hip/hip_runtime.h>

#include <cstring>

#include "refkernels.h"

extern "C" int refk_device_count(int *count) {
    *count = 0;
    return static_cast<int>(hipGetDeviceCount(count));
}

extern "C" int refk_device_info(int device, char *gcn_arch, size_t gcn_arch_len, int *cu_count) {
    hipDeviceProp_t props;
    hipError_t err = hipGetDeviceProperties(&props, device);
    if (err != hipSuccess) {
        return static_cast<int>(err);
    }
    if (gcn_arch_len > 0) {
        std::strncpy(gcn_arch, props.gcnArchName, gcn_arch_len - 1);
        gcn_arch[gcn_arch_len - 1] = '\0';
    }
    *cu_count = props.multiProcessorCount;
    return 0;
}

extern "C" const char *refk_error_name(int code) {
    if (code == REFK_ERROR_UNKNOWN_KERNEL) {
        return "refkErrorUnknownKernel";
    }
    return hipGetErrorName(static_cast<hipError_t>(code));
}

extern "C" const char *refk_error_string(int code) {
    if (code == REFK_ERROR_UNKNOWN_KERNEL) {
        return "no kernel of that name is compiled into this extension";
    }
    return hipGetErrorString(static_cast<hipError_t>(code));
}
