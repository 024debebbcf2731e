#include "engine/quantizer/linear_quantizer.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "engine/core/error.h"
#include "engine/core/thread_pool.h"
#include "engine/formats/quantized_linear_loader.h"
#include "engine/quantizer/finite_check.h"
#include "engine/quantizer/memory_tensor_source.h"

namespace hearth::quantizer {
namespace {

// Transposes go in tiles of kTile × kTile so that both the reads and the writes stay in cache
// lines (a plain loop misses on every write of an 8B-sized matrix), row tiles spread over the
// pool. fn(r, c0, c1) handles row r's columns [c0, c1) of one tile.
constexpr int64_t kTile = 64;

template <class Fn>
void for_each_tile(int64_t rows, int64_t cols, ThreadPool& pool, const Fn& fn) {
  pool.parallel_for((rows + kTile - 1) / kTile, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t r0 = t0 * kTile; r0 < std::min(rows, t1 * kTile); r0 += kTile) {
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        const int64_t c1 = std::min(cols, c0 + kTile);
        for (int64_t r = r0; r < std::min(rows, r0 + kTile); ++r) fn(r, c0, c1);
      }
    }
  });
}

// Wp[s][n] = W[n][perm[s]] for n < N, zero for the padded columns N ≤ n < n_pad.
std::vector<float> permuted_transpose(const LinearWeights& w, const std::vector<int32_t>& perm,
                                      int64_t n_pad, ThreadPool& pool) {
  const int64_t K = w.in_features, N = w.out_features;
  std::vector<float> wp(static_cast<size_t>(K * n_pad), 0.0f);
  for_each_tile(K, N, pool, [&](int64_t s, int64_t n0, int64_t n1) {
    const float* src = w.weight.data() + perm[s];
    float* dst = wp.data() + s * n_pad;
    for (int64_t n = n0; n < n1; ++n) dst[n] = src[n * K];
  });
  return wp;
}

// out[c][perm[s]] = deq[s][c]: the reconstruction back in [N, K] and the original input order.
void unpermute(const std::vector<float>& deq, const std::vector<int32_t>& perm, int64_t k,
               int64_t n, int64_t n_pad, ThreadPool& pool, std::vector<float>& out) {
  out.resize(static_cast<size_t>(n * k));
  for_each_tile(n, k, pool, [&](int64_t c, int64_t s0, int64_t s1) {
    float* dst = out.data() + c * k;
    for (int64_t s = s0; s < s1; ++s) dst[perm[s]] = deq[s * n_pad + c];
  });
}

void check_shapes(const LinearWeights& w, const PreparedHessian& h, ThreadPool& pool) {
  HEARTH_CHECK(static_cast<int64_t>(w.weight.size()) == w.out_features * w.in_features,
               w.name + ": weight size");
  HEARTH_CHECK(h.k == w.in_features, w.name + ": Hessian does not match in_features");
  if (!all_finite(w.weight, pool)) {
    fail(ErrorCode::kInvalidFile, w.name + ": weight holds NaN or inf");
  }
}

// GPTQ of one linear, on the runner when there is one, else on the CPU (with the transposes
// to and from its permuted [K, n_pad] working layout here).
GptqLinearResult run_gptq(const LinearWeights& w, const PreparedHessian& h, int64_t n_pad,
                          const std::vector<GptqGroupSpec>& groups, GroupQuantizerKind kind,
                          const FindParams& find, bool want_codes, ThreadPool& pool,
                          const GptqRunner& runner, PhaseTimes* times, std::vector<float> storage) {
  const int64_t K = w.in_features, N = w.out_features;
  if (runner) {
    auto t = time_phase(times, "gptq");
    return runner(w, n_pad, h, groups, kind, want_codes, std::move(storage));
  }
  std::vector<float> wp;
  {
    auto t = time_phase(times, "transpose");
    wp = permuted_transpose(w, h.perm, n_pad, pool);
  }
  GptqResult r;
  {
    auto t = time_phase(times, "gptq");
    r = gptq_quantize(wp, K, n_pad, h.hinv_upper, groups, find, pool);
  }
  GptqLinearResult out;
  {
    auto t = time_phase(times, "transpose");
    out.reconstruction = std::move(storage);
    unpermute(r.dequantized, h.perm, K, N, n_pad, pool, out.reconstruction);
  }
  if (want_codes) out.codes = std::move(r.codes);
  out.params = std::move(r.params);
  out.proxy_error = r.proxy_error;
  return out;
}

}  // namespace

uint64_t next_weights_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

QuantizedLinear quantize_linear_exl2(const LinearWeights& w, const PreparedHessian& h,
                                     const Exl2QParams& qp, bool pack, ThreadPool& pool,
                                     const GptqRunner& runner, PhaseTimes* times,
                                     std::vector<float> storage) {
  check_shapes(w, h, pool);
  const int64_t K = w.in_features, N = w.out_features;
  const int64_t n_pad = (N + 31) / 32 * 32;
  std::vector<Exl2Group> layout = exl2_group_layout(qp, K);
  std::vector<GptqGroupSpec> groups;
  for (const auto& g : layout) groups.push_back({g.row_begin, g.rows, g.bits});
  FindParams find = [&pool](const float* x, int64_t rows, int64_t n, int bits) {
    return exl2_find_params(x, rows, n, n, bits, &pool);
  };
  GptqLinearResult r = run_gptq(w, h, n_pad, groups, GroupQuantizerKind::kExl2, find, pack, pool,
                                runner, times, std::move(storage));
  QuantizedLinear out;
  out.reconstruction = std::move(r.reconstruction);
  out.proxy_error = r.proxy_error;
  out.total_bits = exl2_total_bits(qp, K, N, w.bias ? N : 0);
  if (pack) {
    auto t = time_phase(times, "pack");
    std::optional<std::vector<float>> bias;
    if (w.bias) {
      bias = *w.bias;
      bias->resize(static_cast<size_t>(n_pad), 0.0f);
    }
    out.tensors = pack_exl2(w.name, K, n_pad, r.codes, groups, r.params, h.perm, bias);
    verify_packed_layer(w.name, "exl2", out.tensors, N, K, out.reconstruction);
  }
  return out;
}

QuantizedLinear quantize_linear_gptq(const LinearWeights& w, const PreparedHessian& h,
                                     const GptqSettings& s, bool pack, ThreadPool& pool,
                                     const GptqRunner& runner, PhaseTimes* times) {
  check_shapes(w, h, pool);
  const int64_t K = w.in_features, N = w.out_features;
  if (s.bits != 2 && s.bits != 3 && s.bits != 4 && s.bits != 8) {
    fail(ErrorCode::kInvalidArgument, "GPTQ bits must be 2, 3, 4 or 8");
  }
  const int64_t gs = s.group_size <= 0 ? K : s.group_size;
  std::vector<GptqGroupSpec> groups;
  for (int64_t r = 0; r < K; r += gs) groups.push_back({r, std::min(gs, K - r), s.bits});
  const bool sym = s.symmetric;
  FindParams find = [sym](const float* x, int64_t rows, int64_t n, int bits) {
    return gptq_find_params(x, rows, n, n, bits, sym);
  };
  GptqLinearResult r =
      run_gptq(w, h, N, groups,
               sym ? GroupQuantizerKind::kGptqSymmetric : GroupQuantizerKind::kGptqAsymmetric, find,
               pack, pool, runner, times, {});
  QuantizedLinear out;
  out.reconstruction = std::move(r.reconstruction);
  out.proxy_error = r.proxy_error;
  const auto G = static_cast<int64_t>(groups.size());
  out.total_bits = K * N * s.bits + G * N * (16 + s.bits) + K * 32 + (w.bias ? N * 16 : 0);
  if (pack) {
    auto t = time_phase(times, "pack");
    out.tensors = pack_gptq(w.name, K, N, s.bits, r.codes, groups, r.params, h.perm, w.bias);
    verify_packed_layer(w.name, "gptq", out.tensors, N, K, out.reconstruction);
  }
  return out;
}

void verify_packed_layer(const std::string& name, const std::string& format,
                         const PackedTensors& tensors, int64_t out_features, int64_t in_features,
                         const std::vector<float>& reconstruction) {
  MemoryTensorSource src;
  for (const auto& [tname, t] : tensors) src.put(tname, t);
  QuantizedLinearOptions opt;
  opt.out_features = out_features;
  opt.in_features = in_features;
  if (format == "gptq") {
    opt.quantization_config_json = R"({"quant_method":"gptq","checkpoint_format":"gptq"})";
  }
  std::shared_ptr<const QuantizedWeight> q;
  try {
    q = load_quantized_linear(src, name, opt);
  } catch (const Error& e) {
    fail(ErrorCode::kInternal, name + ": the packed layer does not load: " + e.what());
  }
  if (q->format() != format || q->out_features() != out_features ||
      q->in_features() != in_features) {
    fail(ErrorCode::kInternal, name + ": the packed layer reads back with the wrong shape");
  }
  const int64_t K = in_features;
  constexpr int64_t kRows = 64;
  std::vector<float> buf(static_cast<size_t>(kRows * K));
  for (int64_t n0 = 0; n0 < out_features; n0 += kRows) {
    const int64_t n1 = std::min(out_features, n0 + kRows);
    q->dequantize_rows(n0, n1, buf.data());
    const float* want = reconstruction.data() + n0 * K;
    if (std::memcmp(buf.data(), want, static_cast<size_t>((n1 - n0) * K) * sizeof(float)) != 0) {
      for (int64_t i = 0; i < (n1 - n0) * K; ++i) {
        if (buf[i] != want[i]) {
          fail(ErrorCode::kInternal,
               name + ": the packed layer does not reproduce its reconstruction at output " +
                   std::to_string(n0 + i / K) + ", input " + std::to_string(i % K) + " (" +
                   std::to_string(buf[i]) + " read back, " + std::to_string(want[i]) +
                   " computed)");
        }
      }
    }
  }
}

double relative_weight_error(const std::vector<float>& w, const std::vector<float>& w_hat) {
  double num = 0, den = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const double d = static_cast<double>(w_hat[i]) - w[i];
    num += d * d;
    den += static_cast<double>(w[i]) * w[i];
  }
  return den > 0 ? std::sqrt(num / den) : 0.0;
}

}  // namespace hearth::quantizer
