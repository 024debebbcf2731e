#include "engine/generate/draft_length.h"

#include <algorithm>
#include <cmath>

namespace hearth {

namespace {
constexpr double kDecay = 0.8;           // weight of the history at each verification
constexpr double kPoorAcceptance = 0.2;  // below this per-token rate, pause proposing
constexpr int kLongestPause = 64;
}  // namespace

DraftLength::DraftLength(int max_tokens) : max_tokens_(std::max(0, max_tokens)) {}

double DraftLength::acceptance() const {
  return kept_ / checked_;
}

int DraftLength::next() const {
  if (paused_for_ > 0 || max_tokens_ == 0) return 0;
  // With per-token acceptance a, a run of proposals is kept for a / (1 - a) tokens on average;
  // propose a little beyond that (a longer run costs one row per token, a shorter one loses
  // accepted tokens).
  const double a = std::min(acceptance(), 0.95);
  const double run = a / (1.0 - a);
  return std::clamp(static_cast<int>(std::ceil(1.5 * run)) + 1, 1, max_tokens_);
}

void DraftLength::record(int proposed, int accepted) {
  if (proposed <= 0) return;
  // The first `accepted` were kept; the next one (if any) was the first rejected. Proposals after
  // it tell nothing about acceptance.
  kept_ = kept_ * kDecay + accepted;
  checked_ = checked_ * kDecay + accepted + (accepted < proposed ? 1 : 0);
  if (acceptance() < kPoorAcceptance) {
    paused_for_ = next_pause_;
    next_pause_ = std::min(next_pause_ * 2, kLongestPause);
    // Probe again after the pause from a neutral estimate.
    kept_ = 1.0;
    checked_ = 2.0;
  } else if (acceptance() > 2 * kPoorAcceptance) {
    next_pause_ = 4;
  }
}

void DraftLength::skip() {
  if (paused_for_ > 0) --paused_for_;
}

}  // namespace hearth
