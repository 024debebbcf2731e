// The AArch64 NEON kernel of the CPU backend's quantized dot products (quant_dot_neon) against
// the portable kernel, built by tests/cross/run_neon_dot_test.sh with the aarch64 cross compiler
// and run under qemu on x86 hosts (on an AArch64 host cpu_backend_tests compares them too).
//
// Random cases cover nibble and byte codes, with and without offsets, spans of 16 and 32, 1 to 9
// blocks of 32 stored rows, 1 to 9 rows (decoded as they go up to 4 rows, widened into scratch
// beyond) and a sub-range of outputs written with a row stride wider than the outputs. The
// integer sums are exact in both kernels, only the order of the fp32 additions differs, so each
// output must agree within 4e-6 of the sum of the magnitudes of its terms (about 30 times the
// fp32 epsilon: enough for every reordering of the at most 2 · 9 + 18 terms here). A second
// set of cases keeps every partial sum an integer below 2^24, where both must agree exactly.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/cpu/quant_dot.h"
#include "engine/backend/cpu/quant_dot_kernels.h"

namespace hearth::cpu {
namespace {

constexpr float kUnwritten = -12345.0f;

// One call's inputs and the buffers behind QuantDotArgs' pointers.
struct Case {
  bool nibbles = false;
  bool with_offsets = false;
  int span = 32;
  int64_t blocks = 1;
  int64_t rows = 1;
  int64_t outputs = 5;
  std::vector<uint8_t> codes;
  std::vector<uint8_t> lut;
  std::vector<float> scales, offsets;
  std::vector<int16_t> xq;
  std::vector<float> xd, xsums;

  int64_t stored_rows() const { return 32 * blocks; }
  int64_t spans() const { return stored_rows() / span; }
  int64_t code_stride() const { return nibbles ? stored_rows() / 2 : stored_rows(); }
};

// Fills a case with random values; `small` keeps every value a small integer (d = 1) so that
// each fp32 sum is exact.
void fill(Case& c, std::mt19937& rng, bool small) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> q_full(-32767, 32767), q_small(-100, 100);
  std::uniform_int_distribution<int> int_scale(-3, 3);
  std::uniform_real_distribution<float> real(-1.0f, 1.0f), positive(1e-4f, 1e-3f);
  c.codes.resize(static_cast<size_t>(c.outputs * c.code_stride()));
  for (uint8_t& u : c.codes) u = static_cast<uint8_t>(byte(rng));
  c.lut.resize(16);
  for (uint8_t& u : c.lut) u = static_cast<uint8_t>(byte(rng));
  c.lut[0] = 0;  // the extremes of u − 128
  c.lut[15] = 255;
  const size_t weight_spans = static_cast<size_t>(c.outputs * c.spans());
  const size_t row_spans = static_cast<size_t>(c.rows * c.spans());
  c.scales.resize(weight_spans);
  for (float& s : c.scales) s = small ? static_cast<float>(int_scale(rng)) : real(rng) * 0.01f;
  c.offsets.clear();
  if (c.with_offsets) {
    c.offsets.resize(weight_spans);
    for (float& o : c.offsets) o = small ? static_cast<float>(int_scale(rng)) : real(rng);
  }
  c.xq.resize(static_cast<size_t>(c.rows * c.stored_rows()));
  for (int16_t& q : c.xq) q = static_cast<int16_t>(small ? q_small(rng) : q_full(rng));
  c.xq[0] = small ? -100 : -32767;  // the extremes of q
  c.xq[1] = small ? 100 : 32767;
  c.xd.resize(static_cast<size_t>(c.rows * c.blocks));
  for (float& d : c.xd) d = small ? 1.0f : positive(rng);
  c.xsums.resize(row_spans);
  for (float& s : c.xsums) s = small ? static_cast<float>(q_small(rng)) : real(rng) * 10.0f;
}

// Runs `kernel` on outputs [n0, n1) into a y of stride outputs + 3, filled with kUnwritten.
std::vector<float> run(const Case& c, void (*kernel)(const QuantDotArgs&), int64_t n0, int64_t n1) {
  std::vector<int16_t> scratch(static_cast<size_t>(c.stored_rows()));
  const int64_t ldy = c.outputs + 3;
  std::vector<float> y(static_cast<size_t>(c.rows * ldy), kUnwritten);
  QuantDotArgs a;
  a.codes = c.codes.data();
  a.code_stride = c.code_stride();
  a.nibbles = c.nibbles;
  a.lut = c.lut.data();
  a.scales = c.scales.data();
  a.offsets = c.with_offsets ? c.offsets.data() : nullptr;
  a.stored_rows = c.stored_rows();
  a.span_rows = c.span;
  a.xq = c.xq.data();
  a.xd = c.xd.data();
  a.xsums = c.xsums.data();
  a.rows = c.rows;
  a.n0 = n0;
  a.n1 = n1;
  a.y = y.data();
  a.ldy = ldy;
  a.scratch = scratch.data();
  kernel(a);
  return y;
}

// Output n's code at stored row s, as u − 128 (what the portable kernel decodes).
int code_value(const Case& c, int64_t n, int64_t s) {
  const uint8_t* codes = c.codes.data() + n * c.code_stride();
  if (!c.nibbles) return codes[s] - 128;
  const int64_t b = s / 32, j = s % 32;
  const uint8_t byte = codes[16 * b + j % 16];
  return c.lut[j < 16 ? byte & 15 : byte >> 4] - 128;
}

// Σ of the magnitudes of output n's terms for row r, in double: the scale of fp32 reordering.
double magnitude(const Case& c, int64_t n, int64_t r) {
  double total = 0.0;
  for (int64_t s = 0; s < c.stored_rows(); ++s) {
    const double scale = c.scales[n * c.spans() + s / c.span];
    const double d = c.xd[r * c.blocks + s / 32];
    total += std::fabs(scale * d * code_value(c, n, s) * c.xq[r * c.stored_rows() + s]);
  }
  if (c.with_offsets) {
    for (int64_t k = 0; k < c.spans(); ++k) {
      total += std::fabs(double(c.offsets[n * c.spans() + k]) * c.xsums[r * c.spans() + k]);
    }
  }
  return total;
}

// Every case, in both value ranges; `check` compares one case's two results.
template <typename Check>
void for_every_case(bool small, Check check) {
  std::mt19937 rng(small ? 7 : 3);
  for (bool nibbles : {false, true}) {
    for (bool with_offsets : {false, true}) {
      for (int span : {32, 16}) {
        for (int64_t blocks : {1, 2, 3, 5, 8, 9}) {
          for (int64_t rows = 1; rows <= 9; ++rows) {
            Case c;
            c.nibbles = nibbles;
            c.with_offsets = with_offsets;
            c.span = span;
            c.blocks = blocks;
            c.rows = rows;
            fill(c, rng, small);
            // Every output, and a sub-range that leaves the first and last unwritten.
            for (int64_t n0 : {0, 1}) {
              const int64_t n1 = c.outputs - n0;
              CAPTURE(nibbles);
              CAPTURE(with_offsets);
              CAPTURE(span);
              CAPTURE(blocks);
              CAPTURE(rows);
              CAPTURE(n0);
              check(c, n0, n1, run(c, quant_dot_portable, n0, n1), run(c, quant_dot_neon, n0, n1));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("neon matches portable within fp32 reordering") {
  double worst = 0.0;
  for_every_case(false, [&](const Case& c, int64_t n0, int64_t n1, const std::vector<float>& want,
                            const std::vector<float>& got) {
    const int64_t ldy = c.outputs + 3;
    for (int64_t r = 0; r < c.rows; ++r) {
      for (int64_t n = 0; n < ldy; ++n) {
        const float w = want[r * ldy + n], g = got[r * ldy + n];
        if (n < n0 || n >= n1) {
          REQUIRE(g == kUnwritten);
          continue;
        }
        const double mag = magnitude(c, n, r);
        CAPTURE(r);
        CAPTURE(n);
        REQUIRE(mag > 0.0);
        const double err = std::fabs(double(g) - w) / mag;
        worst = err > worst ? err : worst;
        REQUIRE(err <= 4e-6);
      }
    }
  });
  MESSAGE("largest |neon - portable| / sum of |terms|: " << worst);
}

TEST_CASE("neon matches portable exactly where every fp32 sum is exact") {
  for_every_case(true, [](const Case& c, int64_t n0, int64_t n1, const std::vector<float>& want,
                          const std::vector<float>& got) {
    // |Σ| ≤ 288 · 128 · 100 · 3 + 9 · 3 · 100 < 2^24: every partial sum is an exact integer.
    const int64_t ldy = c.outputs + 3;
    for (int64_t i = 0; i < c.rows * ldy; ++i) {
      CAPTURE(i);
      REQUIRE(got[i] == want[i]);
      REQUIRE(std::nearbyint(want[i]) == want[i]);
    }
  });
}

// The dispatch: on AArch64 the NEON kernel runs, is the best one, and quant_dot_outputs reaches it.
TEST_CASE("dispatch picks neon") {
  CHECK(cpu_runs(DotKernel::kNeon));
  CHECK_FALSE(cpu_runs(DotKernel::kAvx2));
  CHECK(best_dot_kernel() == DotKernel::kNeon);
  CHECK(std::string(dot_kernel_name(DotKernel::kNeon)) == "neon");

  std::mt19937 rng(11);
  Case c;
  c.nibbles = true;
  c.with_offsets = true;
  c.blocks = 4;
  c.rows = 6;
  fill(c, rng, true);
  Int8Weight w;
  w.in_features = c.stored_rows();
  w.out_features = c.outputs;
  w.stored_rows = c.stored_rows();
  w.span_rows = c.span;
  w.nibbles = true;
  for (int i = 0; i < 16; ++i) w.lut[i] = c.lut[i];
  w.codes = c.codes;
  w.scales = c.scales;
  w.offsets = c.offsets;
  QuantizedRows x;
  x.rows = c.rows;
  x.stored_rows = c.stored_rows();
  x.span_rows = c.span;
  x.q = c.xq;
  x.d = c.xd;
  x.sums = c.xsums;
  std::vector<int16_t> scratch;
  std::vector<float> want(static_cast<size_t>(c.rows * c.outputs)), got(want.size(), kUnwritten);
  quant_dot_outputs(w, x, 0, c.outputs, want.data(), c.outputs, DotKernel::kPortable, scratch);
  quant_dot_outputs(w, x, 0, c.outputs, got.data(), c.outputs, DotKernel::kNeon, scratch);
  CHECK(got == want);
}

}  // namespace
}  // namespace hearth::cpu
