// GGUF linears kept packed decode to exactly the values the plain path (dequantize, then undo
// the RoPE row permutation) gives, for every linear tensor of the real SmolLM2 file.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/core/quantized_weight.h"
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

}  // namespace
}  // namespace hearth
