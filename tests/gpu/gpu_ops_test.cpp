// Every CUDA op against the CPU reference backend, through the Backend interface, on random
// inputs and edge shapes. Tolerances (GPU fp16 activations vs CPU fp32):
//   embed, gather_logit_rows          exact (inputs are fp16 values)
//   rms_norm, add_rms_norm, rope,
//   silu_mul                          |err| <= 1e-3 |ref| + 1e-3 elementwise (one fp16 rounding)
//   linear                            NMSE <= 1e-5, |err| <= 4e-3 max|ref| (fp32 accumulation)
//   attention                         NMSE <= 5e-4, |err| <= 1.5e-3 (TESTING.md's numerical
//                                     gates ask atol 1e-3 of fp32 outputs; the GPU's output is
//                                     fp16, whose rounding alone is up to 4.9e-4 below 1,
//                                     and P is rounded to fp16 before P·V as in
//                                     FlashAttention)
//   sample                            identical token ids
// bf16 runs use 8x the fp16 element tolerances (bf16 keeps 8 bits of mantissa, fp16 11).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/core/error.h"
#include "engine/sampling/sampler.h"
#include "kernels/kernels.h"
#include "tests/gpu/gpu_test_util.h"

namespace hearth {
namespace {

using gpu_test::compare;
using gpu_test::first_outside;
using gpu_test::load;
using gpu_test::random_values;
using gpu_test::TestBatch;
using Keep = std::vector<std::unique_ptr<BackendWeight>>;

class GpuOps : public ::testing::Test {
 protected:
  void SetUp() override {
    HEARTH_REQUIRE_GPU();
    cpu = create_cpu_backend(0);
    gpu = create_cuda_backend({});
  }
  std::unique_ptr<Backend> cpu, gpu;
};

TestBatch one_sequence(int64_t rows, int32_t start_pos = 0) {
  TestBatch b;
  TestBatch::Seq s;
  s.start_pos = start_pos;
  s.count = static_cast<int32_t>(rows);
  s.pages = std::vector<int32_t>(static_cast<size_t>((start_pos + rows) / 16 + 1), 0);
  b.seqs.push_back(s);
  return b;
}

// ---- embed ----
TEST_F(GpuOps, EmbedGathersRowsAndZeroesIdsOutsideTheTable) {
  for (int64_t cols : {576, 999, 4096}) {
    const int64_t rows = 37;
    const int64_t vocab = rows - 2;  // the last two rows' ids fall outside the table
    const auto table = random_values(static_cast<size_t>(vocab * cols), 1, 1.0f);
    auto run = [&](Backend& b) {
      TestBatch batch = one_sequence(rows);
      DeviceTensor out = b.alloc_activation(rows, cols);
      const PreparedBatch p = b.prepare_batch(batch.desc());
      Keep keep;
      load(b, table, vocab, cols, out, p.tokens, keep);
      return b.read(out, rows);
    };
    const auto got = run(*gpu);
    const auto ref = run(*cpu);
    EXPECT_EQ(got, ref) << "cols " << cols;
  }
}

// ---- RMSNorm ----
// Rows of up to 4 pieces a thread (kept in registers between the passes) and of more (20,000 at
// 512 threads: the rest read again).
TEST_F(GpuOps, RmsNormMatchesReference) {
  for (int64_t cols : {64, 576, 999, 4096, 8192, 20000}) {
    for (int64_t rows : {1, 7, 64}) {
      const auto x = random_values(static_cast<size_t>(rows * cols), cols + rows, 2.0f);
      auto w = random_values(static_cast<size_t>(cols), 7, 0.5f);
      for (auto& v : w) v += 1.0f;
      auto run = [&](Backend& b) {
        TestBatch batch = one_sequence(rows);
        DeviceTensor in = b.alloc_activation(rows, cols);
        DeviceTensor out = b.alloc_activation(rows, cols);
        const PreparedBatch p = b.prepare_batch(batch.desc());
        Keep keep;
        load(b, x, rows, cols, in, p.tokens, keep);
        auto weight = b.upload(HostTensor::from_floats(w, {cols}));
        b.rms_norm(in.first_rows(p.tokens), *weight, 1e-5f, out.first_rows(p.tokens));
        return b.read(out, rows);
      };
      const auto got = run(*gpu);
      const auto ref = run(*cpu);
      EXPECT_EQ(first_outside(got, ref, 1e-3, 1e-3), -1)
          << "rows " << rows << " cols " << cols << ": " << compare(got, ref).str();
    }
  }
}

TEST_F(GpuOps, AddRmsNormUpdatesResidualAndNormalises) {
  for (int64_t cols : {576, 1001, 4096, 20000}) {
    const int64_t rows = 9;
    const auto x = random_values(static_cast<size_t>(rows * cols), 11, 3.0f);
    const auto d = random_values(static_cast<size_t>(rows * cols), 12, 3.0f);
    auto w = random_values(static_cast<size_t>(cols), 13, 0.5f);
    for (auto& v : w) v += 1.0f;
    auto run = [&](Backend& b) {
      TestBatch batch = one_sequence(rows);
      DeviceTensor res = b.alloc_activation(rows, cols);
      DeviceTensor delta = b.alloc_activation(rows, cols);
      DeviceTensor out = b.alloc_activation(rows, cols);
      const PreparedBatch p = b.prepare_batch(batch.desc());
      Keep keep;
      load(b, x, rows, cols, res, p.tokens, keep);
      load(b, d, rows, cols, delta, p.tokens, keep);
      auto weight = b.upload(HostTensor::from_floats(w, {cols}));
      b.add_rms_norm(res.first_rows(p.tokens), delta.first_rows(p.tokens), *weight, 1e-6f,
                     out.first_rows(p.tokens));
      auto r = b.read(res, rows);
      auto o = b.read(out, rows);
      r.insert(r.end(), o.begin(), o.end());
      return r;
    };
    const auto got = run(*gpu);
    const auto ref = run(*cpu);
    EXPECT_EQ(first_outside(got, ref, 1e-3, 1e-3), -1)
        << "cols " << cols << ": " << compare(got, ref).str();
  }
}

// ---- linear ----
struct LinearCase {
  int64_t n, k, rows;
  bool bias;
  DType weight_dtype;
};

std::vector<float> run_linear(Backend& b, const LinearCase& c, const std::vector<float>& x,
                              const std::vector<float>& w, const std::vector<float>& bias) {
  TestBatch batch = one_sequence(c.rows);
  DeviceTensor in = b.alloc_activation(c.rows, c.k);
  DeviceTensor out = b.alloc_activation(c.rows, c.n);
  const PreparedBatch p = b.prepare_batch(batch.desc());
  Keep keep;
  load(b, x, c.rows, c.k, in, p.tokens, keep);
  LinearSource src;
  src.name = "test";
  HostTensor wt = HostTensor::allocate(c.weight_dtype, {c.n, c.k});
  for (size_t i = 0; i < w.size(); ++i) {
    if (c.weight_dtype == DType::kF32) static_cast<float*>(wt.mutable_data())[i] = w[i];
    if (c.weight_dtype == DType::kF16) {
      static_cast<uint16_t*>(wt.mutable_data())[i] = float_to_half(w[i]);
    }
    if (c.weight_dtype == DType::kBF16) {
      static_cast<uint16_t*>(wt.mutable_data())[i] = float_to_bf16(w[i]);
    }
  }
  src.weight = wt;
  if (c.bias) src.bias = HostTensor::from_floats(bias, {c.n});
  auto lw = b.upload_linear(src);
  b.linear(*lw, in.first_rows(p.tokens), out.first_rows(p.tokens));
  return b.read(out, c.rows);
}

TEST_F(GpuOps, LinearMatchesReferenceAcrossShapesAndRowCounts) {
  const std::vector<LinearCase> cases = {
      {64, 64, 1, false, DType::kF16},      {1000, 576, 1, true, DType::kF16},
      {576, 1000, 3, false, DType::kF16},   {1027, 1536, 8, false, DType::kF16},
      {1027, 1536, 9, true, DType::kF16},   {2048, 4096, 1, false, DType::kF16},
      {2048, 4096, 17, false, DType::kF16}, {512, 14336, 1, false, DType::kF16},
      {512, 14336, 32, false, DType::kF16}, {1024, 4096, 33, false, DType::kF16},
      {1024, 4096, 64, false, DType::kF16}, {4096, 1024, 100, true, DType::kF16},
      {32000, 512, 2, false, DType::kF16},  {32000, 512, 300, false, DType::kF16},
      {256, 100, 1, false, DType::kF16},    {255, 99, 5, true, DType::kF16},
      {1000, 576, 4, false, DType::kF32},   {1000, 576, 4, true, DType::kBF16},
      {14336, 4096, 1, false, DType::kF16},
  };
  // The default backend (row GEMV for one row, cuBLAS above) and one that sends up to 64 rows
  // to the tensor-core GEMV.
  CudaBackendOptions mma_options;
  mma_options.gemv_max_rows = 64;
  auto mma = create_cuda_backend(mma_options);
  for (Backend* g : {gpu.get(), mma.get()}) {
    for (const LinearCase& c : cases) {
      const float scale = 1.0f / std::sqrt(static_cast<float>(c.k));
      const auto x = random_values(static_cast<size_t>(c.rows * c.k), c.n + 3 * c.k, 1.0f);
      const auto w = random_values(static_cast<size_t>(c.n * c.k), c.k, scale * 1.7f,
                                   c.weight_dtype == DType::kBF16 ? DType::kBF16 : DType::kF16);
      const auto bias = random_values(static_cast<size_t>(c.n), 99, 0.5f);
      const auto got = run_linear(*g, c, x, w, bias);
      const auto ref = run_linear(*cpu, c, x, w, bias);
      const auto d = compare(got, ref);
      EXPECT_TRUE(d.finite && d.nmse <= 1e-5 && d.max_abs <= 4e-3 * d.max_ref)
          << (g == gpu.get() ? "default" : "tensor-core GEMV") << " N " << c.n << " K " << c.k
          << " R " << c.rows << " " << dtype_name(c.weight_dtype) << (c.bias ? " +bias" : "")
          << ": " << d.str();
    }
  }
}

// A row's result does not depend on how many other rows share the product (decode batches).
// With the tensor-core GEMV (gemv_max_rows >= 2) the split-K does not depend on R.
TEST_F(GpuOps, TensorCoreGemvRowsAreBatchInvariant) {
  CudaBackendOptions o;
  o.gemv_max_rows = 32;
  auto mma = create_cuda_backend(o);
  const LinearCase big{4096, 4096, 32, false, DType::kF16};
  const auto x = random_values(static_cast<size_t>(32 * 4096), 5, 1.0f);
  const auto w = random_values(static_cast<size_t>(4096 * 4096), 6, 0.03f);
  const auto all = run_linear(*mma, big, x, w, {});
  for (int64_t rows : {2, 5, 8, 16}) {
    LinearCase c = big;
    c.rows = rows;
    const auto part =
        run_linear(*mma, c, std::vector<float>(x.begin(), x.begin() + rows * 4096), w, {});
    EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin())) << "rows " << rows;
  }
}

// ---- RoPE ----
// The plain (unscaled) frequency table: theta^(-2i / rotary_dim).
std::vector<float> rope_inv_freq(int64_t rotary_dim, double theta) {
  std::vector<float> inv(static_cast<size_t>(rotary_dim / 2));
  for (size_t i = 0; i < inv.size(); ++i) {
    inv[i] = static_cast<float>(
        1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(rotary_dim)));
  }
  return inv;
}

TEST_F(GpuOps, RopeMatchesReferenceIncludingLargePositionsAndPartialRotation) {
  struct Case {
    int64_t heads, kv_heads, head_dim, rotary_dim;
    float factor;
    double theta;
  };
  // Two pairs a thread where rotary_dim / 2 is even (all but the last case); the last takes the
  // one-pair kernel.
  for (const Case& c : {Case{8, 2, 64, 64, 1.0f, 1e4}, Case{4, 4, 128, 64, 1.25f, 5e5},
                        Case{9, 3, 64, 32, 1.0f, 1e5}, Case{8, 2, 128, 128, 1.0f, 5e5},
                        Case{3, 1, 68, 34, 1.0f, 1e4}}) {
    const std::vector<float> inv = rope_inv_freq(c.rotary_dim, c.theta);
    TestBatch batch;
    batch.seqs.push_back({0, 20, std::vector<int32_t>(4, 0), false});
    batch.seqs.push_back({70000, 13, std::vector<int32_t>(5000, 0), false});
    batch.seqs.push_back({4095, 2, std::vector<int32_t>(300, 0), false});
    const int64_t rows = batch.rows();
    const int64_t qc = c.heads * c.head_dim, kc = c.kv_heads * c.head_dim;
    const auto q = random_values(static_cast<size_t>(rows * qc), 21, 2.0f);
    const auto k = random_values(static_cast<size_t>(rows * kc), 22, 2.0f);
    auto run = [&](Backend& b) {
      DeviceTensor tq = b.alloc_activation(rows, qc);
      DeviceTensor tk = b.alloc_activation(rows, kc);
      const PreparedBatch p = b.prepare_batch(batch.desc());
      Keep keep;
      load(b, q, rows, qc, tq, p.tokens, keep);
      load(b, k, rows, kc, tk, p.tokens, keep);
      auto table = b.upload(HostTensor::from_floats(inv, {static_cast<int64_t>(inv.size())}));
      RopeParams rp{table.get(), c.factor, c.head_dim, c.rotary_dim};
      b.rope(tq.first_rows(p.tokens), tk.first_rows(p.tokens), rp);
      auto out = b.read(tq, rows);
      const auto ko = b.read(tk, rows);
      out.insert(out.end(), ko.begin(), ko.end());
      return out;
    };
    const auto got = run(*gpu);
    const auto ref = run(*cpu);
    EXPECT_EQ(first_outside(got, ref, 2e-3, 2e-3), -1)
        << "head_dim " << c.head_dim << " rotary " << c.rotary_dim << ": "
        << compare(got, ref).str();
  }
}

// ---- SwiGLU ----
TEST_F(GpuOps, SiluMulMatchesReferenceInPlaceToo) {
  for (int64_t cols : {14336, 1000, 999}) {
    const int64_t rows = 5;
    const auto g = random_values(static_cast<size_t>(rows * cols), 31, 6.0f);
    const auto u = random_values(static_cast<size_t>(rows * cols), 32, 3.0f);
    auto run = [&](Backend& b) {
      TestBatch batch = one_sequence(rows);
      DeviceTensor tg = b.alloc_activation(rows, cols);
      DeviceTensor tu = b.alloc_activation(rows, cols);
      const PreparedBatch p = b.prepare_batch(batch.desc());
      Keep keep;
      load(b, g, rows, cols, tg, p.tokens, keep);
      load(b, u, rows, cols, tu, p.tokens, keep);
      b.silu_mul(tg.first_rows(p.tokens), tu.first_rows(p.tokens), tg.first_rows(p.tokens));
      return b.read(tg, rows);
    };
    const auto got = run(*gpu);
    const auto ref = run(*cpu);
    EXPECT_EQ(first_outside(got, ref, 1e-3, 1e-3), -1)
        << "cols " << cols << ": " << compare(got, ref).str();
  }
}

// The quantizer's measurement sums a candidate's output error on the device: the sum of squares
// of the fp16 tensors' difference equals the one the CPU computes from the same fp16 values
// (within double rounding), and is the same value on every call (fixed summation order).
TEST_F(GpuOps, SquaredDistanceMatchesTheCpuAndRepeats) {
  for (int64_t cols : {4096, 1000, 3}) {
    for (int64_t rows : {1, 7}) {
      const auto av = random_values(static_cast<size_t>(rows * cols), 61 + rows, 4.0f);
      const auto bv = random_values(static_cast<size_t>(rows * cols), 62 + rows, 4.0f);
      TestBatch batch = one_sequence(rows);
      DeviceTensor ta = gpu->alloc_activation(rows, cols);
      DeviceTensor tb = gpu->alloc_activation(rows, cols);
      const PreparedBatch p = gpu->prepare_batch(batch.desc());
      Keep keep;
      load(*gpu, av, rows, cols, ta, p.tokens, keep);
      load(*gpu, bv, rows, cols, tb, p.tokens, keep);
      const double got = gpu->squared_distance(ta, tb, rows);
      EXPECT_EQ(got, gpu->squared_distance(ta, tb, rows)) << cols << " x " << rows;
      // The reference from the values the GPU holds (fp16), summed in double on the host.
      const auto a16 = gpu->read(ta, rows), b16 = gpu->read(tb, rows);
      double want = 0;
      for (size_t i = 0; i < a16.size(); ++i) {
        const double d = static_cast<double>(a16[i]) - b16[i];
        want += d * d;
      }
      EXPECT_NEAR(got, want, 1e-12 * want) << cols << " x " << rows;
      EXPECT_EQ(gpu->squared_distance(ta, ta, rows), 0.0);
    }
  }
}

// ---- logit rows ----
TEST_F(GpuOps, GatherLogitRowsPicksLastOrAllRows) {
  TestBatch batch;
  batch.seqs.push_back({0, 5, {0}, false});
  batch.seqs.push_back({3, 4, {1}, true});
  batch.seqs.push_back({0, 1, {2}, false});
  const int64_t rows = batch.rows(), cols = 1001;
  const auto x = random_values(static_cast<size_t>(rows * cols), 41, 1.0f);
  auto run = [&](Backend& b) {
    DeviceTensor in = b.alloc_activation(rows, cols);
    DeviceTensor out = b.alloc_activation(8, cols);
    const PreparedBatch p = b.prepare_batch(batch.desc());
    EXPECT_EQ(p.logit_rows, 6);
    Keep keep;
    load(b, x, rows, cols, in, p.tokens, keep);
    b.gather_logit_rows(in.first_rows(p.tokens), out.first_rows(p.logit_rows));
    return b.read(out, 6);
  };
  EXPECT_EQ(run(*gpu), run(*cpu));
}

// ---- attention ----
struct AttnCase {
  const char* name;
  int64_t heads, kv_heads, head_dim, page_size;
  std::vector<int32_t> prompt;  // first step: each sequence's prompt (one batch, mixed lengths)
  std::vector<int32_t> chunk;   // second step: more tokens per sequence
  int decode_steps;             // then steps of one token per sequence
};

class GpuAttention : public GpuOps, public ::testing::WithParamInterface<AttnCase> {};

// RoPE applied to q and k before each attention call (the CUDA backend's decode steps fold it
// into the attention kernel).
struct AttnRope {
  int64_t rotary_dim;
  float factor;
  double theta;
  std::vector<float> inv_freq() const { return rope_inv_freq(rotary_dim, theta); }
};

// The attention outputs of every step of the case (prefill, chunk, decode steps).
std::vector<std::vector<float>> attention_outputs(const AttnCase& c, Backend& b,
                                                  const AttnRope* rope = nullptr,
                                                  KvCacheType type = KvCacheType::kF16) {
  const size_t S = c.prompt.size();
  std::vector<int32_t> total(S);
  int64_t pages_needed = 0;
  for (size_t s = 0; s < S; ++s) {
    total[s] = c.prompt[s] + c.chunk[s] + c.decode_steps;
    pages_needed += (total[s] + c.page_size - 1) / c.page_size;
  }
  // Scattered pages: sequence s gets a shuffled, non-contiguous set.
  std::vector<int32_t> ids(static_cast<size_t>(pages_needed + 5));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(7));
  std::vector<std::vector<int32_t>> tables(S);
  size_t next = 0;
  for (size_t s = 0; s < S; ++s) {
    for (int64_t i = 0; i < (total[s] + c.page_size - 1) / c.page_size; ++i) {
      tables[s].push_back(ids[next++]);
    }
  }
  KvCacheSpec spec;
  spec.num_layers = 2;
  spec.num_kv_heads = c.kv_heads;
  spec.head_dim = c.head_dim;
  spec.page_size = c.page_size;
  spec.num_pages = static_cast<int64_t>(ids.size());
  spec.type = type;
  AttentionParams ap;
  ap.layer = 1;
  ap.num_heads = c.heads;
  ap.num_kv_heads = c.kv_heads;
  ap.head_dim = c.head_dim;
  ap.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));

  std::vector<TestBatch> steps;
  {
    TestBatch b;
    for (size_t s = 0; s < S; ++s) b.seqs.push_back({0, c.prompt[s], tables[s], false});
    steps.push_back(b);
    TestBatch b2;
    for (size_t s = 0; s < S; ++s) b2.seqs.push_back({c.prompt[s], c.chunk[s], tables[s], false});
    steps.push_back(b2);
    for (int d = 0; d < c.decode_steps; ++d) {
      TestBatch b3;
      for (size_t s = 0; s < S; ++s) {
        b3.seqs.push_back({c.prompt[s] + c.chunk[s] + d, 1, tables[s], false});
      }
      steps.push_back(b3);
    }
  }
  int64_t max_rows = 0;
  for (const auto& b : steps) max_rows = std::max(max_rows, b.rows());
  const int64_t qc = c.heads * c.head_dim, kc = c.kv_heads * c.head_dim;

  {
    auto cache = b.create_kv_cache(spec);
    if (cache->offsets_keys()) {
      // Key offsets, as a loaded model's quantized cache has them: the backends store the same
      // codes and attention is unchanged by them (KvCacheStorage::set_key_offsets).
      cache->set_key_offsets(random_values(static_cast<size_t>(2 * kc), 17, 0.5f));
    }
    DeviceTensor q = b.alloc_activation(max_rows, qc);
    DeviceTensor k = b.alloc_activation(max_rows, kc);
    DeviceTensor v = b.alloc_activation(max_rows, kc);
    DeviceTensor out = b.alloc_activation(max_rows, qc);
    std::unique_ptr<BackendWeight> table;
    RopeParams rp;
    if (rope) {
      const auto inv = rope->inv_freq();
      table = b.upload(HostTensor::from_floats(inv, {static_cast<int64_t>(inv.size())}));
      rp = RopeParams{table.get(), rope->factor, c.head_dim, rope->rotary_dim};
    }
    std::vector<std::vector<float>> outputs;
    for (size_t i = 0; i < steps.size(); ++i) {
      TestBatch batch = steps[i];
      const int64_t rows = batch.rows();
      const PreparedBatch p = b.prepare_batch(batch.desc());
      Keep keep;
      load(b, random_values(static_cast<size_t>(rows * qc), 100 + i, 1.0f), rows, qc, q, p.tokens,
           keep);
      load(b, random_values(static_cast<size_t>(rows * kc), 200 + i, 1.0f), rows, kc, k, p.tokens,
           keep);
      load(b, random_values(static_cast<size_t>(rows * kc), 300 + i, 1.0f), rows, kc, v, p.tokens,
           keep);
      if (rope) b.rope(q.first_rows(p.tokens), k.first_rows(p.tokens), rp);
      b.attention(q.first_rows(p.tokens), k.first_rows(p.tokens), v.first_rows(p.tokens), *cache,
                  ap, out.first_rows(p.tokens));
      outputs.push_back(b.read(out, rows));
    }
    return outputs;
  }
}

void run_attention_case(const AttnCase& c, Backend& gpu, Backend& cpu, double atol,
                        const AttnRope* rope = nullptr, KvCacheType type = KvCacheType::kF16) {
  const auto got = attention_outputs(c, gpu, rope, type);
  const auto ref = attention_outputs(c, cpu, rope, type);
  ASSERT_EQ(got.size(), ref.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const auto d = compare(got[i], ref[i]);
    worst = std::max(worst, d.max_abs);
    EXPECT_TRUE(d.finite && d.nmse <= 5e-4 && d.max_abs <= atol) << c.name << " step " << i
                                                                 << (i == 0   ? " (prefill)"
                                                                     : i == 1 ? " (chunk)"
                                                                              : " (decode)")
                                                                 << ": " << d.str();
  }
  std::printf("[ attention %s %s ] max |err| %.3g over %zu steps\n", c.name,
              kv_cache_type_name(type), worst, got.size());
}

TEST_P(GpuAttention, MatchesReferenceOverPagedCache) {
  run_attention_case(GetParam(), *gpu, *cpu, 1.5e-3);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GpuAttention,
    ::testing::Values(
        AttnCase{"d64_gqa4_page16", 8, 2, 64, 16, {1, 15, 16, 17, 100}, {3, 1, 40, 16, 2}, 3},
        AttnCase{"d128_mha_page64", 4, 4, 128, 64, {1, 63, 64, 65, 200}, {1, 2, 64, 1, 70}, 3},
        AttnCase{"d64_gqa8_page256", 16, 2, 64, 256, {300, 5}, {260, 1}, 2},
        AttnCase{"d64_gqa3_page32", 9, 3, 64, 32, {33, 7, 64}, {1, 31, 2}, 2},
        AttnCase{"d128_gqa4_long", 32, 8, 128, 256, {1000}, {24}, 2},
        AttnCase{"d128_gqa4_very_long", 8, 2, 128, 256, {2000, 1}, {1100, 3}, 2},
        AttnCase{"d96_generic", 6, 2, 96, 16, {20, 3}, {5, 1}, 2},
        // A burst of short chunks after long prompts (a shared prefix's followers): blocks of
        // (query, head) rows mostly beyond the chunks' own queries.
        AttnCase{
            "d128_gqa4_burst", 32, 8, 128, 64, {700, 700, 700, 700, 700}, {64, 37, 1, 64, 9}, 2},
        AttnCase{"d64_single_token", 2, 1, 64, 16, {1}, {1}, 4}),
    [](const ::testing::TestParamInfo<AttnCase>& info) { return std::string(info.param.name); });

// The prefill kernel's blocks (CudaBackendOptions::attention_warps, attention_warp_tiles): 64 to
// 256 (query, head) rows, one or two MMA tiles a warp. Each matches the CPU, and all give the same
// bits, since a row meets the same key tiles in the same order in any of them (tiles past its
// position add exactly zero): over an fp16 cache and a q4 one, GQA groups of 4 and 3, bursts of
// short chunks after long prompts.
TEST_F(GpuOps, AttentionBlocksMatchTheCpuAndGiveTheSameBits) {
  const AttnCase cases[] = {
      AttnCase{"blk_d128_gqa4", 8, 2, 128, 64, {300, 1, 129}, {5, 200, 1}, 2},
      AttnCase{"blk_d64_gqa3", 9, 3, 64, 16, {130, 17}, {1, 140}, 2},
      AttnCase{"blk_d128_gqa4_burst", 32, 8, 128, 64, {700, 700, 700}, {64, 33, 5}, 1},
      AttnCase{"blk_d128_mha_long", 4, 4, 128, 256, {1100}, {300}, 1}};
  const std::pair<int, int> blocks[] = {{4, 1}, {8, 1}, {4, 2}, {8, 2}};  // warps, tiles
  for (KvCacheType type : {KvCacheType::kF16, KvCacheType::kQ4}) {
    for (const AttnCase& c : cases) {
      std::vector<std::vector<float>> first;
      for (const auto& [warps, tiles] : blocks) {
        SCOPED_TRACE(std::string(c.name) + " " + kv_cache_type_name(type) + " " +
                     std::to_string(warps) + "x" + std::to_string(tiles));
        CudaBackendOptions o;
        o.attention_warps = warps;
        o.attention_warp_tiles = tiles;
        auto backend = create_cuda_backend(o);
        run_attention_case(c, *backend, *cpu, type == KvCacheType::kF16 ? 1.5e-3 : 3e-3, nullptr,
                           type);
        const auto got = attention_outputs(c, *backend, nullptr, type);
        if (first.empty()) {
          first = got;
          continue;
        }
        ASSERT_EQ(got.size(), first.size());
        for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], first[i]) << "step " << i;
      }
    }
  }
}

// Prefill on Hopper's warpgroup MMA (CudaBackendOptions::attention_warpgroup_mma, where the device
// runs sm_90a code): blocks of one and two warpgroups (64 and 128 rows) match the CPU and give
// each other's bits (a row meets the same key tiles in the same order in both), in fp16 and
// bf16, over GQA groups of 4 and 3 and MHA, head_dim 64 and 128, pages of 16 to 256 positions,
// bursts of short chunks after long prompts. A quantized cache keeps the mma.sync kernel: the
// option changes none of its bits.
TEST_F(GpuOps, WarpgroupMmaAttentionMatchesTheCpuAndGivesTheSameBits) {
  if (!kernels::wgmma_supported()) GTEST_SKIP() << "this GPU does not run the sm_90a kernels";
  const AttnCase cases[] = {
      AttnCase{"wg_d128_gqa4", 8, 2, 128, 64, {300, 1, 129}, {5, 200, 1}, 2},
      AttnCase{"wg_d64_gqa3", 9, 3, 64, 16, {130, 17}, {1, 140}, 2},
      AttnCase{"wg_d128_gqa4_burst", 32, 8, 128, 64, {700, 700, 700}, {64, 33, 5}, 1},
      AttnCase{"wg_d128_mha_long", 4, 4, 128, 256, {1100}, {300}, 1},
      AttnCase{"wg_d64_mha_pages16", 4, 4, 64, 16, {517, 3}, {60, 250}, 1},
      AttnCase{"wg_d64_gqa4_pages64", 8, 2, 64, 64, {300, 1, 129}, {5, 200, 1}, 1},
      AttnCase{"wg_d128_gqa3_pages16", 9, 3, 128, 16, {130, 17}, {1, 140}, 1}};
  for (const DType dtype : {DType::kF16, DType::kBF16}) {
    for (const AttnCase& c : cases) {
      std::vector<std::vector<float>> first;
      for (const int warps : {4, 8}) {
        SCOPED_TRACE(std::string(c.name) + (dtype == DType::kBF16 ? " bf16 " : " fp16 ") +
                     std::to_string(warps) + " warps");
        CudaBackendOptions o;
        o.activation_dtype = dtype;
        o.attention_warpgroup_mma = true;
        o.attention_warps = warps;
        o.attention_warp_tiles = 1;
        auto backend = create_cuda_backend(o);
        run_attention_case(c, *backend, *cpu, dtype == DType::kBF16 ? 1.2e-2 : 1.5e-3);
        const auto got = attention_outputs(c, *backend);
        if (first.empty()) {
          first = got;
          continue;
        }
        ASSERT_EQ(got.size(), first.size());
        for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], first[i]) << "step " << i;
      }
    }
  }
  CudaBackendOptions on, off;
  on.attention_warpgroup_mma = true;
  off.attention_warpgroup_mma = false;
  auto with = create_cuda_backend(on);
  auto without = create_cuda_backend(off);
  EXPECT_EQ(attention_outputs(cases[0], *with, nullptr, KvCacheType::kQ4),
            attention_outputs(cases[0], *without, nullptr, KvCacheType::kQ4));
}

// Prefix reuse copies the matching start of a partly shared page (KvCacheStorage::
// copy_positions): a decode step over the copies gives exactly the output it gives over the
// originals, for every cache type and both layers.
TEST_F(GpuOps, CopiedCachePositionsReadBackAsTheOriginals) {
  const int64_t heads = 4, kv_heads = 2, D = 64, page = 16, len = 20;
  for (KvCacheType type :
       {KvCacheType::kF16, KvCacheType::kQ8, KvCacheType::kQ6, KvCacheType::kQ4}) {
    SCOPED_TRACE(kv_cache_type_name(type));
    auto cache = gpu->create_kv_cache({2, kv_heads, D, page, 5, type});
    ASSERT_TRUE(cache->copies_positions());
    DeviceTensor q = gpu->alloc_activation(len, heads * D);
    DeviceTensor k = gpu->alloc_activation(len, kv_heads * D);
    DeviceTensor v = gpu->alloc_activation(len, kv_heads * D);
    DeviceTensor out = gpu->alloc_activation(len, heads * D);
    auto step = [&](int32_t start, int32_t n, std::vector<int32_t> table, int64_t layer,
                    uint64_t seed) {
      TestBatch batch;
      batch.seqs.push_back({start, n, table, false});
      const PreparedBatch p = gpu->prepare_batch(batch.desc());
      Keep keep;
      load(*gpu, random_values(static_cast<size_t>(n * heads * D), seed, 1.0f), n, heads * D, q,
           p.tokens, keep);
      load(*gpu, random_values(static_cast<size_t>(n * kv_heads * D), seed + 1, 2.0f), n,
           kv_heads * D, k, p.tokens, keep);
      load(*gpu, random_values(static_cast<size_t>(n * kv_heads * D), seed + 2, 1.0f), n,
           kv_heads * D, v, p.tokens, keep);
      AttentionParams ap;
      ap.layer = layer;
      ap.num_heads = heads;
      ap.num_kv_heads = kv_heads;
      ap.head_dim = D;
      ap.scale = 0.125f;
      gpu->attention(q.first_rows(p.tokens), k.first_rows(p.tokens), v.first_rows(p.tokens), *cache,
                     ap, out.first_rows(p.tokens));
      return gpu->read(out, n);
    };
    // Positions 0..19 of both layers, in pages 1 and 2.
    for (int64_t layer = 0; layer < 2; ++layer) step(0, len, {1, 2}, layer, 7 + 10 * layer);
    cache->copy_positions(1, 3, page);  // a whole page
    cache->copy_positions(2, 0, 4);     // the leading 4 positions of the next
    for (int64_t layer = 0; layer < 2; ++layer) {
      // Position 20 goes to slot 4 of the second page: each run writes its own page.
      EXPECT_EQ(step(len, 1, {1, 2}, layer, 99), step(len, 1, {3, 0}, layer, 99))
          << "layer " << layer;
    }
    EXPECT_THROW(cache->copy_positions(0, 5, 1), Error);
    EXPECT_THROW(cache->copy_positions(0, 1, page + 1), Error);
  }
}

// Over q8/q6/q4 caches both backends store the same codes (tests/gpu/gpu_kv_quant_test.cpp checks
// the bytes), so the outputs differ by the attention's arithmetic only: the prefill kernel rounds
// the dequantized rows to fp16 for the tensor cores, hence twice the fp16 cache's tolerance.
// Prefill, chunks and decode steps (the split-K kernel with several splits in the long cases),
// RoPE (fused into decode steps, whose kernel quantizes the new row itself: bit for bit as with the
// rope pass and kv_store), and 8-warp prefill blocks. With RoPE the GPU rounds
// the rotated keys to fp16 before quantizing them and the CPU does not, so a key near a level's
// edge may take the neighbouring code: there one q4 step (an eighth of the group's largest
// value) of one key is allowed.
TEST_F(GpuOps, AttentionOverQuantizedCachesMatchesTheCpu) {
  CudaBackendOptions o;
  o.attention_warps = 8;
  auto wide = create_cuda_backend(o);
  CudaBackendOptions separate;
  separate.fuse_decode_rope = false;
  auto unfused = create_cuda_backend(separate);
  const AttnRope rope{128, 1.0f, 5e5};
  for (KvCacheType type : {KvCacheType::kQ8, KvCacheType::kQ6, KvCacheType::kQ4}) {
    for (const AttnCase& c :
         {AttnCase{"q_d64_gqa4_page16", 8, 2, 64, 16, {1, 15, 16, 17, 100}, {3, 1, 40, 16, 2}, 3},
          AttnCase{"q_d128_mha_page64", 4, 4, 128, 64, {1, 63, 64, 65, 200}, {1, 2, 64, 1, 70}, 3},
          AttnCase{"q_d64_gqa3_page32", 9, 3, 64, 32, {33, 7, 64}, {1, 31, 2}, 2},
          AttnCase{"q_d128_gqa4_very_long", 8, 2, 128, 256, {2000, 1}, {1100, 3}, 2},
          AttnCase{"q_d64_single_token", 2, 1, 64, 16, {1}, {1}, 4}}) {
      run_attention_case(c, *gpu, *cpu, 3e-3, nullptr, type);
    }
    const AttnCase rope_case{"q_rope_d128_gqa4", 8, 2, 128, 64, {300, 1, 129}, {5, 200, 1}, 3};
    run_attention_case(rope_case, *gpu, *cpu, type == KvCacheType::kQ8 ? 3e-3 : 1.5e-2, &rope,
                       type);
    const auto fused = attention_outputs(rope_case, *gpu, &rope, type);
    const auto apart = attention_outputs(rope_case, *unfused, &rope, type);
    for (size_t i = 0; i < fused.size(); ++i) {
      EXPECT_EQ(fused[i], apart[i]) << kv_cache_type_name(type) << " step " << i;
    }
    run_attention_case(AttnCase{"q_w8_d64_gqa3", 9, 3, 64, 16, {130, 17}, {1, 140}, 2}, *wide, *cpu,
                       3e-3, nullptr, type);
  }
}

// Decode attention gives a sequence's splits to fewer blocks once the batch fills the GPU
// (CudaBackendOptions::decode_attention_blocks_per_sm): the same bits with every split a block of
// its own as with a few blocks per (sequence, kv head) taking several splits each, for batches
// of short and long sequences (up to 17 splits), GQA and MHA, with RoPE fused in.
TEST_F(GpuOps, DecodeAttentionBitsDoNotDependOnBlocksPerSequence) {
  std::vector<std::unique_ptr<Backend>> backends;
  for (int blocks_per_sm : {0, 1, 2, 1000}) {
    CudaBackendOptions o;
    o.decode_attention_blocks_per_sm = blocks_per_sm;
    backends.push_back(create_cuda_backend(o));
  }
  const AttnRope rope{128, 1.0f, 5e5};
  // Twenty sequences of 8 kv heads fill the GPU: with 1 or 2 blocks per multiprocessor a block
  // takes all of a sequence's splits.
  AttnCase many{"blocks_d128_gqa4_many", 32, 8, 128, 64, {}, {}, 2};
  for (int i = 0; i < 20; ++i) {
    many.prompt.push_back(30 + 131 * i);
    many.chunk.push_back(1 + i % 4);
  }
  for (const AttnCase& c :
       {many,
        AttnCase{"blocks_d128_gqa4", 32, 8, 128, 64, {300, 1, 129, 2100, 64}, {5, 200, 1, 3, 1}, 3},
        AttnCase{"blocks_d64_mha", 4, 4, 64, 16, {1, 63, 64, 65, 200}, {1, 2, 64, 1, 70}, 3}}) {
    const AttnRope* r = c.head_dim == 128 ? &rope : nullptr;
    const auto one_per_split = attention_outputs(c, *backends[0], r);
    for (size_t b = 1; b < backends.size(); ++b) {
      const auto got = attention_outputs(c, *backends[b], r);
      ASSERT_EQ(got.size(), one_per_split.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i], one_per_split[i]) << c.name << ", backend " << b << ", step " << i;
      }
    }
  }
}

// Decode steps fold RoPE into the attention kernel: against the CPU (rope, then attention), and
// bit for bit against the CUDA backend's own rope pass (fusion off). Full and partial rotation,
// head_dim 64 and 128, long positions; the later decode steps read the keys the fused steps
// cached, so a wrongly rotated cached key shows there.
TEST_F(GpuOps, DecodeAttentionAppliesRopeLikeTheRopePass) {
  CudaBackendOptions o;
  o.fuse_decode_rope = false;
  auto unfused = create_cuda_backend(o);
  struct Case {
    AttnCase attn;
    AttnRope rope;
  };
  for (const Case& c :
       {Case{AttnCase{"rope_d128_gqa4", 8, 2, 128, 64, {300, 1, 129}, {5, 200, 1}, 4},
             AttnRope{128, 1.0f, 5e5}},
        Case{AttnCase{"rope_d128_partial", 4, 4, 128, 256, {1000, 7}, {24, 1}, 3},
             AttnRope{64, 1.25f, 1e4}},
        Case{AttnCase{"rope_d64_gqa3", 9, 3, 64, 16, {130, 17}, {1, 140}, 3},
             AttnRope{64, 1.0f, 1e4}},
        Case{AttnCase{"rope_d64_rot16", 2, 1, 64, 16, {1}, {1}, 4}, AttnRope{16, 1.0f, 1e4}}}) {
    run_attention_case(c.attn, *gpu, *cpu, 1.5e-3, &c.rope);
    const auto fused = attention_outputs(c.attn, *gpu, &c.rope);
    const auto separate = attention_outputs(c.attn, *unfused, &c.rope);
    ASSERT_EQ(fused.size(), separate.size());
    for (size_t i = 0; i < fused.size(); ++i) {
      EXPECT_EQ(fused[i], separate[i]) << c.attn.name << " step " << i;
    }
  }
}

// Decode attention on the tensor cores is the default; the CUDA-core kernel it replaces for
// 16-bit caches stays reachable (CudaBackendOptions::decode_attention_tensor_cores = false) and
// correct: GQA, MHA, long sequences of many splits, and RoPE folded in.
TEST_F(GpuOps, CudaCoreDecodeAttentionMatchesReference) {
  CudaBackendOptions o;
  o.decode_attention_tensor_cores = false;
  auto cuda_cores = create_cuda_backend(o);
  const AttnRope rope{128, 1.0f, 5e5};
  run_attention_case(
      AttnCase{"cc_d64_gqa4", 8, 2, 64, 16, {1, 15, 16, 17, 100}, {3, 1, 40, 16, 2}, 3},
      *cuda_cores, *cpu, 1.5e-3);
  run_attention_case(
      AttnCase{"cc_d128_mha", 4, 4, 128, 64, {1, 63, 64, 65, 200}, {1, 2, 64, 1, 70}, 3},
      *cuda_cores, *cpu, 1.5e-3);
  run_attention_case(AttnCase{"cc_d128_gqa4_long", 8, 2, 128, 256, {2000, 1}, {1100, 3}, 2},
                     *cuda_cores, *cpu, 1.5e-3);
  run_attention_case(AttnCase{"cc_rope_d128_gqa4", 8, 2, 128, 64, {300, 1, 129}, {5, 200, 1}, 3},
                     *cuda_cores, *cpu, 1.5e-3, &rope);
}

// On the tensor cores a decode row's bits depend on its own sequence only: a sequence decoded
// alone (where the CUDA-core kernel takes larger blocks) and first in a batch of others, short or
// long, GQA groups of 1 to 8 and both head sizes, with RoPE folded in.
TEST_F(GpuOps, TensorCoreDecodeRowsDoNotDependOnTheBatch) {
  const AttnRope rope{64, 1.0f, 1e4};
  struct Case {
    int64_t heads, kv_heads, head_dim, page_size;
  };
  for (const Case& c :
       {Case{32, 8, 128, 64}, Case{9, 3, 64, 16}, Case{4, 4, 128, 256}, Case{16, 2, 64, 32}}) {
    // Twenty others: with 8 kv heads the batch fills the GPU, so one block takes all of a
    // sequence's splits in turn, where alone each split has a block of its own.
    std::vector<int32_t> others_prompt = {700, 3, 64, 2100};
    std::vector<int32_t> others_chunk = {1, 60, 1, 5};
    for (int i = 0; i < 16; ++i) {
      others_prompt.push_back(40 + 97 * i);
      others_chunk.push_back(1 + i % 3);
    }
    for (int32_t own : {1, 77, 1500}) {
      AttnCase alone{"alone", c.heads, c.kv_heads, c.head_dim, c.page_size, {own}, {1}, 3};
      AttnCase batch = alone;
      batch.name = "in a batch";
      batch.prompt.insert(batch.prompt.end(), others_prompt.begin(), others_prompt.end());
      batch.chunk.insert(batch.chunk.end(), others_chunk.begin(), others_chunk.end());
      const AttnRope* r = c.head_dim >= rope.rotary_dim ? &rope : nullptr;
      const auto one = attention_outputs(alone, *gpu, r);
      const auto many = attention_outputs(batch, *gpu, r);
      const size_t cols = static_cast<size_t>(c.heads * c.head_dim);
      for (size_t step = 2; step < one.size(); ++step) {  // the decode steps: row 0 is the sequence
        ASSERT_GE(many[step].size(), cols);
        EXPECT_TRUE(std::equal(one[step].begin(), one[step].begin() + cols, many[step].begin()))
            << c.heads << "/" << c.kv_heads << " heads of " << c.head_dim << ", " << own
            << " positions, step " << step;
      }
    }
  }
}

void grouped_linears_case(Backend& gpu_backend, Backend& cpu_backend, int64_t rows);

// Consecutive linears reading the same input are launched together; each must still get its
// own result (shapes and biases differ).
TEST_F(GpuOps, GroupedLinearsMatchSeparateOnes) {
  CudaBackendOptions o;
  o.gemv_max_rows = 8;
  auto mma = create_cuda_backend(o);
  for (const int64_t rows : {1, 3}) {
    for (Backend* g : {gpu.get(), mma.get()}) {
      grouped_linears_case(*g, *cpu, rows);
    }
  }
}

void grouped_linears_case(Backend& gpu_backend, Backend& cpu_backend, int64_t rows) {
  const int64_t k = 576;
  const std::vector<int64_t> outs = {576, 192, 1536};
  auto run = [&](Backend& b) {
    TestBatch batch = one_sequence(rows);
    DeviceTensor in = b.alloc_activation(rows, k);
    std::vector<DeviceTensor> out;
    for (int64_t n : outs) out.push_back(b.alloc_activation(rows, n));
    const PreparedBatch p = b.prepare_batch(batch.desc());
    Keep keep;
    load(b, random_values(static_cast<size_t>(rows * k), 3, 1.0f), rows, k, in, p.tokens, keep);
    std::vector<std::unique_ptr<BackendWeight>> weights;
    for (size_t i = 0; i < outs.size(); ++i) {
      LinearSource src;
      src.name = "grouped" + std::to_string(i);
      src.weight = HostTensor::from_floats(
          random_values(static_cast<size_t>(outs[i] * k), 10 + i, 0.05f), {outs[i], k});
      src.bias = HostTensor::from_floats(random_values(static_cast<size_t>(outs[i]), 20 + i, 1.0f),
                                         {outs[i]});
      weights.push_back(b.upload_linear(src));
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      b.linear(*weights[i], in.first_rows(p.tokens), out[i].first_rows(p.tokens));
    }
    std::vector<float> all;
    for (auto& t : out) {
      const auto v = b.read(t, rows);
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  const auto got = run(gpu_backend);
  const auto ref = run(cpu_backend);
  const auto d = compare(got, ref);
  EXPECT_TRUE(d.finite && d.nmse <= 1e-5 && d.max_abs <= 4e-3 * d.max_ref)
      << "rows " << rows << ": " << d.str();
}

TEST_F(GpuOps, AttentionInBf16MatchesReference) {
  auto bf16 = [] {
    CudaBackendOptions o;
    o.activation_dtype = DType::kBF16;
    return create_cuda_backend(o);
  }();
  // The inputs are fp16-rounded values; in bf16 they are rounded again (8 mantissa bits).
  run_attention_case(AttnCase{"bf16_d128_gqa4", 8, 2, 128, 64, {70, 1}, {5, 64}, 2}, *bf16, *cpu,
                     1.2e-2);
}

// ---- sampling ----
TEST_F(GpuOps, SamplingPicksTheSameTokensAsTheCpuSampler) {
  for (int64_t vocab : {1000, 32000}) {
    const int64_t rows = 6;
    auto logits = random_values(static_cast<size_t>(rows * vocab), vocab, 6.0f);
    // Ties at the top: ids 3 and 5 share the maximum of row 0 (the first must win).
    logits[5] = logits[3] = 9.0f;
    std::vector<SamplingParams> params(rows);
    params[1].temperature = 0.8f;
    params[1].top_k = 40;
    params[2].temperature = 1.0f;
    params[2].top_p = 0.9f;
    params[3].temperature = 0.7f;
    params[3].min_p = 0.05f;
    params[4].temperature = 1.2f;
    params[4].top_k = 100;
    params[4].top_p = 0.95f;
    params[4].min_p = 0.02f;
    params[4].repetition_penalty = 1.3f;
    params[4].frequency_penalty = 0.5f;
    params[4].presence_penalty = 0.3f;
    // logit_bias on top of the penalties, on penalised and untouched tokens alike.
    params[4].logit_bias = {{7, 3.5f}, {11, -100.0f}, {static_cast<int32_t>(vocab - 1), 12.0f}};
    params[5].temperature = 0.5f;
    params[5].top_k = 1;
    params[5].presence_penalty = 2.0f;
    params[5].logit_bias = {{3, -100.0f}, {5, -0.25f}};  // a ban and a nudge in a greedy row
    for (int64_t r = 0; r < rows; ++r) params[static_cast<size_t>(r)].seed = 1000 + r;
    std::vector<int32_t> history;
    for (int i = 0; i < 300; ++i) history.push_back(static_cast<int32_t>((i * 37) % 50));

    auto run = [&](Backend& b) {
      TestBatch batch;
      for (int64_t r = 0; r < rows; ++r) batch.seqs.push_back({0, 1, {0}, false});
      DeviceTensor t = b.alloc_activation(rows, vocab);
      const PreparedBatch p = b.prepare_batch(batch.desc());
      Keep keep;
      load(b, logits, rows, vocab, t, p.tokens, keep);
      std::vector<int32_t> picks;
      for (uint64_t draw = 0; draw < 40; ++draw) {
        std::vector<SampleRequest> req(static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; ++r) {
          req[static_cast<size_t>(r)].params = &params[static_cast<size_t>(r)];
          req[static_cast<size_t>(r)].history = history;
          req[static_cast<size_t>(r)].generated_count = 120;
          req[static_cast<size_t>(r)].draw_index = draw;
        }
        const auto ids = b.sample(t.first_rows(rows), req);
        picks.insert(picks.end(), ids.begin(), ids.end());
      }
      return picks;
    };
    const auto got = run(*gpu);
    const auto ref = run(*cpu);
    ASSERT_EQ(got.size(), ref.size());
    int mismatches = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] != ref[i]) {
        ++mismatches;
        ADD_FAILURE() << "vocab " << vocab << " draw " << i / rows << " row " << i % rows
                      << ": gpu " << got[i] << " cpu " << ref[i];
      }
    }
    EXPECT_EQ(got[0], 3) << "greedy must take the first maximum";
    EXPECT_EQ(mismatches, 0);
  }
}

// Rows that check a speculative proposal (SampleRequest::proposed): the GPU keeps exactly the
// proposals the CPU keeps; where candidates are cut (top-k, top-p, min-p) both scan them in
// logit order and pick the same replacement; with nothing cut the CPU walks the vocabulary in
// id order, so a replacement must only lie where p > q; and over many draws of one row the GPU's
// tokens follow p (chi-square), which is what makes speculation lossless.
TEST_F(GpuOps, SamplingChecksProposalsAsTheCpuDoes) {
  const int64_t vocab = 1000;
  const auto base = random_values(static_cast<size_t>(vocab), 77, 6.0f);
  std::vector<SamplingParams> params(5);
  params[0].temperature = 1.0f;  // nothing cut
  params[1].temperature = 0.8f;
  params[1].top_k = 40;
  params[2].temperature = 1.0f;
  params[2].top_p = 0.9f;
  params[3].temperature = 0.7f;
  params[3].min_p = 0.05f;
  params[3].repetition_penalty = 1.3f;
  params[3].presence_penalty = 0.4f;
  params[4].temperature = 0.0f;  // greedy: kept exactly when it is the argmax
  for (size_t i = 0; i < params.size(); ++i) params[i].seed = 500 + i;
  const auto top = static_cast<int32_t>(std::max_element(base.begin(), base.end()) - base.begin());
  std::vector<int32_t> history;
  for (int i = 0; i < 50; ++i) history.push_back(static_cast<int32_t>((i * 13) % 97));
  // A draft distribution that agrees with the logits only roughly.
  std::vector<float> draft(static_cast<size_t>(vocab));
  double draft_sum = 0;
  for (int64_t t = 0; t < vocab; ++t) {
    draft[static_cast<size_t>(t)] =
        std::exp(0.7f * base[static_cast<size_t>(t)] + 0.5f * static_cast<float>(t % 7));
    draft_sum += draft[static_cast<size_t>(t)];
  }
  for (float& q : draft) q = static_cast<float>(q / draft_sum);

  struct Check {
    size_t params;
    int32_t proposed;
    bool with_draft;
  };
  std::vector<Check> checks;
  for (size_t pi = 0; pi < params.size(); ++pi) {
    for (const int32_t proposed : {top, static_cast<int32_t>((top + 1) % vocab), int32_t{3}}) {
      for (const bool with_draft : {false, true}) checks.push_back({pi, proposed, with_draft});
    }
  }
  const int64_t draws = 24;
  const int64_t rows = static_cast<int64_t>(checks.size()) * draws;
  std::vector<float> logits;
  std::vector<SampleRequest> requests;
  for (const Check& c : checks) {
    for (int64_t d = 0; d < draws; ++d) {
      logits.insert(logits.end(), base.begin(), base.end());
      SampleRequest r;
      r.params = &params[c.params];
      r.history = history;
      r.generated_count = 20;
      r.draw_index = static_cast<uint64_t>(d);
      r.proposed = c.proposed;
      if (c.with_draft) r.draft_probs = draft;
      requests.push_back(r);
    }
  }
  auto run = [&](Backend& b, const std::vector<float>& values,
                 const std::vector<SampleRequest>& req) {
    const auto n = static_cast<int64_t>(req.size());
    TestBatch batch;
    for (int64_t r = 0; r < n; ++r) batch.seqs.push_back({0, 1, {0}, false});
    DeviceTensor t = b.alloc_activation(n, vocab);
    const PreparedBatch p = b.prepare_batch(batch.desc());
    Keep keep;
    load(b, values, n, vocab, t, p.tokens, keep);
    return b.sample(t.first_rows(n), req);
  };
  const auto got = run(*gpu, logits, requests);
  const auto ref = run(*cpu, logits, requests);
  ASSERT_EQ(got.size(), static_cast<size_t>(rows));
  int kept = 0, replaced_alike = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const Check& c = checks[static_cast<size_t>(i / draws)];
    const SampleRequest& r = requests[static_cast<size_t>(i)];
    const bool gpu_kept = got[static_cast<size_t>(i)] == c.proposed;
    const bool cpu_kept = ref[static_cast<size_t>(i)] == c.proposed;
    ASSERT_EQ(gpu_kept, cpu_kept) << "check " << i / draws << " draw " << i % draws;
    kept += gpu_kept;
    if (gpu_kept) continue;
    const bool cut = params[c.params].top_k > 0 || params[c.params].top_p < 1.0f ||
                     params[c.params].min_p > 0.0f || params[c.params].temperature <= 0.0f;
    if (cut) {
      EXPECT_EQ(got[static_cast<size_t>(i)], ref[static_cast<size_t>(i)])
          << "check " << i / draws << " draw " << i % draws;
    }
    replaced_alike += got[static_cast<size_t>(i)] == ref[static_cast<size_t>(i)];
    // The replacement lies where the residual p - q is positive.
    std::vector<float> row = base;
    const TokenDistribution p = sampling_distribution(row, r);
    const int32_t token = got[static_cast<size_t>(i)];
    const double q = c.with_draft ? draft[static_cast<size_t>(token)] : 0.0;
    EXPECT_GT(p.prob_of(token) - q, 0.0) << "check " << i / draws << " draw " << i % draws;
  }
  std::printf("[ proposals ] %d of %lld kept on both; %d replacements identical\n", kept,
              static_cast<long long>(rows), replaced_alike);
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, rows);

  // One row, a certain proposal, 8,192 draws: the tokens follow p.
  const int64_t n = 8192;
  std::vector<float> many;
  std::vector<SampleRequest> one(static_cast<size_t>(n));
  SamplingParams warm;
  warm.temperature = 1.5f;
  warm.seed = 99;
  for (int64_t d = 0; d < n; ++d) {
    many.insert(many.end(), base.begin(), base.end());
    one[static_cast<size_t>(d)].params = &warm;
    one[static_cast<size_t>(d)].draw_index = static_cast<uint64_t>(d);
    one[static_cast<size_t>(d)].proposed = top;
  }
  const auto tokens = run(*gpu, many, one);
  std::vector<float> row = base;
  SampleRequest plain;
  plain.params = &warm;
  const TokenDistribution p = sampling_distribution(row, plain);
  std::vector<int> counts(static_cast<size_t>(vocab), 0);
  for (int32_t t : tokens) ++counts[static_cast<size_t>(t)];
  double chi2 = 0, rest_expected = 0;
  int cells = 0, rest_count = 0;
  for (int64_t t = 0; t < vocab; ++t) {
    const double e = p.prob_of(static_cast<int32_t>(t)) * static_cast<double>(n);
    const int c = counts[static_cast<size_t>(t)];
    if (e >= 5) {
      chi2 += (c - e) * (c - e) / e;
      ++cells;
    } else {
      rest_expected += e;
      rest_count += c;
    }
  }
  if (rest_expected >= 5) {
    chi2 += (rest_count - rest_expected) * (rest_count - rest_expected) / rest_expected;
    ++cells;
  }
  // Far in the tail of chi-square with cells - 1 degrees of freedom (about 5 sigma).
  const double df = cells - 1;
  std::printf("[ proposals ] %lld draws of one row: chi-square %.1f over %d cells\n",
              static_cast<long long>(n), chi2, cells);
  ASSERT_GE(cells, 5);
  EXPECT_LT(chi2, df + 5.0 * std::sqrt(2.0 * df));
}

// ---- memory and errors ----
TEST_F(GpuOps, MemoryUsageCountsEachCategory) {
  const MemoryUsage before = gpu->memory_usage();
  EXPECT_GT(before.device_total, 0u);
  EXPECT_GT(before.device_free, 0u);
  EXPECT_GT(before.workspace, 0u);
  gpu->alloc_activation(1000, 1000);
  KvCacheSpec spec{4, 2, 64, 256, 10, KvCacheType::kF16};
  auto cache = gpu->create_kv_cache(spec);
  LinearSource src;
  src.name = "w";
  src.weight = HostTensor::allocate(DType::kF16, {256, 512});
  auto w = gpu->upload_linear(src);
  const MemoryUsage after = gpu->memory_usage();
  EXPECT_EQ(after.activations - before.activations, 1000u * 1000u * 2u);
  EXPECT_EQ(after.kv_cache - before.kv_cache, spec.bytes());
  EXPECT_GE(after.weights - before.weights, 256u * 512u * 2u);
  cache.reset();
  EXPECT_EQ(gpu->memory_usage().kv_cache, before.kv_cache);
}

TEST_F(GpuOps, OutOfMemoryIsAnErrorAndTheBackendKeepsWorking) {
  KvCacheSpec huge{80, 8, 128, 256, int64_t(1) << 24, KvCacheType::kF16};
  try {
    gpu->create_kv_cache(huge);
    ADD_FAILURE() << "a cache of " << huge.bytes() << " bytes was allocated";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory) << e.what();
  }
  try {
    gpu->alloc_activation(int64_t(1) << 22, int64_t(1) << 20);
    ADD_FAILURE() << "an 8 TiB activation was allocated";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory) << e.what();
  }
  // Still usable.
  const LinearCase c{64, 64, 2, false, DType::kF16};
  const auto x = random_values(128, 1, 1.0f);
  const auto w = random_values(64 * 64, 2, 0.1f);
  EXPECT_EQ(compare(run_linear(*gpu, c, x, w, {}), run_linear(*cpu, c, x, w, {})).finite, true);
}

TEST_F(GpuOps, PagesBeyondTheCacheAreRejected) {
  KvCacheSpec spec{1, 1, 64, 16, 4, KvCacheType::kF16};
  auto cache = gpu->create_kv_cache(spec);
  DeviceTensor q = gpu->alloc_activation(4, 64);
  TestBatch batch;
  batch.seqs.push_back({0, 4, {9}, false});
  const PreparedBatch p = gpu->prepare_batch(batch.desc());
  AttentionParams ap{0, 1, 1, 64, 0.125f};
  try {
    gpu->attention(q.first_rows(p.tokens), q.first_rows(p.tokens), q.first_rows(p.tokens), *cache,
                   ap, q.first_rows(p.tokens));
    ADD_FAILURE() << "page 9 of a 4-page cache was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
}

TEST_F(GpuOps, DeviceInfoNamesTheGpu) {
  const CudaDeviceInfo info = cuda_device_info(0);
  EXPECT_FALSE(info.name.empty());
  EXPECT_GE(info.compute_major, 8);
  EXPECT_GT(info.total_bytes, info.free_bytes / 2);
  EXPECT_NE(gpu->name().find(info.name), std::string::npos);
  EXPECT_THROW(cuda_device_info(999), Error);
  std::printf("[ device ] %s, cc %d.%d, %d SMs, %.1f GiB, nominal %.0f GB/s\n", info.name.c_str(),
              info.compute_major, info.compute_minor, info.multiprocessors,
              static_cast<double>(info.total_bytes) / (1u << 30), info.memory_bandwidth_gbs);
}

}  // namespace
}  // namespace hearth
