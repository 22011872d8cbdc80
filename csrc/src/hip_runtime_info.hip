// Device queries and error strings for the C binding (host code only).
#include <hip/hip_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>

#include "refkernels.h"

namespace {
// hipGetDeviceCount initialises the HIP runtime: do it once per process and keep the answer.
// (std::call_once is also what makes a build on a new glibc need pthread_once@GLIBC_2.34: the
// symbol the gate's manylinux_2_28 negative test names.)
std::once_flag device_count_once;
int device_count_cached = 0;
hipError_t device_count_error = hipSuccess;
std::string last_error_text;
std::mutex last_error_mutex;
}  // namespace

extern "C" int refk_device_count(int *count) {
    std::call_once(device_count_once, [] {
        device_count_error = hipGetDeviceCount(&device_count_cached);
        if (device_count_error != hipSuccess) {
            device_count_cached = 0;
        }
    });
    *count = device_count_cached;
    return static_cast<int>(device_count_error);
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
    if (code == REFK_ERROR_BAD_TARGET) {
        return "refkErrorBadTarget";
    }
    return hipGetErrorName(static_cast<hipError_t>(code));
}

extern "C" const char *refk_error_string(int code) {
    if (code == REFK_ERROR_UNKNOWN_KERNEL) {
        return "no kernel of that name is compiled into this extension";
    }
    if (code == REFK_ERROR_BAD_TARGET) {
        return "not a target id such as gfx942 or gfx90a:xnack-";
    }
    // keep the text in a process-wide buffer so the C binding can hand out a stable pointer
    std::lock_guard<std::mutex> lock(last_error_mutex);
    last_error_text = std::string(hipGetErrorName(static_cast<hipError_t>(code))) + ": " +
                      hipGetErrorString(static_cast<hipError_t>(code));
    return last_error_text.c_str();
}

// The processor number of a target id ("gfx90a:xnack-" -> 0x90a, "gfx942" -> 0x942) and its
// occupancy weight. Plain C++ as every real project has: std::stoi, sscanf, exp, remainder. Compiled
// against a new glibc (>= 2.38, with _GNU_SOURCE as g++ defines it) these bind
// __isoc23_strtol/__isoc23_sscanf@GLIBC_2.38, exp@GLIBC_2.29 and remainder@GLIBC_2.43 (sid's glibc:
// newer than any policy auditwheel knows): the symbols the compatibility sysroot keeps out of the
// wheel (tests/docker/test_rocm_current_e2e.py).
extern "C" int refk_arch_number(const char *target, long *number, double *weight) {
    char digits[16] = {0};
    if (std::sscanf(target, "gfx%15[0-9a-f]", digits) != 1) {
        return REFK_ERROR_BAD_TARGET;
    }
    try {
        *number = std::stoi(std::string(digits), nullptr, 16);
    } catch (const std::exception &) {
        return REFK_ERROR_BAD_TARGET;
    }
    *weight = 1.0 / (1.0 + std::exp(-std::remainder(static_cast<double>(*number), 16.0)));
    return 0;
}
