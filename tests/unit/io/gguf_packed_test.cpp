// GGUF linears kept packed decode to exactly the values the plain path (dequantize, then undo
// the RoPE row permutation) gives, for every linear tensor of the real SmolLM2 file.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/core/dtype.h"
#include "engine/core/quantized_weight.h"
#include "engine/io/gguf_block_weight.h"
#include "engine/io/gguf_config.h"
#include "engine/io/gguf_file.h"
#include "engine/io/gguf_source.h"
#include "tests/common/test_paths.h"

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

// The real file's Q8_0 table (the embedding, and the tied head) read as codes and scales gives
// d·(q − 128), its dequantized values exactly.
TEST(GgufPacked, SymmetricCodesAreTheDequantizedValues) {
  auto gguf = std::make_shared<const GgufFile>(GgufFile::open(test::test_model()));
  const auto source = open_gguf_source(gguf, config_from_gguf(*gguf));
  const auto packed = source->packed("model.embed_tokens.weight");
  ASSERT_NE(packed, nullptr);
  const auto& w = dynamic_cast<const GgufBlockWeight&>(*packed);
  ASSERT_EQ(w.type(), GgmlType::kQ8_0);
  ASSERT_EQ(w.symmetric_code_bits(), 8);
  const int64_t K = w.in_features();
  std::vector<uint8_t> codes(static_cast<size_t>(K));
  std::vector<uint16_t> scales(static_cast<size_t>(K / 32));
  std::vector<float> row(static_cast<size_t>(K));
  int64_t mismatches = 0;
  for (int64_t n = 0; n < w.out_features(); n += 97) {
    w.symmetric_codes(n, codes.data(), scales.data());
    w.dequantize_rows(n, n + 1, row.data());
    for (int64_t k = 0; k < K; ++k) {
      const float d = half_to_float(scales[static_cast<size_t>(k / 32)]);
      mismatches += d * static_cast<float>(codes[static_cast<size_t>(k)] - 128) !=
                    row[static_cast<size_t>(k)];
    }
  }
  EXPECT_EQ(mismatches, 0);
  // Q4_1 (every other linear of this file) has a minimum per block: no symmetric codes.
  const auto q = source->packed("model.layers.0.self_attn.q_proj.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(dynamic_cast<const GgufBlockWeight&>(*q).symmetric_code_bits(), 0);
}

}  // namespace
}  // namespace hearth
