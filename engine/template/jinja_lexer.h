// Splits a chat template into tokens the way Jinja's lexer does with the settings transformers
// uses (trim_blocks and lstrip_blocks on, newlines normalized, one trailing newline dropped):
// text between tags, the {{ }} and {% %} delimiters, and the names, literals and operators inside
// them. Comments and raw blocks are resolved here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/template/jinja_value.h"

namespace hearth::jinja {

enum class Tok : uint8_t {
  kData,        // template text, after whitespace control
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,  // text holds the decoded value
  kInt,
  kFloat,
  kOp,  // text holds the operator: + - * / // % ** ~ ( ) [ ] { } . , : | = == != < <= > >= ;
  kEof,
};

struct Token {
  Tok type = Tok::kEof;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  Pos pos;
};

// Throws Error(kInvalidFile) with line and column on malformed input (unterminated tags,
// strings or comments, unbalanced brackets, stray characters).
std::vector<Token> tokenize(std::string_view source);

}  // namespace hearth::jinja
