// Hostile and malformed chat templates (TESTING.md, "Malformed inputs"): each must end in a clear
// Error(kInvalidFile) or render inert, quickly, without crashing, hanging or reaching anything but
// the data it was given.
#include <chrono>
#include <functional>
#include <string>

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

namespace hearth {
namespace {

#if defined(HEARTH_SLOW_BUILD)
constexpr double kMaxSeconds = 10.0;  // sanitizers slow everything down
#else
constexpr double kMaxSeconds = 1.0;
#endif

nlohmann::json chat_context() {
  return nlohmann::json::parse(R"({
    "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}],
    "bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": true})");
}

struct Outcome {
  bool threw = false;
  std::string message;  // error message, or rendered text
  double seconds = 0;
};

Outcome run(const std::string& source, const nlohmann::json& context = chat_context(),
            ChatTemplateLimits limits = {}) {
  Outcome o;
  const auto start = std::chrono::steady_clock::now();
  try {
    ChatTemplate t(source, limits);
    o.message = t.render(context);
  } catch (const Error& e) {
    o.threw = true;
    o.message = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile) << e.what();
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(o.seconds, kMaxSeconds) << source.substr(0, 200);
  return o;
}

void expect_error(const std::string& source, const std::string& fragment) {
  SCOPED_TRACE(source.substr(0, 200));
  const Outcome o = run(source);
  ASSERT_TRUE(o.threw) << "rendered: " << o.message.substr(0, 200);
  EXPECT_NE(o.message.find(fragment), std::string::npos) << o.message;
}

// Either a clean error or output that reveals nothing about the host.
void expect_inert(const std::string& source) {
  SCOPED_TRACE(source);
  const Outcome o = run(source);
  if (o.threw) return;
  for (const char* leak : {"class", "module", "function", "builtin", "uid=", "object at", "os."})
    EXPECT_EQ(o.message.find(leak), std::string::npos) << o.message;
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int k = 0; k < n; ++k) out += s;
  return out;
}

TEST(ChatTemplateHostile, SelfRecursiveMacro) {
  expect_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "nest");
  expect_error("{% macro f(n) %}x{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "nest");
  // Mutual recursion and recursion through a call block.
  expect_error(
      "{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}",
      "nest");
  expect_error("{% macro f() %}{% call f() %}x{% endcall %}{% endmacro %}{{ f() }}", "nest");
}

TEST(ChatTemplateHostile, DeepRecursionWithinLimitStillRenders) {
  const Outcome o = run(
      "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{{ n }}{% endmacro %}{{ f(20) }}");
  ASSERT_FALSE(o.threw) << o.message;
  EXPECT_EQ(o.message, "01234567891011121314151617181920");
}

TEST(ChatTemplateHostile, DeepNesting) {
  expect_error("{{ " + repeat("(", 200) + "1" + repeat(")", 200) + " }}", "nests too deeply");
  expect_error("{{ " + repeat("[", 200) + repeat("]", 200) + " }}", "nests too deeply");
  expect_error("{{ " + repeat("{'a': ", 200) + "1" + repeat("}", 200) + " }}", "nests too deeply");
  expect_error("{{ " + repeat("not ", 5000) + "x }}", "nests too deeply");
  expect_error("{{ " + repeat("-", 5000) + "1 }}", "nests too deeply");
  expect_error("{{ " + repeat("1 if x else ", 2000) + "1 }}", "nests too deeply");
  expect_error(repeat("{% if true %}", 1000) + "x" + repeat("{% endif %}", 1000),
               "nests too deeply");
  expect_error(repeat("{% for x in [1] %}", 1000) + repeat("{% endfor %}", 1000),
               "nests too deeply");
  // Operator chains build nested trees too: moderate ones render, huge ones are refused.
  const Outcome flat = run("{{ " + repeat("1 + ", 60) + "1 }}");
  ASSERT_FALSE(flat.threw) << flat.message;
  EXPECT_EQ(flat.message, "61");
  expect_error("{{ " + repeat("1 + ", 200000) + "1 }}", "nests too deeply");
  expect_error("{{ x" + repeat(".a", 100000) + " }}", "nests too deeply");
  expect_error("{{ x" + repeat("|trim", 100000) + " }}", "nests too deeply");
  expect_error("{{ x" + repeat(" ~ x", 100000) + " }}", "nests too deeply");
  // Brackets so deep that the lexer refuses them before the parser runs.
  expect_error("{{ " + repeat("(", 100000) + " }}", "");
}

TEST(ChatTemplateHostile, MalformedTags) {
  expect_error("{% else %}{% endif %}{{", "line 1");
  expect_error("{% else %}{% endif %}", "else");
  expect_error("{% if true %}x", "unclosed 'if'");
  expect_error("{% for m in messages %}x", "unclosed 'for'");
  expect_error("{% macro m() %}x", "unclosed 'macro'");
  expect_error("{% if true %}{% endfor %}", "unexpected '{% endfor %}' (the open 'if' block");
  expect_error("{{ 'unterminated }}", "unterminated string");
  expect_error("{{ x ", "unterminated");
  expect_error("{% if x ", "unterminated");
  expect_error("{# comment", "unterminated comment");
  expect_error("{% raw %}never closed", "unterminated raw");
  expect_error("{{ x ) }}", "unexpected ')'");
  expect_error("{{ [1, 2 }}", "");
  expect_error("{{ }}", "expected an expression");
  expect_error("{% %}", "statement name");
  expect_error("{{ 1 +* 2 }}", "");
  expect_error("{{ a.  }}", "attribute name");
  expect_error("{{ x | }}", "name");
  expect_error("{{ 'a' @ 'b' }}", "unexpected character '@'");
  expect_error("{{ '\\N{DASH}' }}", "not supported");
  expect_error("{{ 99999999999999999999999 }}", "too large");
  expect_error("{% set %}", "name");
  expect_error("{% for in x %}{% endfor %}", "expected");
  expect_error("{% macro (a) %}{% endmacro %}", "name");
}

TEST(ChatTemplateHostile, UnsupportedTags) {
  for (const char* tag : {"include 'x'", "extends 'x'", "import 'x' as y", "from 'x' import y",
                          "block b", "do x.append(1)", "autoescape true", "debug"})
    expect_error(std::string("{% ") + tag + " %}", "not supported");
  expect_error("{% frobnicate %}", "unknown tag 'frobnicate'");
  expect_error("{% for x in y recursive %}{% endfor %}", "recursive");
}

TEST(ChatTemplateHostile, SandboxEscapesStayInert) {
  expect_inert("{{ lipsum.__globals__['os'].popen('id').read() }}");
  expect_inert("{{ ''.__class__.__mro__ }}");
  expect_inert("{{ ''.__class__.__mro__[1].__subclasses__() }}");
  expect_inert("{{ cycler.__init__.__globals__.os.popen('id').read() }}");
  expect_inert("{{ joiner.__init__.__globals__ }}");
  expect_inert("{{ namespace.__init__.__globals__ }}");
  expect_inert("{{ range.__self__ }}");
  expect_inert("{{ raise_exception.__globals__ }}");
  expect_inert("{{ messages.__class__.__base__.__subclasses__() }}");
  expect_inert("{{ messages[0].__class__ }}");
  expect_inert("{{ self }}{{ config }}{{ request }}{{ cycler }}{{ joiner }}{{ lipsum }}");
  expect_inert("{{ ''|attr('__class__') }}");
  expect_inert("{{ (1).__class__ }}");
  expect_inert("{{ messages.pop() }}");
  expect_inert("{{ messages[0].update({'role': 'x'}) }}{{ messages[0].role }}");
  expect_inert("{% set ns = namespace() %}{% set ns.__class__ = 1 %}");
  expect_inert("{{ namespace(__class__=1) }}");
  expect_inert("{{ strftime_now('%s' * 1000) }}");
  // Nothing leaks through an error message either: the data is all there is.
  const Outcome o = run("{{ ''.__class__.__mro__ }}");
  EXPECT_TRUE(o.threw);
  EXPECT_NE(o.message.find("unsafe"), std::string::npos) << o.message;
}

TEST(ChatTemplateHostile, BlowUpsAreBounded) {
  expect_error("{% for i in range(10**9) %}{% endfor %}", "Range too big");
  expect_error("{{ 'a' * 10**9 }}", "exceeds the limit");
  expect_error("{{ [1] * 10**9 }}", "exceeds the limit");
  expect_error("{{ 10**9 * 'a' }}", "exceeds the limit");
  expect_error("{{ 10 ** 100 }}", "integer overflow");
  expect_error(
      "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
      "{% endfor %}",
      "exceeds the limit");
  expect_error(
      "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}"
      "{% endfor %}",
      "exceeds the limit");
  // Quadratic growth runs into the work budget long before it costs real time.
  expect_error(
      "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}"
      "{% endfor %}",
      "too much work");
  // Nested loops: over the total iteration limit.
  expect_error("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
               "iterations");
  // Huge output.
  expect_error("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "exceeds the limit");
  // Lists nested by a loop.
  expect_error(
      "{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = [ns.l] %}"
      "{% endfor %}",
      "nest deeper");
  expect_error("{{ 'x'.center(10**9) }}", "exceeds the limit");
  expect_error("{{ 'x' | batch(10**9, 'y') | list }}", "exceeds the limit");
  expect_error("{{ ('%0' ~ 10**6 ~ 'd') % 1 }}", "");
}

TEST(ChatTemplateHostile, LimitsComeFromChatTemplateLimits) {
  ChatTemplateLimits small;
  small.max_output_bytes = 100;
  small.max_loop_iterations = 10;
  small.max_recursion_depth = 3;
  small.max_source_bytes = 200;
  EXPECT_TRUE(run("{{ 'x' * 101 }}", chat_context(), small).threw);
  EXPECT_FALSE(run("{{ 'x' * 100 }}", chat_context(), small).threw);
  EXPECT_TRUE(run("{% for i in range(11) %}{% endfor %}", chat_context(), small).threw);
  EXPECT_FALSE(run("{% for i in range(10) %}{% endfor %}", chat_context(), small).threw);
  const std::string rec = "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{% endif %}{% endmacro %}";
  EXPECT_FALSE(run(rec + "{{ f(2) }}", chat_context(), small).threw);
  EXPECT_TRUE(run(rec + "{{ f(3) }}", chat_context(), small).threw);
  const Outcome big = run(std::string(201, 'x'), chat_context(), small);
  EXPECT_TRUE(big.threw);
  EXPECT_NE(big.message.find("limit"), std::string::npos);
}

TEST(ChatTemplateHostile, CallerCannotOutliveItsBlock) {
  expect_error(
      "{% set ns = namespace() %}{% macro m() %}{% set ns.c = caller %}{% endmacro %}"
      "{% call m() %}body{% endcall %}{{ ns.c() }}",
      "after its {% call %} block ended");
}

TEST(ChatTemplateHostile, ErrorsInsideLoopsAndMacrosUnwindCleanly) {
  // The same template object renders again after an error in the middle of a render.
  ChatTemplate t(
      "{% macro m(x) %}{% for i in [1] %}{{ x.bad() }}{% endfor %}{% endmacro %}"
      "{% if fail %}{{ m(1) }}{% endif %}ok");
  EXPECT_THROW(t.render(nlohmann::json{{"fail", true}}), Error);
  EXPECT_EQ(t.render(nlohmann::json{{"fail", false}}), "ok");
}

TEST(ChatTemplateHostile, HostileData) {
  const ChatTemplate t(
      "{% for m in messages %}{{ m.role }}:{{ m.content }}|{{ m | tojson }}{% endfor %}");
  // Deeply nested data is refused, not recursed into without end.
  nlohmann::json deep = nlohmann::json::array();
  for (int k = 0; k < 300; ++k) deep = nlohmann::json::array({deep});
  nlohmann::json ctx;
  ctx["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", deep}}});
  EXPECT_THROW(t.render(ctx), Error);
  // Invalid UTF-8 and control characters pass through without harm.
  nlohmann::json bad;
  bad["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", "\xff\xfe\x01 \xc3"}}});
  bad["messages"][0]["content"] = std::string("\xff\xfe\x01 \xc3", 5);
  std::string out;
  try {
    out = t.render(bad);
  } catch (const std::exception&) {
    // nlohmann may refuse to hold invalid UTF-8 when dumping; neither outcome may crash.
  }
  // Non-object context is a caller error.
  EXPECT_THROW(t.render(nlohmann::json::array()), Error);
  // Data that is not what the template expects.
  nlohmann::json odd;
  odd["messages"] = 42;
  EXPECT_THROW(t.render(odd), Error);
  odd["messages"] = nlohmann::json::array({nullptr, 1, "s"});  // renders like Jinja: inert
  EXPECT_EQ(t.render(odd), ":|null:|1:|\"s\"");
}

TEST(ChatTemplateHostile, InvalidUtf8InTemplate) {
  const Outcome o = run("\xff{{ '\xc3' }}\xe2\x82{{ '\xf0\x9f' | length }}{{ '\xc3('[::-1] }}");
  EXPECT_FALSE(o.threw) << o.message;
  const Outcome o2 = run("{{ '\xe2\x80\xa8x' | trim | upper | title }}{{ '\xff'.strip() }}");
  EXPECT_FALSE(o2.threw) << o2.message;
}

}  // namespace
}  // namespace hearth
