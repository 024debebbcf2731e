#include "engine/server/openai_protocol.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "engine/core/error.h"
#include "engine/io/json_strict.h"

namespace hearth::server {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  ApiError e;
  e.param = param;
  e.message = message;
  throw ApiException(std::move(e));
}

[[noreturn]] void wrong_type(const std::string& param, const json& v, const char* expected) {
  bad(param, "'" + param + "' must be " + expected + ", not " + json_kind(v));
}

// The field `name` of `body`, or nullptr when it is absent or null (OpenAI treats both alike).
const json* field(const json& body, const char* name) {
  const auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

double number(const json& body, const char* name, double fallback, double lo, double hi,
              bool lo_open = false) {
  const json* v = field(body, name);
  if (!v) return fallback;
  if (!v->is_number()) wrong_type(name, *v, "a number");
  const double x = v->get<double>();
  if (!std::isfinite(x) || x > hi || (lo_open ? x <= lo : x < lo)) {
    char range[96];
    std::snprintf(range, sizeof range, "%s%g, %g]", lo_open ? "(" : "[", lo, hi);
    bad(name, "'" + std::string(name) + "' must be in " + range);
  }
  return x;
}

int64_t integer(const json& body, const char* name, int64_t fallback, int64_t lo, int64_t hi) {
  const json* v = field(body, name);
  if (!v) return fallback;
  if (!v->is_number_integer()) wrong_type(name, *v, "an integer");
  const bool too_big = v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi);
  const int64_t x = too_big ? hi : v->get<int64_t>();
  if (too_big || x < lo || x > hi) {
    bad(name, "'" + std::string(name) + "' must be between " + std::to_string(lo) + " and " +
                  std::to_string(hi));
  }
  return x;
}

bool boolean(const json& body, const char* name, bool fallback) {
  const json* v = field(body, name);
  if (!v) return fallback;
  if (!v->is_boolean()) wrong_type(name, *v, "a boolean");
  return v->get<bool>();
}

std::vector<std::string> stop_strings(const json& body, int max_stops) {
  const json* v = field(body, "stop");
  if (!v) return {};
  std::vector<std::string> stops;
  if (v->is_string()) {
    stops.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    if (static_cast<int>(v->size()) > max_stops) {
      bad("stop", "'stop' holds at most " + std::to_string(max_stops) + " strings");
    }
    for (const json& s : *v) {
      if (!s.is_string()) wrong_type("stop", s, "a string or a list of strings");
      stops.push_back(s.get<std::string>());
    }
  } else {
    wrong_type("stop", *v, "a string or a list of strings");
  }
  for (const std::string& s : stops) {
    if (s.empty()) bad("stop", "'stop' strings must not be empty");
  }
  return stops;
}

std::vector<std::pair<int32_t, float>> logit_bias(const json& body) {
  const json* v = field(body, "logit_bias");
  if (!v) return {};
  if (!v->is_object()) wrong_type("logit_bias", *v, "an object of token ids to numbers");
  std::vector<std::pair<int32_t, float>> bias;
  for (const auto& [key, value] : v->items()) {
    int64_t token = -1;
    const bool digits = !key.empty() && key.size() <= 10 &&
                        key.find_first_not_of("0123456789") == std::string::npos;
    if (digits) token = std::stoll(key);
    if (!digits || token > std::numeric_limits<int32_t>::max()) {
      bad("logit_bias", "'logit_bias' keys must be token ids, not \"" + key + "\"");
    }
    if (!value.is_number()) wrong_type("logit_bias", value, "an object of token ids to numbers");
    const double b = value.get<double>();
    if (!std::isfinite(b) || b < -100 || b > 100) {
      bad("logit_bias", "'logit_bias' values must be in [-100, 100]");
    }
    bias.emplace_back(static_cast<int32_t>(token), static_cast<float>(b));
  }
  return bias;
}

std::string message_content(const json& message, size_t index) {
  const std::string where = "messages[" + std::to_string(index) + "].content";
  const auto it = message.find("content");
  if (it == message.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array()) wrong_type(where, *it, "a string or a list of content parts");
  std::string text;
  for (const json& part : *it) {
    if (!part.is_object()) wrong_type(where, part, "a list of content parts");
    const auto type = part.find("type");
    if (type == part.end() || !type->is_string() || *type != "text") {
      bad(where, "only text content parts are supported");
    }
    const auto t = part.find("text");
    if (t == part.end() || !t->is_string()) bad(where, "a text part needs a string 'text'");
    text += t->get<std::string>();
  }
  return text;
}

std::vector<ChatMessage> chat_messages(const json& body) {
  const json* v = field(body, "messages");
  if (!v) bad("messages", "'messages' is required");
  if (!v->is_array()) wrong_type("messages", *v, "a list of messages");
  if (v->empty()) bad("messages", "'messages' must not be empty");
  std::vector<ChatMessage> messages;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) wrong_type(where, m, "an object");
    const auto role = m.find("role");
    if (role == m.end() || !role->is_string()) bad(where + ".role", "a message needs a 'role'");
    std::string r = role->get<std::string>();
    if (r == "developer") r = "system";  // OpenAI's newer name for the system message
    if (r != "system" && r != "user" && r != "assistant") {
      bad(where + ".role", "role '" + r + "' is not supported (system, user, assistant)");
    }
    messages.push_back({r, message_content(m, i)});
  }
  return messages;
}

// The prompts of a completions request: a string, strings, token ids, or lists of token ids.
std::vector<GenerationRequest> completion_prompts(const json& body, int max_prompts) {
  const json* v = field(body, "prompt");
  if (!v) bad("prompt", "'prompt' is required");
  auto too_many = [&] {
    bad("prompt", "'prompt' holds at most " + std::to_string(max_prompts) + " prompts");
  };
  auto tokens = [&](const json& list) {
    GenerationRequest r;
    for (const json& t : list) {
      if (!t.is_number_integer()) wrong_type("prompt", t, "token ids (integers)");
      const int64_t id = t.get<int64_t>();
      if (id < 0 || id > std::numeric_limits<int32_t>::max())
        bad("prompt", "token id out of range");
      r.prompt_tokens.push_back(static_cast<int32_t>(id));
    }
    if (r.prompt_tokens.empty()) bad("prompt", "a prompt must not be empty");
    return r;
  };
  std::vector<GenerationRequest> prompts;
  if (v->is_string()) {
    prompts.emplace_back().prompt = v->get<std::string>();
  } else if (v->is_array() && !v->empty() && (*v)[0].is_number()) {
    prompts.push_back(tokens(*v));
  } else if (v->is_array() && !v->empty()) {
    if (static_cast<int>(v->size()) > max_prompts) too_many();
    for (const json& p : *v) {
      if (p.is_string()) {
        prompts.emplace_back().prompt = p.get<std::string>();
      } else if (p.is_array()) {
        prompts.push_back(tokens(p));
      } else {
        wrong_type("prompt", p, "a string, a list of strings or lists of token ids");
      }
    }
  } else if (v->is_array()) {
    bad("prompt", "'prompt' must not be empty");
  } else {
    wrong_type("prompt", *v, "a string, a list of strings or lists of token ids");
  }
  for (const GenerationRequest& p : prompts) {
    if (p.prompt_tokens.empty() && p.prompt.empty()) bad("prompt", "a prompt must not be empty");
  }
  return prompts;
}

json token_entry(const TokenText& text, int32_t token, float logprob) {
  const std::string t = text(token);
  json bytes = json::array();
  for (unsigned char c : t) bytes.push_back(static_cast<int>(c));
  return json{{"token", t}, {"logprob", logprob}, {"bytes", bytes}};
}

json chat_logprobs(const TokenText& text, std::span<const TokenLogprobs> logprobs) {
  json content = json::array();
  for (const TokenLogprobs& lp : logprobs) {
    json entry = token_entry(text, lp.token, lp.logprob);
    json top = json::array();
    for (const auto& [t, v] : lp.top) top.push_back(token_entry(text, t, v));
    entry["top_logprobs"] = std::move(top);
    content.push_back(std::move(entry));
  }
  return json{{"content", std::move(content)}};
}

json completion_logprobs(const TokenText& text, std::span<const TokenLogprobs> logprobs,
                         int64_t& offset) {
  json tokens = json::array(), values = json::array(), tops = json::array(),
       offsets = json::array();
  for (const TokenLogprobs& lp : logprobs) {
    const std::string t = text(lp.token);
    tokens.push_back(t);
    values.push_back(lp.logprob);
    json top = json::object();
    for (const auto& [id, v] : lp.top) top[text(id)] = v;
    tops.push_back(std::move(top));
    offsets.push_back(offset);
    offset += static_cast<int64_t>(t.size());
  }
  return json{{"tokens", std::move(tokens)},
              {"token_logprobs", std::move(values)},
              {"top_logprobs", std::move(tops)},
              {"text_offset", std::move(offsets)}};
}

bool chat(const ResponseContext& ctx) {
  return ctx.api->endpoint == Endpoint::kChatCompletions;
}

json envelope(const ResponseContext& ctx, const char* object) {
  return json{{"id", ctx.id}, {"object", object}, {"created", ctx.created}, {"model", ctx.model}};
}

json chunk(const ResponseContext& ctx) {
  return envelope(ctx, chat(ctx) ? "chat.completion.chunk" : "text_completion");
}

bool wants_logprobs(const ResponseContext& ctx) {
  return !ctx.api->prompts.empty() && ctx.api->prompts.front().logprobs >= 0;
}

}  // namespace

std::string error_body(const ApiError& error) {
  json e{{"message", error.message}, {"type", error.type}};
  e["param"] = error.param.empty() ? json(nullptr) : json(error.param);
  e["code"] = error.code.empty() ? json(nullptr) : json(error.code);
  return dump(json{{"error", std::move(e)}});
}

ApiRequest parse_request(Endpoint endpoint, std::string_view body_text,
                         const RequestLimits& limits) {
  json body;
  try {
    body = parse_json_strict(body_text, "the request body", 32);
  } catch (const Error& e) {
    bad("", std::string("the request body is not valid JSON: ") + e.what());
  }
  if (!body.is_object()) bad("", "the request body must be a JSON object");

  ApiRequest api;
  api.endpoint = endpoint;
  if (const json* m = field(body, "model")) {
    if (!m->is_string()) wrong_type("model", *m, "a string");
    api.model = m->get<std::string>();
  }
  if (const json* u = field(body, "user"); u && !u->is_string()) wrong_type("user", *u, "a string");

  GenerationRequest base;
  SamplingParams& s = base.sampling;
  s.temperature = static_cast<float>(number(body, "temperature", 1.0, 0.0, 2.0));
  s.top_p = static_cast<float>(number(body, "top_p", 1.0, 0.0, 1.0, /*lo_open=*/true));
  s.top_k = static_cast<int32_t>(integer(body, "top_k", 0, 0, 1 << 20));
  s.min_p = static_cast<float>(number(body, "min_p", 0.0, 0.0, 1.0));
  s.presence_penalty = static_cast<float>(number(body, "presence_penalty", 0.0, -2.0, 2.0));
  s.frequency_penalty = static_cast<float>(number(body, "frequency_penalty", 0.0, -2.0, 2.0));
  s.repetition_penalty =
      static_cast<float>(number(body, "repetition_penalty", 1.0, 0.0, 100.0, /*lo_open=*/true));
  s.logit_bias = logit_bias(body);
  if (field(body, "seed")) {
    s.seed = static_cast<uint64_t>(integer(body, "seed", 0, std::numeric_limits<int64_t>::min(),
                                           std::numeric_limits<int64_t>::max()));
  } else {
    // No seed: a fresh one, so that sampled answers differ from call to call as users expect.
    s.seed = std::random_device{}() * 0x100000001ull + std::random_device{}();
  }
  base.stop_strings = stop_strings(body, limits.max_stops);
  // Not OpenAI's: generate past the end-of-sequence token (as vLLM's ignore_eos), so that
  // benchmarks get answers of the length they ask for.
  base.ignore_eos = boolean(body, "ignore_eos", false);
  const json* max_tokens = field(body, "max_completion_tokens");
  const char* max_name = "max_completion_tokens";
  if (!max_tokens) {
    max_tokens = field(body, "max_tokens");
    max_name = "max_tokens";
  }
  if (max_tokens) {
    api.max_tokens_given = true;
    base.max_tokens = static_cast<int32_t>(integer(body, max_name, 0, 1, 1 << 24));
  }
  api.n = static_cast<int>(integer(body, "n", 1, 1, limits.max_n));
  api.stream = boolean(body, "stream", false);
  if (const json* o = field(body, "stream_options")) {
    if (!o->is_object()) wrong_type("stream_options", *o, "an object");
    if (!api.stream) bad("stream_options", "'stream_options' is only allowed with 'stream': true");
    api.include_usage = boolean(*o, "include_usage", false);
  }

  std::vector<GenerationRequest> prompts;
  if (endpoint == Endpoint::kChatCompletions) {
    const bool logprobs = boolean(body, "logprobs", false);
    const int64_t top = integer(body, "top_logprobs", 0, 0, kMaxTopLogprobs);
    if (field(body, "top_logprobs") && !logprobs) {
      bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    }
    base.logprobs = logprobs ? static_cast<int32_t>(top) : -1;
    base.messages = chat_messages(body);
    prompts.push_back(base);
  } else {
    base.logprobs = static_cast<int32_t>(integer(body, "logprobs", -1, 0, 5));
    if (boolean(body, "echo", false)) bad("echo", "'echo' is not supported");
    if (const json* sfx = field(body, "suffix")) {
      if (!sfx->is_string()) wrong_type("suffix", *sfx, "a string");
      if (!sfx->get<std::string>().empty()) bad("suffix", "'suffix' is not supported");
    }
    if (integer(body, "best_of", 1, 1, limits.max_n) != 1) {
      bad("best_of", "'best_of' other than 1 is not supported");
    }
    for (GenerationRequest& p : completion_prompts(body, limits.max_prompts)) {
      GenerationRequest r = base;
      r.prompt = std::move(p.prompt);
      r.prompt_tokens = std::move(p.prompt_tokens);
      prompts.push_back(std::move(r));
    }
  }
  api.prompts = std::move(prompts);
  return api;
}

std::vector<GenerationRequest> expand_choices(const ApiRequest& api,
                                              std::vector<std::vector<int32_t>> prompt_tokens,
                                              int64_t max_seq_len) {
  std::vector<GenerationRequest> out;
  for (size_t p = 0; p < api.prompts.size(); ++p) {
    const auto prompt = static_cast<int64_t>(prompt_tokens[p].size());
    const int64_t room = max_seq_len - prompt;
    int64_t max_tokens = api.prompts[p].max_tokens;
    if (!api.max_tokens_given) {
      max_tokens = api.endpoint == Endpoint::kCompletions ? std::min<int64_t>(16, room) : room;
    }
    if (room <= 0 || max_tokens > room) {
      ApiError e;
      e.param = api.endpoint == Endpoint::kChatCompletions ? "messages" : "prompt";
      e.code = "context_length_exceeded";
      e.message = "This model's context holds " + std::to_string(max_seq_len) +
                  " tokens; the request needs " +
                  std::to_string(prompt + std::max<int64_t>(max_tokens, 1)) + " (" +
                  std::to_string(prompt) + " in the prompt, " +
                  std::to_string(std::max<int64_t>(max_tokens, 1)) +
                  " for the completion). Shorten the prompt or lower max_tokens.";
      throw ApiException(std::move(e));
    }
    for (int c = 0; c < api.n; ++c) {
      GenerationRequest r = api.prompts[p];
      r.prompt_tokens = prompt_tokens[p];
      r.max_tokens = static_cast<int32_t>(max_tokens);
      r.sampling.seed += static_cast<uint64_t>(c);  // the n choices draw differently
      out.push_back(std::move(r));
    }
  }
  return out;
}

const char* finish_reason_text(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength:
    case FinishReason::kContextFull:
      return "length";
    default:
      return "stop";
  }
}

std::span<const TokenLogprobs> shown_logprobs(const GenerationResult& result) {
  std::span<const TokenLogprobs> all = result.logprobs;
  if (result.finish == FinishReason::kEos && !all.empty()) all = all.first(all.size() - 1);
  return all;
}

json usage_json(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens) {
  return json{{"prompt_tokens", prompt_tokens},
              {"completion_tokens", completion_tokens},
              {"total_tokens", prompt_tokens + completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
}

int64_t usage_cached_tokens(const std::vector<int64_t>& cached, size_t prompts) {
  if (prompts == 0 || cached.empty()) return 0;
  const size_t n = cached.size() / prompts;
  int64_t total = 0;
  for (size_t p = 0; p < prompts; ++p) {
    int64_t fewest = cached[p * n];
    for (size_t c = 1; c < n; ++c) fewest = std::min(fewest, cached[p * n + c]);
    total += fewest;
  }
  return total;
}

json response_body(const ResponseContext& ctx, const std::vector<GenerationResult>& results,
                   const std::vector<int64_t>& prompt_tokens) {
  json body = envelope(ctx, chat(ctx) ? "chat.completion" : "text_completion");
  json choices = json::array();
  int64_t completion_tokens = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const GenerationResult& r = results[i];
    json choice{{"index", i}};
    json logprobs = nullptr;
    if (wants_logprobs(ctx)) {
      int64_t offset = 0;
      logprobs = chat(ctx) ? chat_logprobs(ctx.token_text, shown_logprobs(r))
                           : completion_logprobs(ctx.token_text, shown_logprobs(r), offset);
    }
    if (chat(ctx)) {
      choice["message"] = {{"role", "assistant"}, {"content", r.text}};
    } else {
      choice["text"] = r.text;
    }
    choice["logprobs"] = std::move(logprobs);
    choice["finish_reason"] = finish_reason_text(r.finish);
    choices.push_back(std::move(choice));
    completion_tokens += r.stats.generated_tokens;
  }
  int64_t prompts = 0;
  for (int64_t p : prompt_tokens) prompts += p;
  std::vector<int64_t> cached;
  for (const GenerationResult& r : results) cached.push_back(r.stats.cached_prompt_tokens);
  body["choices"] = std::move(choices);
  body["usage"] =
      usage_json(prompts, completion_tokens, usage_cached_tokens(cached, prompt_tokens.size()));
  return body;
}

json text_chunk(const ResponseContext& ctx, int choice, const std::string& text,
                std::span<const TokenLogprobs> logprobs, bool first, int64_t& text_offset) {
  json c{{"index", choice}};
  if (chat(ctx)) {
    json delta{{"content", text}};
    if (first) delta["role"] = "assistant";
    c["delta"] = std::move(delta);
  } else {
    c["text"] = text;
  }
  c["logprobs"] = !wants_logprobs(ctx) ? json(nullptr)
                  : chat(ctx)          ? chat_logprobs(ctx.token_text, logprobs)
                                       : completion_logprobs(ctx.token_text, logprobs, text_offset);
  c["finish_reason"] = nullptr;
  json body = chunk(ctx);
  body["choices"] = json::array({std::move(c)});
  return body;
}

json end_chunk(const ResponseContext& ctx, int choice, FinishReason reason,
               std::span<const TokenLogprobs> logprobs, int64_t& text_offset) {
  json c{{"index", choice}};
  if (chat(ctx)) {
    c["delta"] = json::object();
  } else {
    c["text"] = "";
  }
  c["logprobs"] = !wants_logprobs(ctx) || logprobs.empty() ? json(nullptr)
                  : chat(ctx)                              ? chat_logprobs(ctx.token_text, logprobs)
                              : completion_logprobs(ctx.token_text, logprobs, text_offset);
  c["finish_reason"] = finish_reason_text(reason);
  json body = chunk(ctx);
  body["choices"] = json::array({std::move(c)});
  return body;
}

json usage_chunk(const ResponseContext& ctx, int64_t prompt_tokens, int64_t completion_tokens,
                 int64_t cached_tokens) {
  json body = chunk(ctx);
  body["choices"] = json::array();
  body["usage"] = usage_json(prompt_tokens, completion_tokens, cached_tokens);
  return body;
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace hearth::server
