// The OpenAI request checks and response shapes, field by field, against what OpenAI's API
// reference documents (types, ranges, defaults, error shape, chunk framing).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "engine/server/openai_protocol.h"

namespace hearth::server {
namespace {

using nlohmann::json;

ApiRequest chat(const std::string& body) {
  return parse_request(Endpoint::kChatCompletions, body, RequestLimits{});
}
ApiRequest completion(const std::string& body) {
  return parse_request(Endpoint::kCompletions, body, RequestLimits{});
}

// The ApiError a request body raises (status 400 unless said), for `endpoint`.
ApiError refusal(Endpoint endpoint, const std::string& body) {
  try {
    parse_request(endpoint, body, RequestLimits{});
  } catch (const ApiException& e) {
    return e.error();
  }
  ADD_FAILURE() << "accepted: " << body;
  return {};
}

TEST(OpenAiProtocol, ChatRequestFieldsBecomeTheGenerationRequest) {
  const ApiRequest r = chat(R"({
    "model": "anything", "user": "u1", "unknown_field": {"ignored": true},
    "messages": [{"role": "developer", "content": "Be brief."},
                 {"role": "user", "content": [{"type": "text", "text": "Hi "},
                                              {"type": "text", "text": "there"}]},
                 {"role": "assistant", "content": null}],
    "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05,
    "presence_penalty": 0.5, "frequency_penalty": -0.5, "repetition_penalty": 1.1,
    "seed": 7, "stop": ["\n\n", "END"], "max_completion_tokens": 32, "max_tokens": 999,
    "n": 2, "stream": true, "stream_options": {"include_usage": true},
    "logprobs": true, "top_logprobs": 4, "logit_bias": {"42": -100, "7": 2.5}})");
  ASSERT_EQ(r.prompts.size(), 1u);
  const GenerationRequest& g = r.prompts[0];
  ASSERT_EQ(g.messages.size(), 3u);
  EXPECT_EQ(g.messages[0].role, "system");  // "developer" is OpenAI's newer name for it
  EXPECT_EQ(g.messages[1].content, "Hi there");
  EXPECT_EQ(g.messages[2].content, "");
  EXPECT_FLOAT_EQ(g.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(g.sampling.top_p, 0.9f);
  EXPECT_EQ(g.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(g.sampling.min_p, 0.05f);
  EXPECT_FLOAT_EQ(g.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(g.sampling.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(g.sampling.repetition_penalty, 1.1f);
  EXPECT_EQ(g.sampling.seed, 7u);
  EXPECT_EQ(g.stop_strings, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_EQ(g.max_tokens, 32);  // max_completion_tokens wins over the older max_tokens
  EXPECT_TRUE(r.max_tokens_given);
  EXPECT_EQ(g.logprobs, 4);
  ASSERT_EQ(g.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(r.n, 2);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
}

TEST(OpenAiProtocol, DefaultsFollowOpenAi) {
  const ApiRequest r = chat(R"({"messages": [{"role": "user", "content": "x"}]})");
  const GenerationRequest& g = r.prompts[0];
  EXPECT_FLOAT_EQ(g.sampling.temperature, 1.0f);
  EXPECT_EQ(g.logprobs, -1);
  EXPECT_FALSE(r.max_tokens_given);
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.n, 1);
  // Without a seed each call draws its own: two calls differ (with overwhelming probability).
  EXPECT_NE(chat(R"({"messages": [{"role": "user", "content": "x"}]})").prompts[0].sampling.seed,
            g.sampling.seed);
}

TEST(OpenAiProtocol, CompletionPromptsInEveryShape) {
  EXPECT_EQ(completion(R"({"prompt": "one"})").prompts[0].prompt, "one");
  const ApiRequest many = completion(R"({"prompt": ["a", [1, 2, 3]], "logprobs": 3})");
  ASSERT_EQ(many.prompts.size(), 2u);
  EXPECT_EQ(many.prompts[0].prompt, "a");
  EXPECT_EQ(many.prompts[1].prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(many.prompts[1].logprobs, 3);
  EXPECT_EQ(completion(R"({"prompt": [5, 6]})").prompts[0].prompt_tokens,
            (std::vector<int32_t>{5, 6}));
}

TEST(OpenAiProtocol, WrongTypesAndRangesAreRefusedNamingTheField) {
  struct Case {
    Endpoint endpoint;
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {Endpoint::kChatCompletions, R"({"messages": "hi"})", "messages"},
      {Endpoint::kChatCompletions, R"({"messages": []})", "messages"},
      {Endpoint::kChatCompletions, R"({})", "messages"},
      {Endpoint::kChatCompletions, R"({"messages": [{"role": "tool", "content": "x"}]})",
       "messages[0].role"},
      {Endpoint::kChatCompletions,
       R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
       "messages[0].content"},
      {Endpoint::kChatCompletions,
       R"({"messages": [{"role":"user","content":"x"}], "temperature": "hot"})", "temperature"},
      {Endpoint::kChatCompletions,
       R"({"messages": [{"role":"user","content":"x"}], "temperature": 2.5})", "temperature"},
      {Endpoint::kChatCompletions, R"({"messages": [{"role":"user","content":"x"}], "top_p": 0})",
       "top_p"},
      {Endpoint::kChatCompletions,
       R"({"messages": [{"role":"user","content":"x"}], "max_tokens": -1})", "max_tokens"},
      {Endpoint::kChatCompletions,
       R"({"messages": [{"role":"user","content":"x"}], "max_tokens": 99999999999999999999})",
       "max_tokens"},
      {Endpoint::kChatCompletions,
       R"({"messages": [{"role":"user","content":"x"}], "max_tokens": 1.5})", "max_tokens"},
      {Endpoint::kChatCompletions, R"({"messages": [{"role":"user","content":"x"}], "n": 0})", "n"},
      {Endpoint::kChatCompletions, R"({"messages": [{"role":"user","content":"x"}], "n": 17})",
       "n"},
      {Endpoint::kChatCompletions, R"({"messages": [{"role":"user","content":"x"}], "stop": 3})",
       "stop"},
      {Endpoint::kChatCompletions, R"({"messages": [{"role":"user","content":"x"}], "stop": [""]})",
       "stop"},
      {Endpoint::kChatCompletions,
       R"({"messages": [{"role":"user","content":"x"}], "logit_bias": {"x": 1}})", "logit_bias"},
      {Endpoint::kChatCompletions,
       R"({"messages": [{"role":"user","content":"x"}], "logit_bias": {"1": 200}})", "logit_bias"},
      {Endpoint::kChatCompletions,
       R"({"messages": [{"role":"user","content":"x"}], "top_logprobs": 2})", "top_logprobs"},
      {Endpoint::kChatCompletions,
       R"({"messages": [{"role":"user","content":"x"}], "logprobs": true, "top_logprobs": 21})",
       "top_logprobs"},
      {Endpoint::kChatCompletions,
       R"({"messages": [{"role":"user","content":"x"}], "stream_options": {"include_usage": true}})",
       "stream_options"},
      {Endpoint::kChatCompletions, R"({"messages": [{"role":"user","content":"x"}], "model": 3})",
       "model"},
      {Endpoint::kCompletions, R"({"prompt": ""})", "prompt"},
      {Endpoint::kCompletions, R"({"prompt": [[]]})", "prompt"},
      {Endpoint::kCompletions, R"({"prompt": {"a": 1}})", "prompt"},
      {Endpoint::kCompletions, R"({"prompt": "x", "echo": true})", "echo"},
      {Endpoint::kCompletions, R"({"prompt": "x", "suffix": "tail"})", "suffix"},
      {Endpoint::kCompletions, R"({"prompt": "x", "best_of": 3})", "best_of"},
      {Endpoint::kCompletions, R"({"prompt": "x", "logprobs": 6})", "logprobs"},
  };
  for (const Case& c : cases) {
    const ApiError e = refusal(c.endpoint, c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.type, "invalid_request_error") << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_FALSE(e.message.empty()) << c.body;
  }
}

TEST(OpenAiProtocol, MalformedJsonIsRefused) {
  for (const std::string& body :
       {std::string("{\"messages\": ["), std::string("not json"), std::string("[1, 2]"),
        std::string("{\"messages\": \"\xff\xfe\"}"), std::string(100000, '[')}) {
    const ApiError e = refusal(Endpoint::kChatCompletions, body);
    EXPECT_EQ(e.status, 400) << body.substr(0, 40);
  }
}

TEST(OpenAiProtocol, ChoicesAreCheckedAgainstTheContext) {
  ApiRequest r = completion(R"({"prompt": ["a", "b"], "n": 2, "seed": 10})");
  const auto all = expand_choices(r, {{1, 2, 3}, {4}}, 64);
  ASSERT_EQ(all.size(), 4u);  // prompt-major: p0c0 p0c1 p1c0 p1c1
  EXPECT_EQ(all[0].prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(all[2].prompt_tokens, (std::vector<int32_t>{4}));
  EXPECT_EQ(all[0].max_tokens, 16);  // completions default
  EXPECT_EQ(all[0].sampling.seed, 10u);
  EXPECT_EQ(all[1].sampling.seed, 11u);  // the n choices draw differently
  // Chat without max_tokens: the rest of the context.
  const ApiRequest c = chat(R"({"messages": [{"role": "user", "content": "x"}]})");
  EXPECT_EQ(expand_choices(c, {{1, 2, 3, 4}}, 64)[0].max_tokens, 60);
  // Too long for the context: 400 context_length_exceeded, naming both numbers.
  const ApiRequest big = chat(R"({"messages": [{"role":"user","content":"x"}], "max_tokens": 61})");
  try {
    expand_choices(big, {{1, 2, 3, 4}}, 64);
    FAIL();
  } catch (const ApiException& e) {
    EXPECT_EQ(e.error().code, "context_length_exceeded");
    EXPECT_NE(e.error().message.find("64"), std::string::npos);
    EXPECT_NE(e.error().message.find("61"), std::string::npos);
  }
  EXPECT_THROW(expand_choices(c, {std::vector<int32_t>(64, 1)}, 64), ApiException);
}

TEST(OpenAiProtocol, ResponsesHaveOpenAisShape) {
  ApiRequest api = chat(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true,
                            "top_logprobs": 1})");
  ResponseContext ctx;
  ctx.api = &api;
  ctx.id = "chatcmpl-1";
  ctx.created = 123;
  ctx.model = "m";
  ctx.token_text = [](int32_t id) {
    return id == 2 ? std::string("\xe2\x82") : "t" + std::to_string(id);
  };
  GenerationResult r;
  r.text = "t5";
  r.tokens = {5, 99};
  r.logprobs = {{5, -0.5f, {{5, -0.5f}}}, {99, -0.1f, {{99, -0.1f}}}};
  r.finish = FinishReason::kEos;  // 99 is the end-of-sequence token: not shown
  r.stats.generated_tokens = 2;
  const json body = response_body(ctx, {r}, {7});
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["id"], "chatcmpl-1");
  EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(body["choices"][0]["message"]["content"], "t5");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  ASSERT_EQ(body["choices"][0]["logprobs"]["content"].size(), 1u);
  EXPECT_EQ(body["choices"][0]["logprobs"]["content"][0]["token"], "t5");
  EXPECT_EQ(body["choices"][0]["logprobs"]["content"][0]["bytes"], json({116, 53}));
  EXPECT_EQ(body["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(body["usage"]["completion_tokens"], 2);
  EXPECT_EQ(body["usage"]["total_tokens"], 9);

  int64_t offset = 0;
  const json first = text_chunk(ctx, 0, "Hel", {}, true, offset);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(first["choices"][0]["delta"]["content"], "Hel");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(text_chunk(ctx, 0, "lo", {}, false, offset)["choices"][0]["delta"].contains("role"));
  const json end = end_chunk(ctx, 0, FinishReason::kLength, {}, offset);
  EXPECT_EQ(end["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(end["choices"][0]["delta"].empty());
  const json usage = usage_chunk(ctx, 3, 4, 2);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
  // Two prompts with n = 2: each prompt counts the fewest tokens any of its choices reused.
  EXPECT_EQ(usage_cached_tokens({64, 32, 0, 16}, 2), 32);
  EXPECT_EQ(usage_cached_tokens({}, 0), 0);
  // A token that is part of a UTF-8 character still serializes (as U+FFFD in "token").
  const TokenLogprobs partial{2, -1.0f, {}};
  const std::string wire = dump(text_chunk(ctx, 0, "", std::span(&partial, 1), false, offset));
  EXPECT_NE(wire.find("\"bytes\":[226,130]"), std::string::npos) << wire;
}

TEST(OpenAiProtocol, CompletionLogprobsCountTextOffsets) {
  ApiRequest api = completion(R"({"prompt": "x", "logprobs": 1})");
  ResponseContext ctx;
  ctx.api = &api;
  ctx.token_text = [](int32_t id) { return std::string(static_cast<size_t>(id), 'a'); };
  GenerationResult r;
  r.text = "aaaaa";
  r.tokens = {2, 3};
  r.logprobs = {{2, -1.0f, {{2, -1.0f}}}, {3, -2.0f, {{3, -2.0f}}}};
  r.finish = FinishReason::kLength;
  const json body = response_body(ctx, {r}, {1});
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["choices"][0]["text"], "aaaaa");
  const json& lp = body["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json({"aa", "aaa"}));
  EXPECT_EQ(lp["text_offset"], json({0, 2}));
  EXPECT_FLOAT_EQ(lp["token_logprobs"][1].get<float>(), -2.0f);
  EXPECT_EQ(lp["top_logprobs"][0]["aa"], -1.0f);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
}

TEST(OpenAiProtocol, ErrorBodiesHaveOpenAisShape) {
  ApiError e;
  e.status = 401;
  e.message = "no key";
  e.code = "invalid_api_key";
  const json j = json::parse(error_body(e));
  EXPECT_EQ(j["error"]["message"], "no key");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_EQ(j["error"]["code"], "invalid_api_key");
}

}  // namespace
}  // namespace hearth::server
