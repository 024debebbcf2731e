#include "engine/template/chat_template.h"

#include <unordered_map>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/template/jinja_builtins.h"
#include "engine/template/jinja_interpreter.h"
#include "engine/template/jinja_parser.h"

namespace hearth {

struct ChatTemplate::Impl {
  jinja::Program program;
  ChatTemplateLimits limits;
  std::unordered_map<std::string, int> symbol_ids;
  std::vector<jinja::Value> base_globals;  // built-in functions, by symbol id

  template <typename Json>
  std::string render(const Json& context) const {
    if (!context.is_object())
      fail(ErrorCode::kInvalidArgument, "chat template context must be a JSON object");
    std::vector<jinja::Value> globals = base_globals;
    // Only names the template mentions can ever be read, so only those are converted.
    for (auto it = context.begin(); it != context.end(); ++it) {
      const auto found = symbol_ids.find(it.key());
      if (found == symbol_ids.end()) continue;
      globals[static_cast<size_t>(found->second)] = jinja::from_json(it.value());
    }
    jinja::Interpreter interpreter(program, limits, std::move(globals));
    return interpreter.render();
  }
};

ChatTemplate::ChatTemplate(std::string_view source, ChatTemplateLimits limits)
    : impl_(std::make_unique<Impl>()) {
  if (source.size() > limits.max_source_bytes)
    fail(ErrorCode::kInvalidFile, "chat template is " + std::to_string(source.size()) +
                                      " bytes, more than the limit of " +
                                      std::to_string(limits.max_source_bytes));
  impl_->limits = limits;
  impl_->program = jinja::parse_template(source);
  const auto& symbols = impl_->program.symbols;
  impl_->base_globals.resize(symbols.size());
  for (size_t k = 0; k < symbols.size(); ++k)
    impl_->symbol_ids.emplace(symbols[k], static_cast<int>(k));
  for (auto& [name, value] : jinja::builtin_globals()) {
    const auto found = impl_->symbol_ids.find(name);
    if (found != impl_->symbol_ids.end())
      impl_->base_globals[static_cast<size_t>(found->second)] = std::move(value);
  }
}

ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

std::string ChatTemplate::render(const nlohmann::json& context) const {
  return impl_->render(context);
}

std::string ChatTemplate::render(const nlohmann::ordered_json& context) const {
  return impl_->render(context);
}

std::string ChatTemplate::apply(const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt, const std::string& bos_token,
                                const std::string& eos_token) const {
  // The variables transformers' apply_chat_template passes (tools and documents as None).
  nlohmann::ordered_json context;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages)
    list.push_back(nlohmann::ordered_json{{"role", m.role}, {"content", m.content}});
  context["messages"] = std::move(list);
  context["tools"] = nullptr;
  context["documents"] = nullptr;
  context["add_generation_prompt"] = add_generation_prompt;
  context["bos_token"] = bos_token;
  context["eos_token"] = eos_token;
  return impl_->render(context);
}

}  // namespace hearth
