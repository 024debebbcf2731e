// What the serving-loop tests share: a request of a fixed length, and reading a stream to its end.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/server/serving_loop.h"

namespace hearth::server::test {

// Greedy (the engine's default sampling) and exactly `max_tokens` long.
inline GenerationRequest fixed_length_request(const std::string& prompt, int32_t max_tokens) {
  GenerationRequest r;
  r.prompt = prompt;
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  return r;
}

// Every event of a stream until it finishes: the results per choice, and the text per choice
// when `texts` is given. A failed choice or 30 s without an event fails the test.
inline std::vector<GenerationResult> drain(RequestStream& stream, int choices,
                                           std::vector<std::string>* texts = nullptr) {
  std::vector<GenerationResult> results(static_cast<size_t>(choices));
  if (texts) texts->assign(static_cast<size_t>(choices), "");
  StreamEvent e;
  while (!stream.finished()) {
    if (!stream.next(e, std::chrono::seconds(30))) {
      ADD_FAILURE() << "no event for 30 s";
      break;
    }
    if (e.kind == StreamEvent::Kind::kText && texts) (*texts)[e.choice] += e.text;
    if (e.kind == StreamEvent::Kind::kDone) results[e.choice] = e.result;
    if (e.kind == StreamEvent::Kind::kFailed) ADD_FAILURE() << e.error;
  }
  return results;
}

}  // namespace hearth::server::test
