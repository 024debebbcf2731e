// Chat templates: an interpreter for the Jinja subset that real chat templates use (if/for/set,
// macros, loop variables, filters, string methods, raise_exception, namespace). Sandboxed: only
// data is reachable, recursion, loop iterations and output size are bounded, and a malformed or
// hostile template is an Error(kInvalidFile), never a crash or a hang.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace hearth {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", ...
  std::string content;
};

struct ChatTemplateLimits {
  size_t max_output_bytes = 4 << 20;
  size_t max_loop_iterations = 1 << 20;  // over the whole render
  size_t max_recursion_depth = 64;
  size_t max_source_bytes = 1 << 20;
};

class ChatTemplate {
 public:
  // Parses the template. Throws Error(kInvalidFile) with line and column on a syntax error.
  explicit ChatTemplate(std::string_view source, ChatTemplateLimits limits = {});
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;
  ~ChatTemplate();

  // Renders with an arbitrary context object (messages, add_generation_prompt, bos_token, ...),
  // the way transformers' apply_chat_template does (trim_blocks and lstrip_blocks on).
  std::string render(const nlohmann::json& context) const;
  // The same with dict key order kept (nlohmann::json sorts keys): transformers renders tool
  // definitions in the order they were written, so callers with such data should use this.
  std::string render(const nlohmann::ordered_json& context) const;
  // Convenience: messages plus the usual variables.
  std::string apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                    const std::string& bos_token, const std::string& eos_token) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hearth
