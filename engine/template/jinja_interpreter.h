// Renders a parsed chat template: a tree-walking interpreter with Jinja's scoping (for-loop
// bodies and macros get their own scope, if-blocks do not), loop controls and macros, under the
// limits of ChatTemplateLimits plus a work budget, so that no template can run away.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/template/chat_template.h"
#include "engine/template/jinja_ast.h"
#include "engine/template/jinja_value.h"

namespace hearth::jinja {

// Statement and expression evaluation nests at most this deep (macro calls included).
inline constexpr uint32_t kMaxEvalDepth = 400;
// range() is capped like Jinja's sandbox (MAX_RANGE).
inline constexpr int64_t kMaxRange = 100000;

class Interpreter {
 public:
  // globals[symbol id] holds each global variable (Undefined when not given).
  Interpreter(const Program& program, const ChatTemplateLimits& limits, std::vector<Value> globals);

  std::string render();

  // Accounting used by the built-ins: every value produced costs work units; strings and lists
  // may not outgrow the output limit.
  void charge(size_t units, Pos pos);
  void check_string_size(size_t bytes, Pos pos) const;
  void check_list_size(size_t items, Pos pos) const;
  void check_depth(const Value& v, Pos pos) const;

  Value call_value(const Value& callee, CallArgs& args, Pos pos);

  // Called by macro and caller objects.
  Value run_macro(const MacroStmt& macro, CallArgs& args, Pos pos);
  struct Scope;
  Value run_caller(const CallBlockStmt& block, Scope* scope, CallArgs& args, Pos pos);

  struct Scope {
    Scope* parent = nullptr;
    std::vector<std::pair<int, Value>> vars;
  };

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  struct DepthGuard;

  Value lookup(int sym, const NameExpr* expr) const;
  void assign(int sym, Value v);
  void bind(Scope& scope, int sym, Value v);
  void assign_target(const Target& target, const Value& v, Pos pos, Scope* into);

  Flow exec_body(const Body& body);
  Flow exec(const Stmt& stmt);
  Flow exec_if(const IfStmt& s);
  Flow exec_for(const ForStmt& s);
  void exec_set(const SetStmt& s);
  void exec_call_block(const CallBlockStmt& s);
  std::string capture(const Body& body);
  Value apply_filter_chain(const std::vector<std::unique_ptr<FilterExpr>>& filters, Value v);
  void emit(std::string_view text, Pos pos);

  Value eval(const Expr& e);
  Value eval_call(const CallExpr& c);
  Value eval_filter(const FilterExpr& f, Value operand);
  bool eval_test(const TestExpr& t);
  Value eval_binary(const BinaryExpr& b);
  Value eval_compare(const CompareExpr& c);
  void eval_args(const Arguments& args, CallArgs& out);

  const Program& program_;
  const ChatTemplateLimits& limits_;
  std::vector<Value> globals_;
  Scope* scope_ = nullptr;  // null at the top level
  std::string* out_ = nullptr;
  size_t work_ = 0;
  size_t work_limit_ = 0;
  size_t iterations_ = 0;
  uint32_t depth_ = 0;
  uint32_t macro_depth_ = 0;
  int loop_sym_ = -1;
  int caller_sym_ = -1;
  int varargs_sym_ = -1;
  int kwargs_sym_ = -1;
};

}  // namespace hearth::jinja
