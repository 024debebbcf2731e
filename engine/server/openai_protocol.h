// OpenAI's completions and chat completions API as Hearth serves it: request bodies are checked
// and turned into GenerationRequests (unknown fields are ignored and wrong types refused, as
// OpenAI does), and responses, stream chunks and errors are written in OpenAI's JSON shapes.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/api/engine.h"

namespace hearth::server {

// An error as the API reports it: an HTTP status and OpenAI's {"error": {...}} body.
struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;  // the request field at fault, if one is
  std::string code;   // e.g. "context_length_exceeded"
};

class ApiException : public std::runtime_error {
 public:
  explicit ApiException(ApiError error)
      : std::runtime_error(error.message), error_(std::move(error)) {}
  const ApiError& error() const { return error_; }

 private:
  ApiError error_;
};

std::string error_body(const ApiError& error);

enum class Endpoint { kCompletions, kChatCompletions };

struct RequestLimits {
  int max_n = 16;        // choices per prompt
  int max_prompts = 16;  // prompts in one completions request
  int max_stops = 16;
};

// A checked request, before its prompts are tokenized.
struct ApiRequest {
  Endpoint endpoint = Endpoint::kChatCompletions;
  std::string model;
  std::vector<GenerationRequest> prompts;  // sampling, stops and logprobs filled in
  bool max_tokens_given = false;           // else: 16 (completions) or the context (chat)
  int n = 1;                               // choices per prompt
  bool stream = false;
  bool include_usage = false;
};

// Throws ApiException (400) naming the field for malformed JSON, wrong types, values out of
// range and features Hearth does not serve (echo, suffix, best_of > 1, non-text content).
ApiRequest parse_request(Endpoint endpoint, std::string_view body, const RequestLimits& limits);

// The generations to run for `api`: each prompt's tokens (`prompt_tokens[i]` from
// Engine::encode_prompt) checked against the context, with max_tokens resolved; choice c of
// prompt p is entry p * n + c. Throws ApiException (400, context_length_exceeded).
std::vector<GenerationRequest> expand_choices(const ApiRequest& api,
                                              std::vector<std::vector<int32_t>> prompt_tokens,
                                              int64_t max_seq_len);

const char* finish_reason_text(FinishReason reason);  // "stop" or "length"

// How responses name tokens in log-probabilities: the token's own text (its bytes, which may be
// part of a UTF-8 character).
using TokenText = std::function<std::string(int32_t)>;

// Everything a response needs besides the results.
struct ResponseContext {
  const ApiRequest* api = nullptr;
  std::string id;  // "chatcmpl-…" / "cmpl-…"
  int64_t created = 0;
  std::string model;
  TokenText token_text;
};

// `cached_tokens`: of the prompt tokens, those served from the prefix cache.
nlohmann::json usage_json(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens);
// The cached prompt tokens usage reports: per prompt, the fewest any of its n choices reused
// (each prompt counts once, as in prompt_tokens). cached[i] belongs to choice i, in
// expand_choices order.
int64_t usage_cached_tokens(const std::vector<int64_t>& cached, size_t prompts);

// The whole response of a non-streaming request; results[i] is choice i (expand_choices order).
nlohmann::json response_body(const ResponseContext& ctx,
                             const std::vector<GenerationResult>& results,
                             const std::vector<int64_t>& prompt_tokens);

// Stream chunks. A chat choice's first chunk carries the assistant role; `text_offset` is where
// the choice's text has got to (completions' logprobs count offsets from it).
nlohmann::json text_chunk(const ResponseContext& ctx, int choice, const std::string& text,
                          std::span<const TokenLogprobs> logprobs, bool first,
                          int64_t& text_offset);
nlohmann::json end_chunk(const ResponseContext& ctx, int choice, FinishReason reason,
                         std::span<const TokenLogprobs> logprobs, int64_t& text_offset);
nlohmann::json usage_chunk(const ResponseContext& ctx, int64_t prompt_tokens,
                           int64_t completion_tokens, int64_t cached_tokens);

// The log-probabilities a response shows for `result`: every generated token but an ending
// end-of-sequence token (which has no text).
std::span<const TokenLogprobs> shown_logprobs(const GenerationResult& result);

// Serializes `j` for the wire; invalid UTF-8 in token texts becomes U+FFFD.
std::string dump(const nlohmann::json& j);

}  // namespace hearth::server
