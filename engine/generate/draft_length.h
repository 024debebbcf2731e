// How many tokens to propose for one sequence: follows the sequence's recent acceptance rate, so
// text that repeats gets long proposals and text that does not stops paying for them.
#pragma once

namespace hearth {

class DraftLength {
 public:
  explicit DraftLength(int max_tokens);

  // Proposals to make at this step (0 while paused after poor acceptance).
  int next() const;
  // After a verification: `proposed` tokens were checked, the first `accepted` kept.
  void record(int proposed, int accepted);
  // A step in which the sequence proposed nothing (counts a pause down).
  void skip();
  double acceptance() const;  // the per-token estimate (decayed counts)

 private:
  int max_tokens_;
  double kept_ = 1.0;     // decayed count of accepted proposals
  double checked_ = 2.0;  // decayed count of proposals whose fate was seen
  int paused_for_ = 0;    // steps left without proposals
  int next_pause_ = 4;    // length of the next pause (doubles while acceptance stays poor)
};

}  // namespace hearth
