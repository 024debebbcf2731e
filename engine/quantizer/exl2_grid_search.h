// The error of every multiplier of the EXL2 scale search (exl2_find_params, docs/FORMATS.md
// §3.4): for multiplier p_i, Σ over the group's rows (in double) of the row's sum in float, in
// column order, of |clamp(rint(w / (s·p_i)), lo, hi)·(s·p_i) − w|^3.5. It was most of the CPU
// quantizer's time (97 divisions and square roots per weight and group setting), so it runs
// with one vector lane per multiplier where the CPU has AVX: each lane adds its terms in the
// scalar loop's order with the same IEEE operations, so both give the same bits.
#pragma once

#include <cstdint>
#include <vector>

namespace hearth {
class ThreadPool;
}

namespace hearth::quantizer {

// errors[i] for i < exl2_grid_size(). `w` points at the group's first row (rows × n, row stride
// `stride`), `scale` holds n column scales. `pool` (optional) spreads the rows over threads;
// the result does not depend on it.
std::vector<double> exl2_grid_errors(const float* w, int64_t rows, int64_t n, int64_t stride,
                                     const float* scale, int bits, ThreadPool* pool = nullptr);

// The same by the scalar loop alone: the reference the vector path is tested against, and the
// path of CPUs without AVX.
std::vector<double> exl2_grid_errors_scalar(const float* w, int64_t rows, int64_t n, int64_t stride,
                                            const float* scale, int bits,
                                            ThreadPool* pool = nullptr);

}  // namespace hearth::quantizer
