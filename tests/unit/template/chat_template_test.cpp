// Chat templates rendered by Hearth against the prompts Hugging Face transformers renders for the
// same templates and inputs (tests/reference/chat_template_reference.py wrote the fixtures).
#include <chrono>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define HEARTH_SLOW_BUILD 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HEARTH_SLOW_BUILD 1
#endif
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/template/chat_template.h"
#include "tests/common/test_paths.h"

namespace hearth {
namespace {

using nlohmann::ordered_json;

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::filesystem::path fixture_dir() {
  return test::fixtures_dir() / "chat_template";
}

ordered_json load_cases(const char* file) {
  return ordered_json::parse(read_text(fixture_dir() / file))["cases"];
}

const ChatTemplate& real_template(const std::string& file) {
  static std::map<std::string, ChatTemplate> cache;
  auto it = cache.find(file);
  if (it == cache.end())
    it = cache.emplace(file, ChatTemplate(read_text(fixture_dir() / "templates" / file))).first;
  return it->second;
}

// Renders and reports the outcome as text, so that a failure shows what happened.
std::string outcome(const std::function<std::string()>& render, bool& threw, std::string& message) {
  threw = false;
  try {
    return render();
  } catch (const Error& e) {
    threw = true;
    message = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile) << message;
    return {};
  }
}

TEST(ChatTemplate, RealTemplatesMatchTransformers) {
  const ordered_json cases = load_cases("real_templates.json");
  ASSERT_GT(cases.size(), 150u);
  size_t rendered = 0, errors = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::string template_file = c["template"].get<std::string>();
    const ChatTemplate& t = real_template(template_file);
    bool threw;
    std::string message;
    const std::string out = outcome([&] { return t.render(c["context"]); }, threw, message);
    if (c.contains("expected")) {
      ASSERT_FALSE(threw) << message;
      EXPECT_EQ(out, c["expected"].get<std::string>());
      ++rendered;
    } else {
      ASSERT_TRUE(threw) << "rendered instead of failing:\n" << out;
      // raise_exception's message reaches the caller unchanged.
      EXPECT_NE(message.find(c["error"].get<std::string>()), std::string::npos) << message;
      ++errors;
    }
  }
  EXPECT_GT(rendered, 150u);
  EXPECT_GT(errors, 10u);
}

TEST(ChatTemplate, JinjaSemanticsMatchTransformers) {
  const ordered_json cases = load_cases("jinja_semantics.json");
  ASSERT_GT(cases.size(), 100u);
  for (const auto& c : cases) {
    const std::string name = c["name"];
    SCOPED_TRACE(name + ": " + c["template"].get<std::string>());
    bool threw;
    std::string message;
    const std::string out =
        outcome([&] { return ChatTemplate(c["template"].get<std::string>()).render(c["context"]); },
                threw, message);
    if (c.contains("expected")) {
      EXPECT_FALSE(threw) << message;
      if (!threw) {
        EXPECT_EQ(out, c["expected"].get<std::string>());
      }
    } else {
      EXPECT_TRUE(threw) << "rendered instead of failing (" << c["error"].get<std::string>()
                         << "):\n"
                         << out;
    }
  }
}

TEST(ChatTemplate, RaiseExceptionMessageIsKept) {
  const ChatTemplate t(read_text(fixture_dir() / "templates" / "llama2-chat.jinja"));
  try {
    t.apply({{"user", "a"}, {"user", "b"}}, true, "<s>", "</s>");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
    const std::string what = e.what();
    EXPECT_NE(what.find("Conversation roles must alternate user/assistant/user/assistant/..."),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("line 1"), std::string::npos) << what;
  }
}

// apply() passes what transformers' apply_chat_template passes.
TEST(ChatTemplate, ApplyMatchesTransformers) {
  const ordered_json cases = load_cases("real_templates.json");
  size_t checked = 0;
  for (const auto& c : cases) {
    const ordered_json& ctx = c["context"];
    if (!c.contains("expected") || !ctx["tools"].is_null() || ctx.contains("date_string")) continue;
    std::vector<ChatMessage> messages;
    bool plain = true;
    for (const auto& m : ctx["messages"]) {
      if (m.size() != 2 || !m["content"].is_string()) plain = false;
      if (plain) messages.push_back({m["role"], m["content"]});
    }
    if (!plain || ctx.size() != 6) continue;
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::string template_file = c["template"].get<std::string>();
    const ChatTemplate& t = real_template(template_file);
    EXPECT_EQ(t.apply(messages, ctx["add_generation_prompt"], ctx["bos_token"], ctx["eos_token"]),
              c["expected"].get<std::string>());
    ++checked;
  }
  EXPECT_GT(checked, 100u);
}

// nlohmann::json sorts object keys; ordered_json keeps them as written, like a Python dict.
TEST(ChatTemplate, OrderedContextKeepsKeyOrder) {
  const ChatTemplate t("{{ tool | tojson }}");
  const auto ordered = ordered_json::parse(R"({"tool": {"name": "f", "description": "d"}})");
  EXPECT_EQ(t.render(ordered), R"({"name": "f", "description": "d"})");
  const auto sorted = nlohmann::json::parse(R"({"tool": {"name": "f", "description": "d"}})");
  EXPECT_EQ(t.render(sorted), R"({"description": "d", "name": "f"})");
}

TEST(ChatTemplate, StrftimeNowFormatsTheCurrentDate) {
  const ChatTemplate t("{{ strftime_now('%Y-%m-%d') }}");
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char expected[32];
  std::strftime(expected, sizeof(expected), "%Y-%m-%d", &tm);
  EXPECT_EQ(t.render(nlohmann::json::object()), expected);
}

TEST(ChatTemplate, ParseErrorsNameLineAndColumn) {
  try {
    ChatTemplate t("line one\n{% if x %}\n  {{ x | nosuch }}\n{% endif %}");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
    EXPECT_NE(std::string(e.what()).find("line 3, column 8"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nosuch"), std::string::npos) << e.what();
  }
}

TEST(ChatTemplate, MovedTemplateStillRenders) {
  ChatTemplate a("{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}");
  ChatTemplate b = std::move(a);
  EXPECT_EQ(b.apply({{"user", "hi"}}, false, "<s>", ""), "<s>hi");
}

// Parse once, render many: a 20-message conversation must render well under a millisecond.
TEST(ChatTemplate, RendersTwentyMessagesQuickly) {
  const ordered_json cases = load_cases("real_templates.json");
  for (const auto& c : cases) {
    const std::string name = c["name"];
    if (name.find("twenty_messages") == std::string::npos) continue;
    const std::string template_file = c["template"].get<std::string>();
    const ChatTemplate& t = real_template(template_file);
    ASSERT_EQ(t.render(c["context"]), c["expected"].get<std::string>()) << name;
    const int runs = 300;
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < runs; ++k) t.render(c["context"]);
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count() /
        runs;
    std::printf("%s: %.1f us per render\n", name.c_str(), us);
#if defined(HEARTH_SLOW_BUILD)
    EXPECT_LT(us, 20000.0);
#else
    EXPECT_LT(us, 1000.0);
#endif
  }
}

}  // namespace
}  // namespace hearth
