// libFuzzer target F7 (TESTING.md, "Fuzz targets"): a fuzzed chat template rendered over a fixed
// conversation whose last message content is fuzzed too. Any hearth::Error is an expected
// outcome; every other exception, crash, leak, hang or runaway allocation is a finding.
//
// Input layout: template bytes, optionally followed by "\x00" and the text of the last user
// message. Seeds: tests/fixtures/chat_template/templates; dictionary: chat_template.dict.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/template/chat_template.h"

namespace {

const nlohmann::ordered_json& base_context() {
  static const nlohmann::ordered_json context = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "You are a helpful assistant."},
      {"role": "user", "content": "Hello! What's 2+2?"},
      {"role": "assistant", "content": "It is 4.", "tool_calls": [{"id": "call12345", "type": "function",
        "function": {"name": "add", "arguments": {"a": 2, "b": 2}}}]},
      {"role": "tool", "tool_call_id": "call12345", "content": "4"},
      {"role": "user", "content": "Thanks"}
    ],
    "tools": [{"type": "function", "function": {"name": "add", "description": "Add",
      "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}],
    "documents": null,
    "add_generation_prompt": true,
    "bos_token": "<s>",
    "eos_token": "</s>",
    "date_string": "26 Jul 2024"
  })");
  return context;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string_view source = input.substr(0, split);

  // Small limits keep each run fast; the limits themselves are what is being tested.
  hearth::ChatTemplateLimits limits;
  limits.max_output_bytes = 1 << 16;
  limits.max_loop_iterations = 1 << 14;
  limits.max_recursion_depth = 32;
  limits.max_source_bytes = 1 << 16;
  try {
    hearth::ChatTemplate tmpl(source, limits);
    if (split == std::string_view::npos) {
      tmpl.render(base_context());
    } else {
      nlohmann::ordered_json context = base_context();
      context["messages"][4]["content"] = std::string(input.substr(split + 1));
      tmpl.render(context);
    }
  } catch (const hearth::Error&) {
    // A clear error is a correct answer to a malformed or hostile template.
  }
  return 0;
}
