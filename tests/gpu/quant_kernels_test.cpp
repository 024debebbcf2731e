// EXL2 / GPTQ linear layers on the CUDA backend against the CPU reference backend (which
// dequantizes bit-exactly as docs/FORMATS.md §1.9 and §2.6), through the Backend interface:
// every bit width and mix, GPTQ 2/3/4/8 bits with act-order, asym and odd group sizes, odd
// shapes (K not a multiple of 128 or 32, padded N, short last groups), 1..32 rows on the fused
// kernels and more on the dequantize + cuBLAS path (weights in stored row order, x gathered) or
// on the packed-tile product (kernels::quant_mma_gemm);
// batch invariance; a whole quantized model, prefill and decode steps replayed from CUDA graphs;
// linears of one input sharing a launch; LoRA adapters folded into that launch.
//
// The weights both backends multiply are identical fp16 values, so the linear tolerance of the
// dense ops applies: NMSE <= 1e-5 and |err| <= 4e-3 · max|ref| (fp32 sums in a different order,
// one fp16 rounding of the output).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/cuda_backend_impl.h"
#include "engine/bench/synthetic_lora.h"
#include "engine/bench/synthetic_quant_source.h"
#include "engine/bench/synthetic_source.h"
#include "engine/core/error.h"
#include "engine/formats/quant_tile_layout.h"
#include "engine/formats/quantized_linear_loader.h"
#include "engine/io/gguf_block_weight.h"
#include "engine/model/llama_model.h"
#include "tests/common/test_paths.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/many_sequence_decode.h"
#include "tests/unit/io/gguf_test_util.h"

namespace hearth {
namespace {

using gpu_test::compare;
using gpu_test::load;
using gpu_test::random_values;
using gpu_test::TestBatch;
using Keep = std::vector<std::unique_ptr<BackendWeight>>;
using TensorMap = std::map<std::string, HostTensor, std::less<>>;

class QuantGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    HEARTH_REQUIRE_GPU();
    cpu = create_cpu_backend(0);
    gpu = create_cuda_backend({});
  }
  std::unique_ptr<Backend> cpu, gpu;
};

TestBatch one_sequence(int64_t rows) {
  TestBatch b;
  TestBatch::Seq s;
  s.count = static_cast<int32_t>(rows);
  s.pages = std::vector<int32_t>(static_cast<size_t>(rows / 16 + 1), 0);
  b.seqs.push_back(s);
  return b;
}

std::vector<float> run_linear(Backend& b, const LinearSource& src, const std::vector<float>& x,
                              int64_t rows) {
  const int64_t K = src.quantized->in_features(), N = src.quantized->out_features();
  TestBatch batch = one_sequence(rows);
  DeviceTensor in = b.alloc_activation(rows, K);
  DeviceTensor out = b.alloc_activation(rows, N);
  const PreparedBatch p = b.prepare_batch(batch.desc());
  Keep keep;
  load(b, x, rows, K, in, p.tokens, keep);
  auto w = b.upload_linear(src);
  b.linear(*w, in.first_rows(p.tokens), out.first_rows(p.tokens));
  return b.read(out, rows);
}

LinearSource source_of(const TensorSource& t, const std::string& prefix,
                       const QuantizedLinearOptions& o) {
  LinearSource src;
  src.name = prefix;
  src.quantized = load_quantized_linear(t, prefix, o);
  if (t.has(prefix + ".bias")) {
    std::vector<float> b = t.get(prefix + ".bias").to_floats();
    b.resize(static_cast<size_t>(src.quantized->out_features()));
    src.bias = HostTensor::from_floats(std::move(b), {src.quantized->out_features()});
  }
  return src;
}

void expect_matches(Backend& gpu, Backend& cpu, const LinearSource& src,
                    const std::vector<int64_t>& row_counts, const std::string& what) {
  const int64_t K = src.quantized->in_features();
  for (int64_t rows : row_counts) {
    const auto x = random_values(static_cast<size_t>(rows * K), 1000 + rows, 1.0f);
    const auto got = run_linear(gpu, src, x, rows);
    const auto ref = run_linear(cpu, src, x, rows);
    const auto d = compare(got, ref);
    EXPECT_TRUE(d.finite && d.nmse <= 1e-5 && d.max_abs <= 4e-3 * d.max_ref)
        << what << ", " << rows << " rows: " << d.str();
  }
}

const std::vector<int64_t> kRows = {1, 3, 8, 9, 16, 31, 32, 33, 64, 65, 130, 300};

TEST_F(QuantGpu, FixtureLayersMatchTheCpuReference) {
  for (const char* set : {"exl2_numpy", "exl2_exllamav2", "gptq"}) {
    const auto dir = test::fixtures_dir() / "quant" / set;
    std::ifstream in(dir / "manifest.json");
    if (!in) continue;
    const auto manifest = nlohmann::json::parse(in);
    for (const auto& c : manifest["cases"]) {
      const auto t = open_safetensors_source(dir / c["file"].get<std::string>());
      QuantizedLinearOptions o;
      if (c.contains("config") && !c["config"].is_null())
        o.quantization_config_json = c["config"].dump();
      o.out_features = c["out_features"].get<int64_t>();
      expect_matches(*gpu, *cpu, source_of(*t, c["prefix"].get<std::string>(), o),
                     {1, 7, 32, 64, 100, 300},
                     std::string(set) + "/" + c["name"].get<std::string>());
    }
  }
}

// A [1000, K] GGUF linear of random blocks (K 576, SmolLM2's hidden size, or 768 for the K-quants'
// super-blocks of 256; N not a multiple of 32). The source reads `image`'s bytes: moving the
// struct keeps them where they are.
struct RandomGgufLinear {
  test::Bytes image;
  LinearSource source;
};
RandomGgufLinear random_gguf_linear(GgmlType type, uint32_t seed, bool tiny_minimums = false) {
  const bool k_quant = ggml_type_traits(static_cast<uint32_t>(type))->block_elements == 256;
  // 4,000 outputs: large enough to run packed (smaller GGUF matrices run in fp16).
  RandomGgufLinear l{
      test::random_block_tensor(type, k_quant ? 768 : 576, 4000, seed, tiny_minimums), {}};
  auto file =
      std::make_shared<const GgufFile>(GgufFile::parse(std::span<const std::byte>(l.image)));
  l.source.name = std::string(ggml_type_name(type)) + (tiny_minimums ? " (tiny minimums)" : "");
  l.source.quantized =
      std::make_shared<GgufBlockWeight>(file, file->tensors().at(0), std::vector<int32_t>{});
  EXPECT_TRUE(runs_packed_on_gpu(*l.source.quantized)) << l.source.name;
  return l;
}

const GgmlType kGgufTypes[] = {GgmlType::kQ4_0, GgmlType::kQ5_0,   GgmlType::kQ8_0,
                               GgmlType::kQ4_1, GgmlType::kQ5_1,   GgmlType::kQ2_K,
                               GgmlType::kQ3_K, GgmlType::kQ4_K,   GgmlType::kQ5_K,
                               GgmlType::kQ6_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS};

// GGUF linears run on the quantized kernels (engine/formats/quant_tile_layout.h): Q4_0 / Q5_0 /
// Q8_0 as symmetric GPTQ with groups of 32, the others in their own form (Q4_1 / Q5_1 on the
// fp16 path, or with tiny minimums the fp32 one); the CPU decodes the blocks themselves.
TEST_F(QuantGpu, GgufBlocksMatchTheCpuReference) {
  for (GgmlType type : kGgufTypes) {
    const RandomGgufLinear l = random_gguf_linear(type, 17);
    const LinearSource& src = l.source;
    expect_matches(*gpu, *cpu, src, kRows, src.name);
  }
  const RandomGgufLinear l = random_gguf_linear(GgmlType::kQ4_1, 19, true);
  expect_matches(*gpu, *cpu, l.source, kRows, l.source.name);
}

// GGUF's fp32-scaled product (every form of its scales: a minimum only, scale and minimum, signed
// scales per row half, scale and minimum per half; IQ4's codebook kernels in both of their forms)
// keeps a row's result the same in every batch the fused kernel serves, 1 to 96 rows: one to four
// row tiles per launch, row groups beyond 32.
TEST_F(QuantGpu, GgufRowsAreBatchInvariant) {
  struct Case {
    GgmlType type;
    bool tiny_minimums;
  };
  for (const Case& c :
       {Case{GgmlType::kQ4_1, true}, Case{GgmlType::kQ2_K, false}, Case{GgmlType::kQ3_K, false},
        Case{GgmlType::kQ4_K, false}, Case{GgmlType::kQ5_K, false}, Case{GgmlType::kQ6_K, false},
        Case{GgmlType::kIQ4_XS, false}, Case{GgmlType::kIQ4_NL, false}}) {
    const RandomGgufLinear l = random_gguf_linear(c.type, 29, c.tiny_minimums);
    const LinearSource& s = l.source;
    const int64_t K = s.quantized->in_features();
    const auto x = random_values(static_cast<size_t>(96 * K), 33, 1.0f);
    const auto all = run_linear(*gpu, s, x, 96);
    for (int64_t rows : {1, 2, 3, 8, 9, 17, 24, 32, 33, 65}) {
      const auto part =
          run_linear(*gpu, s, std::vector<float>(x.begin(), x.begin() + rows * K), rows);
      EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin())) << s.name << ", rows " << rows;
    }
  }
}

// An embedding lookup in a packed table gives the rows the linear multiplies: the fp16 of each
// output's dequantized weights, in input order (act-order undone), and zeros for an id outside
// the table; GGUF blocks and every EXL2 / GPTQ fixture.
TEST_F(QuantGpu, PackedTablesLookUpTheRowsTheLinearMultiplies) {
  auto check = [&](const LinearSource& src, const std::string& what) {
    const QuantizedWeight& q = *src.quantized;
    const int64_t N = q.out_features(), K = q.in_features();
    std::vector<int32_t> ids = {0, static_cast<int32_t>(N - 1), 31, 32, static_cast<int32_t>(N / 2),
                                7, static_cast<int32_t>(N),     5};
    BatchDesc batch;
    SequenceSlice s;
    s.tokens = ids;
    const std::vector<int32_t> pages(4, 0);
    s.page_table = pages;
    batch.seqs.push_back(s);
    const auto rows = static_cast<int64_t>(ids.size());
    DeviceTensor out = gpu->alloc_activation(rows, K);
    const PreparedBatch p = gpu->prepare_batch(batch);
    auto table = gpu->upload_linear(src);
    gpu->embed(*table, out.first_rows(p.tokens));
    const std::vector<float> got = gpu->read(out, rows);
    std::vector<float> row(static_cast<size_t>(K));
    int64_t mismatches = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const int32_t id = ids[static_cast<size_t>(r)];
      if (id < N) q.dequantize_rows(id, id + 1, row.data());
      for (int64_t k = 0; k < K; ++k) {
        const float want =
            id < N ? half_to_float(float_to_half(row[static_cast<size_t>(k)])) : 0.0f;
        mismatches += got[static_cast<size_t>(r * K + k)] != want;
      }
    }
    EXPECT_EQ(mismatches, 0) << what;
  };
  for (GgmlType type : kGgufTypes) {
    for (bool tiny : {false, true}) {
      if (tiny && type != GgmlType::kQ4_1 && type != GgmlType::kQ5_1) continue;
      const RandomGgufLinear l = random_gguf_linear(type, 23, tiny);
      const LinearSource& src = l.source;
      check(src, src.name);
    }
  }
  for (const char* set : {"exl2_numpy", "gptq"}) {
    const auto dir = test::fixtures_dir() / "quant" / set;
    std::ifstream in(dir / "manifest.json");
    ASSERT_TRUE(in) << set;
    for (const auto& c : nlohmann::json::parse(in)["cases"]) {
      const auto t = open_safetensors_source(dir / c["file"].get<std::string>());
      QuantizedLinearOptions o;
      if (c.contains("config") && !c["config"].is_null())
        o.quantization_config_json = c["config"].dump();
      o.out_features = c["out_features"].get<int64_t>();
      check(source_of(*t, c["prefix"].get<std::string>(), o),
            std::string(set) + "/" + c["name"].get<std::string>());
    }
  }
}

// EXL2 recipes of the width tests: one width at one group size, and all six widths mixed.
Exl2Recipe single_width_recipe(int bits, int64_t group_size) {
  Exl2Recipe r;
  r.parts = {{bits, 1.0}};
  r.group_size = {{bits, group_size}};
  return r;
}
Exl2Recipe every_width_recipe() {
  Exl2Recipe r;
  r.parts = {{8, 0.1}, {6, 0.1}, {5, 0.2}, {4, 0.2}, {3, 0.2}, {2, 0.2}};
  r.group_size = {{8, 32}, {6, 32}, {5, 64}, {4, 64}, {3, 128}, {2, 128}};
  return r;
}

TEST_F(QuantGpu, Exl2EveryWidthMixAndOddShape) {
  struct Case {
    int64_t k, n;
    Exl2Recipe recipe;
    const char* what;
  };
  const auto single = single_width_recipe;
  const Exl2Recipe all6 = every_width_recipe();
  Exl2Recipe down;
  down.parts = {{6, 0.05}, {3, 0.2}, {2, 0.75}};
  down.group_size = {{6, 32}, {3, 64}, {2, 64}};
  Exl2Recipe two16;
  two16.parts = {{4, 0.25}, {2, 0.75}};
  two16.group_size = {{4, 32}, {2, 16}};
  std::vector<Case> cases = {
      {4096, 4096, exl2_recipe_for_bpw(4.0), "4.0 bpw, Llama q_proj"},
      {4096, 1024, exl2_recipe_for_bpw(2.5), "2.5 bpw, k_proj"},
      {14336, 512, exl2_recipe_for_bpw(3.0), "3.0 bpw, down_proj slice"},
      {4096, 1000, exl2_recipe_for_bpw(5.0), "5.0 bpw"},
      {2048, 768, exl2_recipe_for_bpw(6.0), "6.0 bpw"},
      {1024, 512, exl2_recipe_for_bpw(8.0), "8.0 bpw"},
      {2048, 1001, exl2_head_recipe(), "6-bit head, N padded 1001 -> 1024"},
      {1000, 256, all6, "8/6/5/4/3/2 mix, K = 1000 (short last group, not a multiple of 32)"},
      {1056, 96, single(4, 128), "K = 1056: last group 32 of 128 rows"},
      {1024, 200, down, "down_proj 6/3/2 mix, N = 200"},
      {256, 64, two16, "2-bit groups of 16 rows"},
  };
  for (int b : {2, 3, 4, 5, 6, 8}) cases.push_back({768, 160, single(b, 32), "single width g32"});
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    TensorMap t;
    make_exl2_layer(t, "l", c.k, c.n, c.recipe, 100 + i, i % 3 == 0);
    MemoryTensorSource src(std::move(t));
    QuantizedLinearOptions o;
    o.out_features = c.n;
    expect_matches(*gpu, *cpu, source_of(src, "l", o),
                   i < 3 ? kRows : std::vector<int64_t>{1, 8, 33, 64, 70, 257},
                   std::string(c.what) + " " + std::to_string(c.k) + "x" + std::to_string(c.n));
  }
}

TEST_F(QuantGpu, GptqBitsActOrderAsymAndGroups) {
  struct Case {
    int64_t k, n;
    GptqRecipe r;
  };
  const std::vector<Case> cases = {
      {4096, 4096, {4, 128, true, true, false}}, {4096, 1024, {4, 128, false, true, false}},
      {1024, 512, {2, 64, true, true, false}},   {1024, 512, {3, 128, true, false, true}},
      {1024, 512, {8, 32, true, false, false}},  {1000, 256, {4, 100, false, true, false}},
      {992, 256, {4, -1, false, false, false}},  {4096, 608, {4, 32, true, false, true}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    TensorMap t;
    make_gptq_layer(t, "l", c.k, c.n, c.r, 200 + i);
    MemoryTensorSource src(std::move(t));
    QuantizedLinearOptions o;
    o.quantization_config_json = gptq_config_json(c.r);
    expect_matches(*gpu, *cpu, source_of(src, "l", o), {1, 8, 17, 32, 64, 80, 260},
                   "GPTQ " + std::to_string(c.r.bits) + "-bit g" + std::to_string(c.r.group_size) +
                       (c.r.act_order ? " act-order" : "") + (c.r.sym ? " sym" : " asym") +
                       (c.r.v2 ? " v2 " : " v1 ") + std::to_string(c.k) + "x" +
                       std::to_string(c.n));
  }
}

// A row's result does not depend on how many rows share the launch (up to 32 rows).
TEST_F(QuantGpu, RowsAreBatchInvariant) {
  TensorMap t;
  make_exl2_layer(t, "l", 4096, 4096, exl2_recipe_for_bpw(4.0), 5);
  MemoryTensorSource src(std::move(t));
  const LinearSource s = source_of(src, "l", QuantizedLinearOptions{});
  const auto x = random_values(static_cast<size_t>(32 * 4096), 6, 1.0f);
  const auto all = run_linear(*gpu, s, x, 32);
  for (int64_t rows : {1, 5, 8, 16}) {
    const auto part =
        run_linear(*gpu, s, std::vector<float>(x.begin(), x.begin() + rows * 4096), rows);
    EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin())) << "rows " << rows;
  }
}

// Gate/up/down-sized matrices use K slices of 16 chunks: a row's result is the same at every
// batch size up to 32 rows, EXL2 and GPTQ act-order alike, and matches the CPU (also past 32
// rows, in row groups, and past 64, on the cuBLAS path).
TEST_F(QuantGpu, SixteenChunkSlicesKeepRowsBatchInvariant) {
  const GptqRecipe gptq{4, 128, true, false, false};
  for (const bool is_gptq : {false, true}) {
    for (const auto& [k, n] : {std::pair<int64_t, int64_t>{4096, 14336}, {14336, 4096}}) {
      TensorMap t;
      QuantizedLinearOptions o;
      if (is_gptq) {
        make_gptq_layer(t, "l", k, n, gptq, 31);
        o.quantization_config_json = gptq_config_json(gptq);
      } else {
        make_exl2_layer(t, "l", k, n, exl2_recipe_for_bpw(4.0), 30);
      }
      MemoryTensorSource src(std::move(t));
      const LinearSource s = source_of(src, "l", o);
      const std::string what =
          std::string(is_gptq ? "GPTQ " : "EXL2 ") + std::to_string(k) + "x" + std::to_string(n);
      const auto x = random_values(static_cast<size_t>(32 * k), 32, 1.0f);
      const auto all = run_linear(*gpu, s, x, 32);
      for (int64_t rows : {1, 3, 8, 9, 17, 31}) {
        const auto part =
            run_linear(*gpu, s, std::vector<float>(x.begin(), x.begin() + rows * k), rows);
        EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin())) << what << ", rows " << rows;
      }
      expect_matches(*gpu, *cpu, s, {1, 8, 32, 33, 64, 65}, what);
    }
  }
}

// Linears that read the same x are queued and served by one launch (q/k/v, gate/up); each
// output equals the one its linear gives alone, bit for bit, for every matrix of the group
// (different shapes, widths, K slices and a bias).
// The outputs of quantized linears that read one x, queued one after the other (one launch).
std::vector<std::vector<float>> run_linears_together(Backend& b,
                                                     const std::vector<LinearSource>& layers,
                                                     const std::vector<float>& x, int64_t rows) {
  const int64_t K = layers.front().quantized->in_features();
  TestBatch batch = one_sequence(rows);
  DeviceTensor in = b.alloc_activation(rows, K);
  const PreparedBatch p = b.prepare_batch(batch.desc());
  Keep keep;
  load(b, x, rows, K, in, p.tokens, keep);
  std::vector<DeviceTensor> outs;
  for (const LinearSource& l : layers) {
    keep.push_back(b.upload_linear(l));
    outs.push_back(b.alloc_activation(rows, l.quantized->out_features()));
    b.linear(*keep.back(), in.first_rows(p.tokens), outs.back().first_rows(p.tokens));
  }
  std::vector<std::vector<float>> got;
  for (const DeviceTensor& o : outs) got.push_back(b.read(o, rows));
  return got;
}

std::vector<LinearSource> three_exl2_linears(TensorMap& t, int64_t K,
                                             std::unique_ptr<MemoryTensorSource>& src) {
  make_exl2_layer(t, "a", K, 2048, exl2_recipe_for_bpw(4.0), 11);
  make_exl2_layer(t, "b", K, 256, exl2_recipe_for_bpw(2.5), 12, true);
  make_exl2_layer(t, "c", K, 5000, exl2_recipe_for_bpw(6.0), 13);
  src = std::make_unique<MemoryTensorSource>(std::move(t));
  std::vector<LinearSource> layers;
  for (const char* name : {"a", "b", "c"}) {
    layers.push_back(source_of(*src, name, QuantizedLinearOptions{}));
  }
  return layers;
}

TEST_F(QuantGpu, LinearsOfOneInputShareALaunch) {
  const int64_t K = 2048;
  TensorMap t;
  std::unique_ptr<MemoryTensorSource> src;
  const std::vector<LinearSource> layers = three_exl2_linears(t, K, src);
  for (int64_t rows : {1, 5}) {
    const auto x = random_values(static_cast<size_t>(rows * K), 20 + rows, 1.0f);
    const auto outs = run_linears_together(*gpu, layers, x, rows);
    for (size_t i = 0; i < layers.size(); ++i) {
      const auto& together = outs[i];
      const auto alone = run_linear(*gpu, layers[i], x, rows);
      EXPECT_TRUE(std::equal(together.begin(), together.end(), alone.begin()))
          << "matrix " << i << ", " << rows << " rows";
      const auto d = compare(together, run_linear(*cpu, layers[i], x, rows));
      EXPECT_TRUE(d.finite && d.nmse <= 1e-5 && d.max_abs <= 4e-3 * d.max_ref)
          << "matrix " << i << ", " << rows << " rows: " << d.str();
    }
  }
}

// Backend::linears() on many rows: x is gathered into an act-order matrix's row order once for
// matrices that share the order (q, k and v of a reference quantizer's file), and every output
// keeps the bits of its linear() alone, on the packed-tile product (120 rows) and on the cuBLAS
// path (200). Two matrices share a permutation, the third has its own and comes between them;
// a second call after x changed in place must not reuse the first call's gather.
TEST_F(QuantGpu, LinearsOfOneInputGatherXOncePerRowOrder) {
  const int64_t K = 2048;
  TensorMap t;
  make_exl2_layer(t, "a", K, 1024, exl2_recipe_for_bpw(4.0), 21);
  make_exl2_layer(t, "c", K, 512, exl2_recipe_for_bpw(3.0), 22);
  make_exl2_layer(t, "b", K, 768, exl2_recipe_for_bpw(5.0), 23);
  t["b.q_invperm"] = t.at("a.q_invperm");  // b reads x in a's row order
  MemoryTensorSource src(std::move(t));
  std::vector<LinearSource> layers;
  for (const char* name : {"a", "c", "b"}) {
    layers.push_back(source_of(src, name, QuantizedLinearOptions{}));
  }
  for (int64_t rows : {120, 200}) {
    TestBatch batch = one_sequence(rows);
    DeviceTensor in = gpu->alloc_activation(rows, K);
    const PreparedBatch p = gpu->prepare_batch(batch.desc());
    Keep keep;
    std::vector<const BackendWeight*> weights;
    std::vector<DeviceTensor> outs;
    for (const LinearSource& l : layers) {
      keep.push_back(gpu->upload_linear(l));
      weights.push_back(keep.back().get());
      outs.push_back(gpu->alloc_activation(rows, l.quantized->out_features()).first_rows(p.tokens));
    }
    for (int round = 0; round < 2; ++round) {
      const auto x = random_values(static_cast<size_t>(rows * K), 60 + rows + round, 1.0f);
      load(*gpu, x, rows, K, in, p.tokens, keep);
      gpu->linears(weights, in.first_rows(p.tokens), outs);
      for (size_t i = 0; i < layers.size(); ++i) {
        const auto together = gpu->read(outs[i], rows);
        const auto alone = run_linear(*gpu, layers[i], x, rows);
        EXPECT_TRUE(std::equal(together.begin(), together.end(), alone.begin()))
            << "matrix " << i << ", " << rows << " rows, call " << round;
        const auto d = compare(together, run_linear(*cpu, layers[i], x, rows));
        EXPECT_TRUE(d.finite && d.nmse <= 1e-5 && d.max_abs <= 4e-3 * d.max_ref)
            << "matrix " << i << ", " << rows << " rows: " << d.str();
      }
    }
  }
}

// Many rows' fp16 weight slices written on a side stream into two buffers in turn
// (CudaBackendOptions::dequant_overlap) give the bits of one buffer written in line: three
// EXL2 matrices in a row (each in its own row order, so x is gathered) of 8 to 79 slices each,
// so that both buffers are refilled within a matrix and across matrices; and the CPU's values.
// The row counts also take x's gather (kernels::quant_gather_x) through one row a block (97,
// 300) and several (1,101: four a block, the last block one row), and a matrix with K past the
// gather's shared memory through its global-memory reads (600 rows: two a block).
TEST_F(QuantGpu, DequantOverlapGivesTheBitsOfOneBuffer) {
  CudaBackendOptions in_line;
  in_line.quant_mma_min_rows = 0;  // every row count past the fused kernel dequantizes
  in_line.dequant_slice_bytes = size_t(256) << 10;
  in_line.dequant_overlap = false;
  CudaBackendOptions overlapped = in_line;
  overlapped.dequant_overlap = true;
  auto a_backend = create_cuda_backend(in_line);
  auto b_backend = create_cuda_backend(overlapped);
  auto expect_same_and_right = [&](const std::vector<LinearSource>& layers, int64_t rows,
                                   uint64_t seed) {
    const int64_t K = layers.front().quantized->in_features();
    const auto x = random_values(static_cast<size_t>(rows * K), seed, 1.0f);
    const auto a = run_linears_together(*a_backend, layers, x, rows);
    const auto b = run_linears_together(*b_backend, layers, x, rows);
    for (size_t i = 0; i < layers.size(); ++i) {
      EXPECT_TRUE(std::equal(a[i].begin(), a[i].end(), b[i].begin()))
          << "matrix " << i << ", " << rows << " rows, seed " << seed;
      const auto d = compare(b[i], run_linear(*cpu, layers[i], x, rows));
      EXPECT_TRUE(d.finite && d.nmse <= 1e-5 && d.max_abs <= 4e-3 * d.max_ref)
          << "matrix " << i << ", " << rows << " rows: " << d.str();
    }
  };
  TensorMap t;
  std::unique_ptr<MemoryTensorSource> src;
  const std::vector<LinearSource> layers = three_exl2_linears(t, 2048, src);
  for (int64_t rows : {97, 300}) {
    for (uint64_t round = 0; round < 2; ++round)
      expect_same_and_right(layers, rows, 70 + rows + round);
  }
  expect_same_and_right(layers, 1101, 71);
  TensorMap w;
  make_exl2_layer(w, "wide", 24608, 96, exl2_recipe_for_bpw(4.0), 16, true);
  MemoryTensorSource wide_src(std::move(w));
  expect_same_and_right({source_of(wide_src, "wide", QuantizedLinearOptions{})}, 600, 72);
}

// A matrix the fused kernel refuses past 32 rows for its partials' size (2 slices × 64 rows ×
// 140,032 outputs pass kQuantPartialBytesPerMatrix, as an 8B head's 128,256 do) takes the
// packed-tile product up to quant_mma_max_rows instead of fp16 weights and cuBLAS: the bits of
// the product forced from 33 rows, and the CPU's values on a few rows.
TEST_F(QuantGpu, WideHeadsPastTheFusedRowsTakeThePackedTileProduct) {
  constexpr int64_t K = 1024, N = 140032, kCpuRows = 4;
  TensorMap t;
  make_exl2_layer(t, "head", K, N, exl2_recipe_for_bpw(4.0), 46);
  MemoryTensorSource src(std::move(t));
  const LinearSource head = source_of(src, "head", {});
  CudaBackendOptions forced;
  forced.quant_fused_max_rows = kernels::kQuantGemmMaxRows;
  forced.quant_mma_min_rows = kernels::kQuantGemmMaxRows + 1;
  auto product = create_cuda_backend(forced);
  for (int64_t rows : {64, 96}) {
    const auto x = random_values(static_cast<size_t>(rows * K), 90 + rows, 1.0f);
    const auto by_default = run_linear(*gpu, head, x, rows);
    EXPECT_TRUE(by_default == run_linear(*product, head, x, rows)) << rows << " rows";
    const std::vector<float> x_few(x.begin(), x.begin() + kCpuRows * K);
    const std::vector<float> few(by_default.begin(), by_default.begin() + kCpuRows * N);
    const auto d = compare(few, run_linear(*cpu, head, x_few, kCpuRows));
    EXPECT_TRUE(d.finite && d.nmse <= 1e-5 && d.max_abs <= 4e-3 * d.max_ref)
        << rows << " rows: " << d.str();
  }
}

// silu_mul_linear() without the activation kept computes it inside down's gather (act-order
// weights, many rows): the bits of silu_mul() then linear(), which a kept activation takes, and
// the CPU's values. Rows on the packed-tile product (120) and the cuBLAS path (97, 300, 1,101);
// K staged in shared memory (2,048; 14,336 as Llama-3-8B's down; 1,004, whose rows are not whole
// 16-byte pieces) and past it (24,608: read from global memory); EXL2 and GPTQ act-order.
TEST_F(QuantGpu, SiluMulLinearGathersTheActivationWithSiluMulThenLinearsBits) {
  auto expect_fused_like_separate = [&](const LinearSource& src, int64_t rows, uint64_t seed) {
    const int64_t K = src.quantized->in_features(), N = src.quantized->out_features();
    const std::string what = src.name + ", " + std::to_string(rows) + " rows";
    const auto gate_values = random_values(static_cast<size_t>(rows * K), seed, 3.0f);
    const auto up_values = random_values(static_cast<size_t>(rows * K), seed + 1, 1.0f);
    auto run = [&](Backend& b, bool keep_activation, std::vector<float>* gate_after) {
      TestBatch batch = one_sequence(rows);
      DeviceTensor gate = b.alloc_activation(rows, K), up = b.alloc_activation(rows, K);
      DeviceTensor out = b.alloc_activation(rows, N);
      const PreparedBatch p = b.prepare_batch(batch.desc());
      Keep keep;
      load(b, gate_values, rows, K, gate, p.tokens, keep);
      load(b, up_values, rows, K, up, p.tokens, keep);
      auto w = b.upload_linear(src);
      b.silu_mul_linear(gate.first_rows(p.tokens), up.first_rows(p.tokens), *w,
                        out.first_rows(p.tokens), keep_activation);
      if (gate_after) *gate_after = b.read(gate, rows);
      return b.read(out, rows);
    };
    std::vector<float> gate_after, gate_loaded;
    const auto fused = run(*gpu, false, &gate_after);
    const auto separate = run(*gpu, true, nullptr);
    EXPECT_TRUE(std::equal(fused.begin(), fused.end(), separate.begin())) << what;
    // The fused path leaves gate as loaded (the separate one overwrites it with the activation).
    {
      TestBatch batch = one_sequence(rows);
      DeviceTensor gate = gpu->alloc_activation(rows, K);
      const PreparedBatch p = gpu->prepare_batch(batch.desc());
      Keep keep;
      load(*gpu, gate_values, rows, K, gate, p.tokens, keep);
      gate_loaded = gpu->read(gate, rows);
    }
    EXPECT_TRUE(gate_after == gate_loaded) << what << ": the activation was written to gate";
    const auto d = compare(fused, run(*cpu, true, nullptr));
    EXPECT_TRUE(d.finite && d.nmse <= 1e-5 && d.max_abs <= 4e-3 * d.max_ref)
        << what << ": " << d.str();
  };
  TensorMap t;
  make_exl2_layer(t, "exl2_k2048", 2048, 1024, exl2_recipe_for_bpw(4.0), 41);
  make_exl2_layer(t, "exl2_k14336", 14336, 96, exl2_recipe_for_bpw(4.0), 42, true);
  make_exl2_layer(t, "exl2_k1004", 1004, 160, exl2_recipe_for_bpw(5.0), 43);
  make_exl2_layer(t, "exl2_k24608", 24608, 64, exl2_recipe_for_bpw(4.0), 44);
  const GptqRecipe gptq{4, 128, true, false, false};
  make_gptq_layer(t, "gptq_k4096", 4096, 512, gptq, 45);
  MemoryTensorSource src(std::move(t));
  for (int64_t rows : {97, 120, 300, 1101}) {
    expect_fused_like_separate(source_of(src, "exl2_k2048", {}), rows, 80 + rows);
  }
  for (int64_t rows : {300, 1101}) {
    expect_fused_like_separate(source_of(src, "exl2_k14336", {}), rows, 81 + rows);
  }
  expect_fused_like_separate(source_of(src, "exl2_k1004", {}), 300, 82);
  expect_fused_like_separate(source_of(src, "exl2_k24608", {}), 600, 83);
  QuantizedLinearOptions o;
  o.quantization_config_json = gptq_config_json(gptq);
  for (int64_t rows : {120, 300}) {
    expect_fused_like_separate(source_of(src, "gptq_k4096", o), rows, 84 + rows);
  }
}

// Two backends whose options change only how a fused quantized linear is organised, not what
// it adds in which order, give the same bits: three matrices sharing a launch (one with a bias,
// 4 to 16 slices), a k/v-sized matrix of 32 slices and a GPTQ act-order one, 1 to 32 rows.
void expect_the_same_bits(Backend& cpu, const CudaBackendOptions& a_options,
                          const CudaBackendOptions& b_options) {
  auto a_backend = create_cuda_backend(a_options);
  auto b_backend = create_cuda_backend(b_options);
  const int64_t K = 2048;
  TensorMap t;
  std::unique_ptr<MemoryTensorSource> src;
  const std::vector<LinearSource> layers = three_exl2_linears(t, K, src);
  TensorMap more;
  make_exl2_layer(more, "kv", 4096, 1024, exl2_recipe_for_bpw(4.0), 14, true);
  const GptqRecipe gptq{4, 128, true, false, false};
  make_gptq_layer(more, "g", 4096, 4096, gptq, 15);
  MemoryTensorSource more_src(std::move(more));
  QuantizedLinearOptions gptq_options;
  gptq_options.quantization_config_json = gptq_config_json(gptq);
  const std::vector<LinearSource> alone = {source_of(more_src, "kv", QuantizedLinearOptions{}),
                                           source_of(more_src, "g", gptq_options)};
  for (int64_t rows : {1, 2, 3, 8, 9, 17, 32}) {
    const auto x = random_values(static_cast<size_t>(rows * 4096), 40 + rows, 1.0f);
    const std::vector<float> x_group(x.begin(), x.begin() + rows * K);
    const auto a = run_linears_together(*a_backend, layers, x_group, rows);
    const auto b = run_linears_together(*b_backend, layers, x_group, rows);
    for (size_t i = 0; i < layers.size(); ++i) {
      EXPECT_TRUE(std::equal(a[i].begin(), a[i].end(), b[i].begin()))
          << "matrix " << i << " of the group, " << rows << " rows";
    }
    for (size_t i = 0; i < alone.size(); ++i) {
      const auto one = run_linear(*a_backend, alone[i], x, rows);
      const auto other = run_linear(*b_backend, alone[i], x, rows);
      EXPECT_TRUE(std::equal(one.begin(), one.end(), other.begin()))
          << (i == 0 ? "k/v-sized EXL2, " : "GPTQ act-order, ") << rows << " rows";
    }
    const auto d = compare(a[1], run_linear(cpu, layers[1], x_group, rows));
    EXPECT_TRUE(d.finite && d.nmse <= 1e-5 && d.max_abs <= 4e-3 * d.max_ref)
        << rows << " rows: " << d.str();
  }
}

// Beyond 32 rows the fused kernel gives each group of 32 rows blocks of their own: every row keeps
// the bits it has in a launch of its group alone, so batches of up to quant_fused_max_rows rows
// are batch invariant; three matrices sharing a launch and a GPTQ act-order one, against the CPU
// too.
TEST_F(QuantGpu, RowGroupsGiveEachRowTheBitsOfItsGroupAlone) {
  CudaBackendOptions wide;
  wide.quant_fused_max_rows = kernels::kQuantGemmMaxLaunchRows;
  auto b = create_cuda_backend(wide);
  const int64_t K = 2048;
  TensorMap t;
  std::unique_ptr<MemoryTensorSource> src;
  const std::vector<LinearSource> layers = three_exl2_linears(t, K, src);
  TensorMap more;
  const GptqRecipe gptq{4, 128, true, false, false};
  make_gptq_layer(more, "g", K, 4096, gptq, 16);
  MemoryTensorSource more_src(std::move(more));
  QuantizedLinearOptions gptq_options;
  gptq_options.quantization_config_json = gptq_config_json(gptq);
  const LinearSource g = source_of(more_src, "g", gptq_options);
  // Up to 192 rows: the widest matrix's partials stay within kQuantPartialBytesPerMatrix (beyond
  // it a matrix takes the cuBLAS path).
  for (int64_t rows : {33, 64, 100, 192}) {
    const auto x = random_values(static_cast<size_t>(rows * K), 70 + rows, 1.0f);
    const auto all = run_linears_together(*b, layers, x, rows);
    const auto all_g = run_linear(*b, g, x, rows);
    for (int64_t r0 = 0; r0 < rows; r0 += kernels::kQuantGemmMaxRows) {
      const int64_t n = std::min<int64_t>(kernels::kQuantGemmMaxRows, rows - r0);
      const std::vector<float> x_group(x.begin() + r0 * K, x.begin() + (r0 + n) * K);
      const auto part = run_linears_together(*b, layers, x_group, n);
      const std::string what = "rows " + std::to_string(r0) + ".." + std::to_string(r0 + n) +
                               " of " + std::to_string(rows);
      for (size_t i = 0; i < layers.size(); ++i) {
        const int64_t N = layers[i].quantized->out_features();
        EXPECT_TRUE(std::equal(part[i].begin(), part[i].end(), all[i].begin() + r0 * N))
            << "matrix " << i << ", " << what;
      }
      const auto part_g = run_linear(*b, g, x_group, n);
      EXPECT_TRUE(std::equal(part_g.begin(), part_g.end(), all_g.begin() + r0 * 4096))
          << "GPTQ act-order, " << what;
    }
    if (rows > 100) continue;  // the CPU's share of the test's time
    for (size_t i = 0; i < layers.size(); ++i) {
      const auto d = compare(all[i], run_linear(*cpu, layers[i], x, rows));
      EXPECT_TRUE(d.finite && d.nmse <= 1e-5 && d.max_abs <= 4e-3 * d.max_ref)
          << "matrix " << i << ", " << rows << " rows: " << d.str();
    }
  }
}

// The many-row product straight from the packed tiles (kernels::quant_mma_gemm, here for every
// launch past 32 rows) against the CPU: every EXL2 width and mix, GPTQ act-order, asym, odd groups
// and per-channel, every GGUF type; shapes that are not multiples of the block's 128 outputs or
// 128 rows; K in order and gathered, whole and split over blocks; tall and wide blocks, and the
// wide ones on Hopper's warpgroup MMA where the GPU has it. Unsplit, a row's bits do not depend on
// the batch, nor (mma.sync's shapes) on the block shape.
TEST_F(QuantGpu, PackedTileProductMatchesTheCpuAndKeepsRowsBatchInvariant) {
  CudaBackendOptions o;
  o.quant_fused_max_rows = kernels::kQuantGemmMaxRows;
  o.quant_mma_min_rows = kernels::kQuantGemmMaxRows + 1;
  o.quant_mma_max_rows = int64_t(1) << 30;
  o.quant_mma_wide_blocks = false;
  auto mma = create_cuda_backend(o);
  CudaBackendOptions wide_options = o;
  wide_options.quant_mma_wide_blocks = true;
  auto wide = create_cuda_backend(wide_options);
  // Hopper's warpgroup MMA where the GPU and the build have it.
  const bool wgmma = kernels::wgmma_supported();
  std::printf("[ packed tiles ] warpgroup MMA (sm_90a) %s\n",
              wgmma ? "available: tested too" : "not available here");
  CudaBackendOptions wgmma_options = wide_options;
  wgmma_options.quant_mma_wgmma = true;
  auto warpgroup = create_cuda_backend(wgmma_options);
  auto check = [&](const LinearSource& source, const std::vector<int64_t>& rows_list,
                   const std::string& what) {
    expect_matches(*mma, *cpu, source, rows_list, what + ", tall blocks");
    expect_matches(*wide, *cpu, source, rows_list, what + ", wide blocks");
    if (wgmma) expect_matches(*warpgroup, *cpu, source, rows_list, what + ", wgmma");
  };
  const std::vector<int64_t> rows = {33, 100, 129, 300};
  const auto single = single_width_recipe;
  const Exl2Recipe all6 = every_width_recipe();
  struct Exl2Case {
    int64_t k, n;
    Exl2Recipe recipe;
    bool bias;
  };
  std::vector<Exl2Case> exl2 = {{4096, 1024, exl2_recipe_for_bpw(4.0), true},
                                {2048, 1001, exl2_head_recipe(), false},
                                {1000, 256, all6, true},
                                {1056, 96, single(4, 128), false}};
  for (int b : {2, 3, 5, 6, 8}) exl2.push_back({768, 160, single(b, 32), b % 2 == 0});
  for (size_t i = 0; i < exl2.size(); ++i) {
    const Exl2Case& c = exl2[i];
    TensorMap t;
    make_exl2_layer(t, "l", c.k, c.n, c.recipe, 400 + i, c.bias);
    MemoryTensorSource src(std::move(t));
    QuantizedLinearOptions q;
    q.out_features = c.n;
    check(source_of(src, "l", q), rows,
          "EXL2 " + std::to_string(c.k) + "x" + std::to_string(c.n) + " case " + std::to_string(i));
  }
  const std::vector<GptqRecipe> gptq = {{4, 128, true, true, false},
                                        {3, 128, true, false, true},
                                        {8, 32, true, false, false},
                                        {4, 100, false, true, false},
                                        {4, -1, false, false, false}};
  for (size_t i = 0; i < gptq.size(); ++i) {
    const GptqRecipe& r = gptq[i];
    const int64_t k = r.group_size == 100 ? 1000 : 1024;
    TensorMap t;
    make_gptq_layer(t, "l", k, 608, r, 500 + i);
    MemoryTensorSource src(std::move(t));
    QuantizedLinearOptions q;
    q.quantization_config_json = gptq_config_json(r);
    check(source_of(src, "l", q), rows,
          "GPTQ " + std::to_string(r.bits) + "-bit g" + std::to_string(r.group_size) +
              (r.act_order ? " act-order" : "") + (r.sym ? " sym" : " asym"));
  }
  for (GgmlType type : kGgufTypes) {
    const RandomGgufLinear l = random_gguf_linear(type, 29);
    check(l.source, {33, 130}, l.source.name);
  }
  // K split over blocks (few rows: every launch above but the 300-row ones of the narrow
  // matrices) on a q_proj shape too.
  TensorMap t;
  make_exl2_layer(t, "l", 4096, 4096, exl2_recipe_for_bpw(4.0), 7, true);
  MemoryTensorSource src(std::move(t));
  const LinearSource s = source_of(src, "l", QuantizedLinearOptions{});
  expect_matches(*mma, *cpu, s, {33, 64}, "EXL2 4096x4096, K split");
  // Batch invariance without the split: the first rows of a 300-row launch against launches of
  // those rows alone.
  o.quant_mma_split_k = false;
  auto whole = create_cuda_backend(o);
  const auto x = random_values(static_cast<size_t>(300 * 4096), 8, 1.0f);
  const auto all = run_linear(*whole, s, x, 300);
  for (int64_t n : {33, 128, 129, 257}) {
    const auto part = run_linear(*whole, s, std::vector<float>(x.begin(), x.begin() + n * 4096), n);
    EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin())) << "rows " << n;
  }
  // The wide blocks (256 outputs × 64 rows) sum every output in the same order.
  o.quant_mma_wide_blocks = true;
  auto wide_whole = create_cuda_backend(o);
  EXPECT_EQ(run_linear(*wide_whole, s, x, 300), all);
  // The warpgroup MMA sums within each k16 step its own way, but its rows are batch-invariant too.
  if (wgmma) {
    o.quant_mma_wgmma = true;
    auto warpgroup_whole = create_cuda_backend(o);
    const auto all_wgmma = run_linear(*warpgroup_whole, s, x, 300);
    for (int64_t n : {33, 64, 65, 257}) {
      const auto part =
          run_linear(*warpgroup_whole, s, std::vector<float>(x.begin(), x.begin() + n * 4096), n);
      EXPECT_TRUE(std::equal(part.begin(), part.end(), all_wgmma.begin())) << "wgmma rows " << n;
    }
  }
}

// The K slices' partials added by a kernel of their own (CudaBackendOptions::
// slice_sum_kernel_min_rows) give the bits of the last block of each column group adding them.
TEST_F(QuantGpu, SliceSumKernelGivesTheBitsOfTheInKernelSum) {
  CudaBackendOptions always, never;
  always.slice_sum_kernel_min_rows = 1;
  never.slice_sum_kernel_min_rows = kernels::kQuantGemmMaxRows + 1;
  expect_the_same_bits(*cpu, always, never);
}

// x laid out by a kernel of its own and copied by the blocks (CudaBackendOptions::
// staged_x_min_rows) gives the bits of the blocks gathering it themselves.
TEST_F(QuantGpu, StagedXGivesTheBitsOfTheGatherInTheBlocks) {
  CudaBackendOptions always, never;
  always.staged_x_min_rows = 1;
  never.staged_x_min_rows = kernels::kQuantGemmMaxRows + 1;
  expect_the_same_bits(*cpu, always, never);
}

// The outputs of quantized linears of one x (queued together), then a LoRA on them, as a decode
// step records them; sequences of `per_seq` rows each, weighing the adapter slots as
// `seq_weights` says. Returns each output's rows.
std::vector<std::vector<float>> run_linears_with_lora(
    Backend& b, const std::vector<LinearSource>& layers, const LoraSource& lora,
    const std::vector<float>& x, int64_t per_seq,
    const std::vector<std::vector<float>>& seq_weights) {
  const int64_t K = layers.front().quantized->in_features();
  TestBatch batch;
  for (size_t s = 0; s < seq_weights.size(); ++s) {
    batch.seqs.push_back({0, static_cast<int32_t>(per_seq), {static_cast<int32_t>(s)}, false});
  }
  BatchDesc desc = batch.desc();
  for (size_t s = 0; s < desc.seqs.size(); ++s) desc.seqs[s].adapter_weights = seq_weights[s];
  const int64_t rows = batch.rows();
  const PreparedBatch p = b.prepare_batch(desc);
  Keep keep;
  DeviceTensor in = b.alloc_activation(p.tokens, K);
  load(b, x, rows, K, in, p.tokens, keep);
  std::vector<DeviceTensor> outs;
  for (const LinearSource& l : layers) {
    keep.push_back(b.upload_linear(l));
    outs.push_back(b.alloc_activation(p.tokens, l.quantized->out_features()).first_rows(p.tokens));
  }
  const auto adapters = b.upload_lora(lora);
  b.run(
      [&] {
        for (size_t i = 0; i < layers.size(); ++i)
          b.linear(*keep[keep.size() - layers.size() + i], in.first_rows(p.tokens), outs[i]);
        b.lora(*adapters, in.first_rows(p.tokens), outs);
      },
      std::nullopt);
  std::vector<std::vector<float>> got;
  for (const DeviceTensor& o : outs) got.push_back(b.read(o, rows));
  return got;
}

// LoRA folded into the launch of the quantized linears it adds to (kernels::QuantGemmLora):
// three matrices of one x (EXL2 in order and with a row permutation, GPTQ act-order; K of one
// projection slice and of a whole and a partial one), three
// adapter slots of ranks 4-16 on different targets (20-24 columns each: two projection tiles,
// which the 256-output matrix's one column group makes alone), every sequence weighing them its
// own way, 1 to 32 rows (kernels::kQuantGemmLoraMaxRows: every row-tile count), the slices
// added by the last block of each column group (which waits for the slices' projections) or by
// the sum kernel, and Bᵀ·t made by delta blocks or by that completion (lora_delta_max_rows: the
// default's mix, every size, never; the same bits). Against the CPU and the separate LoRA
// kernels; a sequence that weighs no adapter gets the base linears' bits, and a sequence's rows
// do not depend on the batch around them.
TEST_F(QuantGpu, LoraFoldedIntoQuantizedLinearsMatchesTheCpu) {
  const GptqRecipe gptq{4, 128, true, true, false};
  for (const auto& [K, is_gptq] :
       {std::pair<int64_t, bool>{1024, false}, {1024, true}, {1408, false}, {1408, true}}) {
    TensorMap t;
    QuantizedLinearOptions o;
    const std::vector<int64_t> asked = {1024, 256, 520};
    for (size_t i = 0; i < asked.size(); ++i) {
      const std::string name(1, static_cast<char>('a' + i));
      if (is_gptq) {
        make_gptq_layer(t, name, K, asked[i], gptq, 70 + i);
      } else {
        make_exl2_layer(t, name, K, asked[i], exl2_recipe_for_bpw(2.5 + 1.5 * i), 60 + i, i == 1);
      }
    }
    if (is_gptq) o.quantization_config_json = gptq_config_json(gptq);
    MemoryTensorSource src(std::move(t));
    std::vector<LinearSource> layers;
    std::vector<int64_t> widths;  // the layers' outputs (EXL2 pads N to whole tiles)
    for (const char* name : {"a", "b", "c"}) {
      layers.push_back(source_of(src, name, o));
      widths.push_back(layers.back().quantized->out_features());
    }
    // Slot 0 on a and c, slot 2 on all three, slot 5 on b.
    const LoraSource lora = gpu_test::three_slot_lora(K, widths, 300);
    CudaBackendOptions folding_options, in_kernel_options, unfolded_options;
    folding_options.lora_fold_max_rows = kernels::kQuantGemmLoraMaxRows;
    in_kernel_options = folding_options;
    in_kernel_options.slice_sum_kernel_min_rows = kernels::kQuantGemmMaxRows + 1;
    unfolded_options.lora_fold_max_rows = 0;
    unfolded_options.lora_kernel_max_rows = kernels::kLoraKernelMaxRows;
    // Delta blocks at every size, or never: the same bits as the default's mix of the two.
    CudaBackendOptions delta_options = folding_options, delta_in_kernel_options = in_kernel_options;
    delta_options.lora_delta_max_rows = kernels::kQuantGemmLoraMaxRows;
    delta_in_kernel_options.lora_delta_max_rows = 0;
    auto unfolded = create_cuda_backend(unfolded_options);
    auto folding_backend = create_cuda_backend(folding_options);
    auto in_kernel_backend = create_cuda_backend(in_kernel_options);
    auto delta_backend = create_cuda_backend(delta_options);
    auto delta_in_kernel_backend = create_cuda_backend(delta_in_kernel_options);
    // The last layout: every sequence weighs slot 2 alone, so the fold reads only its columns.
    for (const auto& [per_seq, seqs, one_slot, sums_in_kernel] :
         {std::tuple<int64_t, int64_t, bool, bool>{1, 1, false, false},
          {1, 2, false, false},
          {1, 5, false, false},
          {1, 8, false, false},
          {2, 4, false, false},
          {1, 3, true, false},
          {1, 12, false, false},
          {1, 20, false, false},
          {2, 16, false, false},
          {1, 2, false, true},
          {3, 5, false, true},
          {1, 32, false, true}}) {
      auto& folding =
          dynamic_cast<cuda::CudaBackend&>(sums_in_kernel ? *in_kernel_backend : *folding_backend);
      const std::string what = std::string(is_gptq ? "GPTQ" : "EXL2") + ", K " + std::to_string(K) +
                               ", " + std::to_string(seqs) + " sequences of " +
                               std::to_string(per_seq) + (one_slot ? ", slot 2 alone" : "") +
                               (sums_in_kernel ? ", slices summed in the kernel" : "");
      std::vector<std::vector<float>> weights, none(static_cast<size_t>(seqs));
      for (int64_t s = 0; s < seqs; ++s) {
        const std::vector<std::vector<float>> kinds = {
            {1.0f, 0.0f, 0.5f, 0.0f, 0.0f, 1.25f}, {0.0f, 0.0f, 1.0f}, {}, {-0.5f}};
        weights.push_back(kinds[one_slot ? 1 : static_cast<size_t>(s % 4)]);
      }
      const int64_t rows = per_seq * seqs;
      const auto x = random_values(static_cast<size_t>(rows * K), 400 + rows, 1.0f);
      const int64_t folded_before = folding.folded_loras();
      const auto got = run_linears_with_lora(folding, layers, lora, x, per_seq, weights);
      EXPECT_EQ(folding.folded_loras(), folded_before + 1) << what;
      const auto other_split =
          run_linears_with_lora(sums_in_kernel ? *delta_in_kernel_backend : *delta_backend, layers,
                                lora, x, per_seq, weights);
      for (size_t i = 0; i < layers.size(); ++i) {
        EXPECT_TRUE(std::equal(other_split[i].begin(), other_split[i].end(), got[i].begin()))
            << what << ", output " << i << ": Bᵀ·t by delta blocks at every size or never";
      }
      const auto ref = run_linears_with_lora(*cpu, layers, lora, x, per_seq, weights);
      const auto apart = run_linears_with_lora(*unfolded, layers, lora, x, per_seq, weights);
      const auto base = run_linears_with_lora(folding, layers, lora, x, per_seq, none);
      for (size_t i = 0; i < layers.size(); ++i) {
        const auto d = compare(got[i], ref[i]);
        EXPECT_TRUE(d.finite && d.nmse <= 1e-5 && d.max_abs <= 4e-3 * d.max_ref)
            << what << ", output " << i << " against the CPU: " << d.str();
        const auto da = compare(got[i], apart[i]);
        EXPECT_TRUE(da.finite && da.nmse <= 1e-5 && da.max_abs <= 4e-3 * da.max_ref)
            << what << ", output " << i << " against the separate kernels: " << da.str();
        // Sequence 2 weighs no adapter: its rows are the base linear's, bit for bit.
        const auto n = static_cast<size_t>(widths[i] * per_seq);
        if (seqs > 2 && !one_slot) {
          EXPECT_TRUE(std::equal(got[i].begin() + static_cast<std::ptrdiff_t>(2 * n),
                                 got[i].begin() + static_cast<std::ptrdiff_t>(3 * n),
                                 base[i].begin() + static_cast<std::ptrdiff_t>(2 * n)))
              << what << ", output " << i;
        }
      }
      // Sequence 0 alone gives its rows in the batch, bit for bit.
      if (seqs > 1) {
        const auto alone = run_linears_with_lora(
            folding, layers, lora, std::vector<float>(x.begin(), x.begin() + per_seq * K), per_seq,
            {weights[0]});
        for (size_t i = 0; i < layers.size(); ++i) {
          EXPECT_TRUE(std::equal(alone[i].begin(), alone[i].end(), got[i].begin()))
              << what << ", output " << i << ": sequence 0 alone";
        }
      }
    }
  }
}

// RMSNorm folded into the quantized linears around it (decode sizes): o → add_rms_norm →
// gate, up, as a decode step records them. Against the same ops with the fold off, bit for bit
// (the norm pass adds the sum of squares in the fold's order): the delta, the residual, the
// normalized rows (the consumer writes them) and the consumers' outputs; also a norm no linear
// reads, which runs as its own pass (here: read() of its output). EXL2 and GPTQ
// act-order consumers (their x gathered through a permutation), hidden sizes with a partial
// 256-column slot, and batch sizes on both sides of the fused kernel's 32 rows.
TEST_F(QuantGpu, NormsFoldedIntoQuantizedLinearsMatchTheNormPass) {
  CudaBackendOptions on, off;
  on.fold_norm_max_rows = 32;
  off.fold_norm_max_rows = 0;
  auto fused = create_cuda_backend(on), unfused = create_cuda_backend(off);
  const GptqRecipe gptq{4, 64, true, false, false};
  for (const bool is_gptq : {false, true}) {
    for (const int64_t hidden : {int64_t(576), int64_t(1024)}) {
      const int64_t inter = 1536;
      TensorMap t;
      QuantizedLinearOptions o;
      if (is_gptq) {
        make_gptq_layer(t, "o", hidden, hidden, gptq, 41);
        make_gptq_layer(t, "gate", hidden, inter, gptq, 42);
        make_gptq_layer(t, "up", hidden, inter, gptq, 43);
        o.quantization_config_json = gptq_config_json(gptq);
      } else {
        make_exl2_layer(t, "o", hidden, hidden, exl2_recipe_for_bpw(4.0), 41);
        make_exl2_layer(t, "gate", hidden, inter, exl2_recipe_for_bpw(3.0), 42);
        make_exl2_layer(t, "up", hidden, inter, exl2_recipe_for_bpw(5.0), 43);
      }
      MemoryTensorSource src(std::move(t));
      const LinearSource lo = source_of(src, "o", o), lg = source_of(src, "gate", o),
                         lu = source_of(src, "up", o);
      const std::vector<float> norm_w = random_values(static_cast<size_t>(hidden), 44, 2.0f);
      std::vector<float> first_row_gate;  // of the first fused batch size
      for (const int64_t rows : {1, 2, 5, 32, 40}) {
        const std::string what = std::string(is_gptq ? "GPTQ" : "EXL2") + " hidden " +
                                 std::to_string(hidden) + ", " + std::to_string(rows) + " rows";
        const auto attn_values = random_values(static_cast<size_t>(rows * hidden), 45, 1.0f);
        const auto residual_values = random_values(static_cast<size_t>(rows * hidden), 46, 3.0f);
        struct Outputs {
          std::vector<float> delta, residual, normed, gate, up, residual2, normed2;
        };
        auto run = [&](Backend& b) {
          TestBatch batch = one_sequence(rows);
          DeviceTensor attn = b.alloc_activation(rows, hidden),
                       x = b.alloc_activation(rows, hidden);
          DeviceTensor delta = b.alloc_activation(rows, hidden),
                       h = b.alloc_activation(rows, hidden);
          DeviceTensor gate = b.alloc_activation(rows, inter), up = b.alloc_activation(rows, inter);
          const PreparedBatch p = b.prepare_batch(batch.desc());
          Keep keep;
          load(b, attn_values, rows, hidden, attn, p.tokens, keep);
          load(b, residual_values, rows, hidden, x, p.tokens, keep);
          auto wo = b.upload_linear(lo), wg = b.upload_linear(lg), wu = b.upload_linear(lu);
          auto wn = b.upload(HostTensor::from_floats(norm_w, {hidden}));
          const int64_t T = p.tokens;
          b.linear(*wo, attn.first_rows(T), delta.first_rows(T));
          b.add_rms_norm(x.first_rows(T), delta.first_rows(T), *wn, 1e-5f, h.first_rows(T));
          b.linear(*wg, h.first_rows(T), gate.first_rows(T));
          b.linear(*wu, h.first_rows(T), up.first_rows(T));
          Outputs out;
          out.delta = b.read(delta, rows);
          out.residual = b.read(x, rows);
          out.normed = b.read(h, rows);
          out.gate = b.read(gate, rows);
          out.up = b.read(up, rows);
          // A second fold whose norm nothing reads but read(): the norm pass runs.
          b.linear(*wo, attn.first_rows(T), delta.first_rows(T));
          b.add_rms_norm(x.first_rows(T), delta.first_rows(T), *wn, 1e-5f, h.first_rows(T));
          out.normed2 = b.read(h, rows);
          out.residual2 = b.read(x, rows);
          return out;
        };
        const Outputs f = run(*fused), u = run(*unfused);
        // Row 0 (the same input at every size) comes out the same at every fused batch size.
        if (rows <= 32) {
          const std::vector<float> row0(f.gate.begin(), f.gate.begin() + inter);
          if (first_row_gate.empty()) first_row_gate = row0;
          EXPECT_EQ(row0, first_row_gate) << what << ": row 0 depends on the batch size";
        }
        EXPECT_EQ(f.delta, u.delta) << what;
        EXPECT_EQ(f.residual, u.residual) << what;
        EXPECT_EQ(f.residual2, u.residual2) << what;
        EXPECT_EQ(f.normed2, u.normed2) << what;
        // The norm pass adds the sum of squares in the fold's order: the same bits throughout.
        EXPECT_EQ(f.normed, u.normed) << what;
        EXPECT_EQ(f.gate, u.gate) << what;
        EXPECT_EQ(f.up, u.up) << what;
        const auto d = compare(f.gate, run_linear(*cpu, lg, u.normed, rows));
        EXPECT_TRUE(d.finite && d.nmse <= 1e-5 && d.max_abs <= 4e-3 * d.max_ref)
            << what << " gate against the CPU: " << d.str();
      }
    }
  }
}

// A whole model: prefill, then decode steps (the backend captures and replays them as CUDA
// graphs after a warm-up step), against the CPU backend step by step.
// With `adapter_rank`, a LoRA of that rank on all seven projections, weighed 1 (folded into the
// quantized linears on the GPU).
void model_parity(Backend& gpu, Backend& cpu, const std::string& config_name,
                  const SyntheticQuantSource::Options& so, int64_t adapter_rank = 0) {
  ModelConfig config = synthetic_model_config(config_name);
  SyntheticQuantSource weights(config, so);
  config.quantization_config_json = weights.quantization_config_json();
  LlamaModelOptions mo;
  mo.max_seq_len = 256;
  mo.max_batch_tokens = 64;
  mo.max_logit_rows = 8;
  LlamaModel gm(config, gpu, weights, mo);
  LlamaModel cm(config, cpu, weights, mo);
  const std::vector<float> adapter_weights = {1.0f};
  if (adapter_rank > 0) {
    const auto adapter = synthetic_lora_adapter(config, adapter_rank, 55, {}, 0.3f);
    gm.set_adapters({adapter});
    cm.set_adapters({adapter});
  }
  auto gc = gpu.create_kv_cache(gm.kv_cache_spec(2, 256));
  auto cc = cpu.create_kv_cache(cm.kv_cache_spec(2, 256));
  std::vector<int32_t> prompt(40);
  for (size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = static_cast<int32_t>((i * 37 + 11) % config.vocab_size);
  const std::vector<int32_t> pages = {0};
  int32_t pos = 0;
  std::vector<int32_t> step_tokens = prompt;
  for (int step = 0; step < 8; ++step) {
    BatchDesc batch;
    SequenceSlice s;
    s.tokens = step_tokens;
    s.start_pos = pos;
    s.page_table = pages;
    if (adapter_rank > 0) s.adapter_weights = adapter_weights;
    batch.seqs.push_back(s);
    const auto g = gpu.read(gm.forward(batch, *gc), 1);
    const auto c = cpu.read(cm.forward(batch, *cc), 1);
    const auto d = compare(g, c);
    // fp16 activations through every layer against fp32: a looser gate than one op.
    EXPECT_TRUE(d.finite && d.nmse <= 5e-4)
        << config_name << " " << so.format << (adapter_rank > 0 ? " with LoRA" : "") << " step "
        << step << ": " << d.str();
    pos += static_cast<int32_t>(step_tokens.size());
    const int32_t next = static_cast<int32_t>(std::max_element(c.begin(), c.end()) - c.begin());
    step_tokens = {next};
  }
}

TEST_F(QuantGpu, WholeModelsMatchTheCpuThroughGraphReplays) {
  SyntheticQuantSource::Options e;
  e.format = "exl2";
  for (double bpw : {2.5, 4.0, 6.0}) {
    e.bpw = bpw;
    model_parity(*gpu, *cpu, "tiny-odd", e);
  }
  SyntheticQuantSource::Options g;
  g.format = "gptq";
  model_parity(*gpu, *cpu, "tiny", g);
  // With an adapter on every projection, folded into the quantized linears' launches.
  auto& folding = dynamic_cast<cuda::CudaBackend&>(*gpu);
  const int64_t folded_before = folding.folded_loras();
  e.bpw = 4.0;
  model_parity(*gpu, *cpu, "tiny", e, 8);
  model_parity(*gpu, *cpu, "tiny", g, 16);
  EXPECT_GT(folding.folded_loras(), folded_before);
}

// Decode steps of more rows than the fused kernel takes, on the dequantize + cuBLAS path with
// its slices on a side stream (CudaBackendOptions::dequant_overlap, on by default for steps run
// directly): the warm-up step takes the path the capture takes, so the next step is captured and
// the rest replay it. Before, the warm-up wrote the slices beside cuBLAS and left the capture's
// one buffer ungrown, so every capture was abandoned and the step recorded twice. The logits are
// those of the same steps without graphs (the two buffers give the bits of one).
TEST_F(QuantGpu, ManyRowDecodeStepsOnTheDequantizePathAreCapturedOnce) {
  gpu_test::expect_many_row_steps_captured_once(
      [](const CudaBackendOptions& o) { return create_cuda_backend(o); });
}

}  // namespace
}  // namespace hearth
