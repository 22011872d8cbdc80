// The CPU path of refops' RMSNorm, shared by ops.cpp (TORCH_LIBRARY) and ops_stable.cpp
// (STABLE_TORCH_LIBRARY): it includes no torch header, each caller passes its torch's parallel_for.
#ifndef REFOPS_RMS_NORM_CPU_H
#define REFOPS_RMS_NORM_CPU_H

#include <cmath>
#include <cstdint>

namespace refops {

// out[r, c] = x[r, c] / sqrt(mean_c(x[r, :]^2) + eps) * weight[c], rows split by parallel_for(begin, end,
// grain, f) (at::parallel_for, torch::stable::parallel_for).
template <typename T, typename ParallelFor>
void rms_norm_rows(const T *x, const T *weight, T *out, int64_t rows, int64_t cols, double eps,
                   ParallelFor parallel_for) {
    parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const T *row = x + r * cols;
            T *dst = out + r * cols;
            double acc = 0.0;
            for (int64_t c = 0; c < cols; ++c) {
                acc += static_cast<double>(row[c]) * static_cast<double>(row[c]);
            }
            const double scale = 1.0 / std::sqrt(acc / static_cast<double>(cols) + eps);
            for (int64_t c = 0; c < cols; ++c) {
                dst[c] = static_cast<T>(static_cast<double>(row[c]) * scale) * weight[c];
            }
        }
    });
}

}  // namespace refops

#endif  // REFOPS_RMS_NORM_CPU_H
