// GGUF linears kept packed decode to exactly the values the plain path (dequantize, then undo
// the RoPE row permutation) gives, for every linear tensor of the real SmolLM2 file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string_view>

#include "engine/core/dtype.h"
#include "engine/core/quantized_weight.h"
#include "engine/io/gguf_block_weight.h"
#include "engine/io/gguf_config.h"
#include "engine/io/gguf_file.h"
#include "engine/io/gguf_source.h"
#include "tests/common/test_paths.h"
#include "tests/unit/io/gguf_test_util.h"

namespace hearth {
namespace {

TEST(GgufPacked, EveryLinearDecodesBitIdenticallyToTheDequantizedTensor) {
  auto gguf = std::make_shared<const GgufFile>(GgufFile::open(test::test_model()));
  const ModelConfig config = config_from_gguf(*gguf);
  auto source = open_gguf_source(gguf, config);
  int checked = 0;
  for (const std::string& name : source->tensor_names()) {
    const auto packed = source->packed(name);
    const TensorInfo info = source->info(name);
    if (info.shape.size() != 2) {
      EXPECT_EQ(packed, nullptr) << name;
      continue;
    }
    ASSERT_NE(packed, nullptr) << name << " (" << info.stored_type << ")";
    const HostTensor plain = source->get(name);
    ASSERT_EQ(packed->out_features(), plain.shape[0]);
    ASSERT_EQ(packed->in_features(), plain.shape[1]);
    std::vector<float> rows(static_cast<size_t>(plain.numel()));
    // In two uneven pieces, to exercise block boundaries.
    const int64_t split = plain.shape[0] / 3;
    packed->dequantize_rows(0, split, rows.data());
    packed->dequantize_rows(split, plain.shape[0], rows.data() + split * plain.shape[1]);
    ASSERT_EQ(std::memcmp(rows.data(), plain.data, plain.nbytes()), 0) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 30 * 7 + 1);  // 7 linears per layer and the (tied) embedding
}

// Values of rows 0, step, 2·step, ... where GgufCodeForm's fma on the row's codes differs from
// the dequantized fp32 value.
int64_t code_form_mismatches(const GgufBlockWeight& w, int64_t step) {
  const GgufCodeForm form = w.code_form();
  EXPECT_GT(form.bits, 0);
  const int64_t K = w.in_features();
  GgufRowCodes row;
  std::vector<float> values(static_cast<size_t>(K));
  int64_t mismatches = 0;
  for (int64_t n = 0; n < w.out_features(); n += step) {
    w.row_codes(n, row);
    w.dequantize_rows(n, n + 1, values.data());
    for (int64_t k = 0; k < K; ++k) {
      const auto s = static_cast<size_t>(k / form.super_inputs), h = static_cast<size_t>(k / 16);
      const float a = half_to_float(row.d[s]) * static_cast<float>(row.sc[h]);
      const float b = -(half_to_float(row.dmin[s]) * static_cast<float>(row.m[h]));
      const float q = static_cast<float>(row.codes[static_cast<size_t>(k)] - form.zero);
      mismatches += std::fma(a, q, b) != values[static_cast<size_t>(k)];
    }
  }
  return mismatches;
}

// The real file's Q8_0 table (the embedding and tied head) and its Q4_1 linears, read as codes
// and scales, give GgufCodeForm's fma: their dequantized fp32 values exactly.
TEST(GgufPacked, RowCodesAreTheDequantizedValues) {
  auto gguf = std::make_shared<const GgufFile>(GgufFile::open(test::test_model()));
  const auto source = open_gguf_source(gguf, config_from_gguf(*gguf));
  for (const char* name : {"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
                           "model.layers.29.mlp.down_proj.weight"}) {
    SCOPED_TRACE(name);
    const auto packed = source->packed(name);
    ASSERT_NE(packed, nullptr);
    const auto& w = dynamic_cast<const GgufBlockWeight&>(*packed);
    EXPECT_EQ(w.type(), std::string_view(name).starts_with("model.embed") ? GgmlType::kQ8_0
                                                                          : GgmlType::kQ4_1);
    EXPECT_EQ(code_form_mismatches(w, 7), 0);
  }
}

// The same for random blocks of every type with a code form (K: two K-quant super-blocks).
TEST(GgufPacked, RandomBlocksOfEveryTypeGiveTheirDequantizedValues) {
  for (GgmlType type : {GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kQ8_0, GgmlType::kQ4_1,
                        GgmlType::kQ5_1, GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K,
                        GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS}) {
    SCOPED_TRACE(ggml_type_name(type));
    const test::Bytes image = test::random_block_tensor(type, 512, 24, 11);
    auto file =
        std::make_shared<const GgufFile>(GgufFile::parse(std::span<const std::byte>(image)));
    const GgufBlockWeight w(file, file->tensors().at(0), {});
    EXPECT_EQ(code_form_mismatches(w, 1), 0);
  }
}

}  // namespace
}  // namespace hearth
