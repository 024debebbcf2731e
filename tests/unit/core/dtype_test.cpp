#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "engine/core/dtype.h"
#include "engine/core/error.h"
#include "engine/core/host_tensor.h"

namespace hearth {
namespace {

// Every fp16 bit pattern survives half -> float -> half (NaNs stay NaN).
TEST(DType, HalfRoundTripsEveryBitPattern) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    const uint16_t back = float_to_half(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_float(back)));
    } else {
      EXPECT_EQ(back, h) << "pattern " << h;
    }
  }
}

TEST(DType, HalfRoundsToNearestEven) {
  // 1 + 2^-11 lies exactly between 1 and the next half (1 + 2^-10): ties to even -> 1.
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3·2^-11 lies between 1+2^-10 (odd) and 1+2^-9 (even): ties to even -> 1 + 2^-9.
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // rounds up to inf
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // half of it ties to even zero
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
}

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  float f;
  uint32_t bits = 0x3f808000u;  // exactly halfway between 0x3f80 and 0x3f81
  std::memcpy(&f, &bits, 4);
  EXPECT_EQ(float_to_bf16(f), 0x3f80);
  bits = 0x3f818000u;  // halfway, odd below: rounds up
  std::memcpy(&f, &bits, 4);
  EXPECT_EQ(float_to_bf16(f), 0x3f82);
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
}

TEST(HostTensor, AllocateAndConvert) {
  HostTensor t = HostTensor::allocate(DType::kF16, {2, 3});
  EXPECT_EQ(t.nbytes(), 12u);
  auto* h = static_cast<uint16_t*>(t.mutable_data());
  for (int i = 0; i < 6; ++i) h[i] = float_to_half(static_cast<float>(i) * 0.5f);
  const std::vector<float> f = t.to_floats();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f[i], static_cast<float>(i) * 0.5f);
  EXPECT_EQ(t.shape_string(), "[2, 3]");
  EXPECT_THROW(HostTensor::allocate(DType::kF32, {-1}), Error);
}

}  // namespace
}  // namespace hearth
