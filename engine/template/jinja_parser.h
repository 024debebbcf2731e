// Parses chat-template tokens into a Program with Jinja's grammar and operator precedence.
// Nesting (statements, parentheses, operators) is bounded so that hostile input cannot exhaust
// the stack; unknown tags, filters and tests are syntax errors, as in Jinja.
#pragma once

#include <string_view>

#include "engine/template/jinja_ast.h"

namespace hearth::jinja {

// Statements and expressions may nest at most this deep.
inline constexpr uint32_t kMaxSyntaxDepth = 128;

// Throws Error(kInvalidFile) "chat template, line L, column C: ..." on any syntax error.
Program parse_template(std::string_view source);

}  // namespace hearth::jinja
