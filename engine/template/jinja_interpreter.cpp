#include "engine/template/jinja_interpreter.h"

#include <cmath>
#include <limits>

#include "engine/template/jinja_builtins.h"

namespace hearth::jinja {
namespace {

// A macro defined with {% macro %}; rendering happens in the interpreter.
struct MacroFunction final : Function {
  explicit MacroFunction(const MacroStmt* m) : Function(m->name), macro(m) {}
  Value call(Interpreter& in, CallArgs& args, Pos pos) override {
    return in.run_macro(*macro, args, pos);
  }
  const MacroStmt* macro;
};

// caller() inside a macro invoked from {% call %}: renders the call block's body in the scope
// where the block stands, which lives only while the block runs.
struct CallerFunction final : Function {
  CallerFunction(const CallBlockStmt* b, Interpreter::Scope* s, std::shared_ptr<bool> a)
      : Function("caller"), block(b), scope(s), alive(std::move(a)) {}
  Value call(Interpreter& in, CallArgs& args, Pos pos) override {
    if (!*alive) fail_at(pos, "caller() was called after its {% call %} block ended");
    return in.run_caller(*block, scope, args, pos);
  }
  const CallBlockStmt* block;
  Interpreter::Scope* scope;
  std::shared_ptr<bool> alive;
};

struct LoopObject final : NativeObject, std::enable_shared_from_this<LoopObject> {
  const char* type_name() const override { return "LoopContext"; }
  Value get_attr(std::string_view name) const override;
  std::vector<Value> items;
  size_t index = 0;
};

struct CycleFunction final : Function {
  explicit CycleFunction(std::shared_ptr<const LoopObject> l)
      : Function("cycle"), loop(std::move(l)) {}
  Value call(Interpreter&, CallArgs& args, Pos pos) override {
    if (args.positional.empty()) fail_at(pos, "no items for cycling given");
    return args.positional[loop->index % args.positional.size()];
  }
  std::shared_ptr<const LoopObject> loop;
};

Value LoopObject::get_attr(std::string_view name) const {
  const auto n = static_cast<int64_t>(items.size());
  const auto i = static_cast<int64_t>(index);
  if (name == "index") return Value::integer(i + 1);
  if (name == "index0") return Value::integer(i);
  if (name == "revindex") return Value::integer(n - i);
  if (name == "revindex0") return Value::integer(n - i - 1);
  if (name == "first") return Value::boolean(i == 0);
  if (name == "last") return Value::boolean(i == n - 1);
  if (name == "length") return Value::integer(n);
  if (name == "depth") return Value::integer(1);
  if (name == "depth0") return Value::integer(0);
  if (name == "previtem") {
    if (i > 0) return items[index - 1];
    return Value::undefined("there is no previous item");
  }
  if (name == "nextitem") {
    if (i + 1 < n) return items[index + 1];
    return Value::undefined("there is no next item");
  }
  if (name == "cycle") return Value::function(std::make_shared<CycleFunction>(shared_from_this()));
  return Value::undefined("'LoopContext object' has no attribute '" + std::string(name) + "'");
}

int find_symbol(const Program& p, std::string_view name) {
  for (size_t k = 0; k < p.symbols.size(); ++k)
    if (p.symbols[k] == name) return static_cast<int>(k);
  return -1;
}

[[noreturn]] void fail_undefined(const Value& v, Pos pos) {
  fail_at(pos, v.undefined_message());
}

std::string binop_name(BinOp op) {
  switch (op) {
    case BinOp::kAdd:
      return "+";
    case BinOp::kSub:
      return "-";
    case BinOp::kMul:
      return "*";
    case BinOp::kDiv:
      return "/";
    case BinOp::kFloorDiv:
      return "//";
    case BinOp::kMod:
      return "%";
    case BinOp::kPow:
      return "**";
    case BinOp::kConcat:
      return "~";
  }
  return "?";
}

[[noreturn]] void fail_operands(BinOp op, const Value& a, const Value& b, Pos pos) {
  fail_at(pos, "unsupported operand type(s) for " + binop_name(op) + ": '" + type_name(a) +
                   "' and '" + type_name(b) + "'");
}

// Python's divmod for floats.
void float_divmod(double vx, double wx, double& floordiv, double& mod) {
  mod = std::fmod(vx, wx);
  double div = (vx - mod) / wx;
  if (mod != 0.0) {
    if ((wx < 0) != (mod < 0)) {
      mod += wx;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, wx);
  }
  if (div != 0.0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, vx / wx);
  }
}

}  // namespace

struct Interpreter::DepthGuard {
  DepthGuard(Interpreter& in, Pos pos) : interp(in) {
    if (++interp.depth_ > kMaxEvalDepth)
      fail_at(pos,
              "template evaluation nests deeper than " + std::to_string(kMaxEvalDepth) + " levels");
  }
  ~DepthGuard() { --interp.depth_; }
  Interpreter& interp;
};

Interpreter::Interpreter(const Program& program, const ChatTemplateLimits& limits,
                         std::vector<Value> globals)
    : program_(program), limits_(limits), globals_(std::move(globals)) {
  globals_.resize(program.symbols.size());
  work_limit_ = 4 * (limits.max_output_bytes + limits.max_loop_iterations) + 4096;
  loop_sym_ = find_symbol(program, "loop");
  caller_sym_ = find_symbol(program, "caller");
  varargs_sym_ = find_symbol(program, "varargs");
  kwargs_sym_ = find_symbol(program, "kwargs");
}

std::string Interpreter::render() {
  std::string out;
  out.reserve(4096);
  out_ = &out;
  exec_body(program_.body);
  out_ = nullptr;
  return out;
}

void Interpreter::charge(size_t units, Pos pos) {
  work_ += units;
  if (work_ > work_limit_)
    fail_at(pos, "template does too much work (more than " + std::to_string(work_limit_) +
                     " steps); it may loop or build huge values");
}

void Interpreter::check_string_size(size_t bytes, Pos pos) const {
  if (bytes > limits_.max_output_bytes)
    fail_at(pos, "a string of " + std::to_string(bytes) + " bytes exceeds the limit of " +
                     std::to_string(limits_.max_output_bytes) + " bytes");
}

void Interpreter::check_list_size(size_t items, Pos pos) const {
  if (items > limits_.max_loop_iterations)
    fail_at(pos, "a list of " + std::to_string(items) + " items exceeds the limit of " +
                     std::to_string(limits_.max_loop_iterations) + " items");
}

void Interpreter::check_depth(const Value& v, Pos pos) const {
  if (v.depth() > kMaxValueDepth)
    fail_at(pos, "lists and dicts nest deeper than " + std::to_string(kMaxValueDepth) + " levels");
}

// --- variables -------------------------------------------------------------------------------

Value Interpreter::lookup(int sym, const NameExpr* expr) const {
  for (const Scope* s = scope_; s; s = s->parent)
    for (const auto& [id, v] : s->vars)
      if (id == sym) return v;
  const Value& g = globals_[static_cast<size_t>(sym)];
  if (g.is_undefined() && expr) return Value::undefined("'" + expr->name + "' is undefined");
  return g;
}

void Interpreter::bind(Scope& scope, int sym, Value v) {
  for (auto& [id, old] : scope.vars) {
    if (id == sym) {
      old = std::move(v);
      return;
    }
  }
  scope.vars.emplace_back(sym, std::move(v));
}

void Interpreter::assign(int sym, Value v) {
  if (scope_) {
    bind(*scope_, sym, std::move(v));
  } else {
    globals_[static_cast<size_t>(sym)] = std::move(v);
  }
}

void Interpreter::assign_target(const Target& target, const Value& v, Pos pos, Scope* into) {
  auto put = [&](int sym, Value x) {
    if (into) {
      bind(*into, sym, std::move(x));
    } else {
      assign(sym, std::move(x));
    }
  };
  if (!target.is_tuple) {
    put(target.names[0], v);
    return;
  }
  std::vector<Value> parts = iterate(v, pos);
  if (v.is_undefined()) fail_undefined(v, pos);
  if (parts.size() != target.names.size())
    fail_at(pos,
            parts.size() > target.names.size()
                ? "too many values to unpack (expected " + std::to_string(target.names.size()) + ")"
                : "not enough values to unpack (expected " + std::to_string(target.names.size()) +
                      ", got " + std::to_string(parts.size()) + ")");
  for (size_t k = 0; k < parts.size(); ++k) put(target.names[k], std::move(parts[k]));
}

// --- statements ------------------------------------------------------------------------------

void Interpreter::emit(std::string_view text, Pos pos) {
  out_->append(text);
  if (out_->size() > limits_.max_output_bytes)
    fail_at(pos, "the rendered prompt exceeds the limit of " +
                     std::to_string(limits_.max_output_bytes) + " bytes");
}

Interpreter::Flow Interpreter::exec_body(const Body& body) {
  for (const StmtPtr& s : body) {
    const Flow f = exec(*s);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

std::string Interpreter::capture(const Body& body) {
  std::string buf;
  std::string* saved = out_;
  out_ = &buf;
  try {
    exec_body(body);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buf;
}

Value Interpreter::apply_filter_chain(const std::vector<std::unique_ptr<FilterExpr>>& filters,
                                      Value v) {
  for (const auto& f : filters) v = eval_filter(*f, std::move(v));
  return v;
}

Interpreter::Flow Interpreter::exec(const Stmt& stmt) {
  DepthGuard guard(*this, stmt.pos);
  charge(1, stmt.pos);
  switch (stmt.kind) {
    case StmtKind::kText:
      emit(static_cast<const TextStmt&>(stmt).text, stmt.pos);
      break;
    case StmtKind::kPrint: {
      const Value v = eval(*static_cast<const PrintStmt&>(stmt).expr);
      if (v.is_string()) {
        emit(v.as_string(), stmt.pos);
      } else {
        std::string text;
        append_str(text, v);
        charge(text.size(), stmt.pos);
        emit(text, stmt.pos);
      }
      break;
    }
    case StmtKind::kIf:
      return exec_if(static_cast<const IfStmt&>(stmt));
    case StmtKind::kFor:
      return exec_for(static_cast<const ForStmt&>(stmt));
    case StmtKind::kSet:
      exec_set(static_cast<const SetStmt&>(stmt));
      break;
    case StmtKind::kSetBlock: {
      const auto& s = static_cast<const SetBlockStmt&>(stmt);
      Value v = apply_filter_chain(s.filters, Value::string(capture(s.body)));
      assign_target(s.target, v, s.pos, nullptr);
      break;
    }
    case StmtKind::kMacro: {
      const auto& m = static_cast<const MacroStmt&>(stmt);
      assign(m.sym, Value::function(std::make_shared<MacroFunction>(&m)));
      break;
    }
    case StmtKind::kCallBlock:
      exec_call_block(static_cast<const CallBlockStmt&>(stmt));
      break;
    case StmtKind::kFilterBlock: {
      const auto& s = static_cast<const FilterBlockStmt&>(stmt);
      const Value v = apply_filter_chain(s.filters, Value::string(capture(s.body)));
      emit(to_str(v), s.pos);
      break;
    }
    case StmtKind::kWith: {
      const auto& s = static_cast<const WithStmt&>(stmt);
      Scope scope;
      scope.parent = scope_;
      for (const auto& [target, expr] : s.assignments)
        assign_target(target, eval(*expr), s.pos, &scope);
      scope_ = &scope;
      Flow f;
      try {
        f = exec_body(s.body);
      } catch (...) {
        scope_ = scope.parent;
        throw;
      }
      scope_ = scope.parent;
      return f;
    }
    case StmtKind::kScope:
      return exec_body(static_cast<const ScopeStmt&>(stmt).body);
    case StmtKind::kBreak:
      return Flow::kBreak;
    case StmtKind::kContinue:
      return Flow::kContinue;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec_if(const IfStmt& s) {
  for (const auto& [cond, body] : s.branches)
    if (truthy(eval(*cond))) return exec_body(body);
  return exec_body(s.otherwise);
}

Interpreter::Flow Interpreter::exec_for(const ForStmt& s) {
  const Value iterable = eval(*s.iterable);
  std::vector<Value> items = iterate(iterable, s.iterable->pos);
  charge(items.size(), s.pos);
  Scope* const outer = scope_;
  if (s.condition) {
    std::vector<Value> kept;
    for (Value& item : items) {
      Scope probe;
      probe.parent = outer;
      assign_target(s.target, item, s.pos, &probe);
      scope_ = &probe;
      bool keep;
      try {
        keep = truthy(eval(*s.condition));
      } catch (...) {
        scope_ = outer;
        throw;
      }
      scope_ = outer;
      if (keep) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec_body(s.otherwise);

  auto loop = std::make_shared<LoopObject>();
  loop->items = std::move(items);
  const Value loop_value = Value::object(loop);
  for (size_t k = 0; k < loop->items.size(); ++k) {
    if (++iterations_ > limits_.max_loop_iterations)
      fail_at(s.pos, "loops run more than " + std::to_string(limits_.max_loop_iterations) +
                         " iterations in total");
    loop->index = k;
    Scope scope;
    scope.parent = outer;
    assign_target(s.target, loop->items[k], s.pos, &scope);
    if (loop_sym_ >= 0) bind(scope, loop_sym_, loop_value);
    scope_ = &scope;
    Flow f;
    try {
      f = exec_body(s.body);
    } catch (...) {
      scope_ = outer;
      throw;
    }
    scope_ = outer;
    if (f == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

void Interpreter::exec_set(const SetStmt& s) {
  Value v = eval(*s.value);
  if (s.target.ns_sym < 0) {
    assign_target(s.target, v, s.pos, nullptr);
    return;
  }
  const Value ns = lookup(s.target.ns_sym, nullptr);
  if (ns.kind() != Kind::kObject || !ns.as_object().is_namespace())
    fail_at(s.pos, "cannot assign attribute '" + s.target.ns_attr + "' of '" + s.target.ns_name +
                       "': it is not a namespace");
  if (!s.target.ns_attr.empty() && s.target.ns_attr[0] == '_')
    fail_at(s.pos, "namespace attributes may not start with '_'");
  check_depth(v, s.pos);
  static_cast<NamespaceObject&>(ns.as_object()).set(s.target.ns_attr, std::move(v));
}

void Interpreter::exec_call_block(const CallBlockStmt& s) {
  auto alive = std::make_shared<bool>(true);
  struct Expire {
    std::shared_ptr<bool> flag;
    ~Expire() { *flag = false; }
  } expire{alive};
  CallArgs args;
  eval_args(s.call->args, args);
  args.keywords.emplace_back("caller",
                             Value::function(std::make_shared<CallerFunction>(&s, scope_, alive)));
  const Value callee = eval(*s.call->callee);
  emit(to_str(call_value(callee, args, s.pos)), s.pos);
}

// --- macros ----------------------------------------------------------------------------------

Value Interpreter::run_macro(const MacroStmt& m, CallArgs& args, Pos pos) {
  DepthGuard guard(*this, pos);
  if (macro_depth_ >= limits_.max_recursion_depth)
    fail_at(pos, "macro calls nest deeper than " + std::to_string(limits_.max_recursion_depth) +
                     " (runaway recursion?)");
  ++macro_depth_;
  struct Unwind {
    Interpreter& in;
    Scope* saved_scope;
    std::string* saved_out;
    ~Unwind() {
      --in.macro_depth_;
      in.scope_ = saved_scope;
      in.out_ = saved_out;
    }
  } unwind{*this, scope_, out_};

  Scope scope;  // macros see their arguments and the template's globals
  std::vector<bool> given(m.params.size(), false);
  std::vector<Value> extra;
  std::vector<std::pair<std::string, Value>> extra_kw;
  for (size_t k = 0; k < args.positional.size(); ++k) {
    if (k < m.params.size()) {
      bind(scope, m.params[k].sym, std::move(args.positional[k]));
      given[k] = true;
    } else {
      if (varargs_sym_ < 0)
        fail_at(pos, "macro '" + m.name + "' takes not more than " +
                         std::to_string(m.params.size()) + " argument(s)");
      extra.push_back(std::move(args.positional[k]));
    }
  }
  for (auto& [name, value] : args.keywords) {
    if (name == "caller") {
      if (caller_sym_ >= 0) bind(scope, caller_sym_, std::move(value));
      continue;
    }
    size_t k = 0;
    while (k < m.params.size() && m.params[k].name != name) ++k;
    if (k < m.params.size()) {
      if (given[k])
        fail_at(pos, "macro '" + m.name + "' got multiple values for argument '" + name + "'");
      bind(scope, m.params[k].sym, std::move(value));
      given[k] = true;
    } else {
      if (kwargs_sym_ < 0) fail_at(pos, "macro '" + m.name + "' has no argument '" + name + "'");
      extra_kw.emplace_back(name, std::move(value));
    }
  }
  if (varargs_sym_ >= 0) bind(scope, varargs_sym_, Value::list(std::move(extra), true));
  if (kwargs_sym_ >= 0) bind(scope, kwargs_sym_, Value::dict(std::move(extra_kw)));
  scope_ = &scope;
  for (size_t k = 0; k < m.params.size(); ++k) {
    if (given[k]) continue;
    const MacroParam& p = m.params[k];
    bind(scope, p.sym,
         p.default_value ? eval(*p.default_value)
                         : Value::undefined("parameter '" + p.name + "' was not provided"));
  }
  std::string buf;
  out_ = &buf;
  exec_body(m.body);
  return Value::string(std::move(buf));
}

Value Interpreter::run_caller(const CallBlockStmt& block, Scope* captured, CallArgs& args,
                              Pos pos) {
  DepthGuard guard(*this, pos);
  if (macro_depth_ >= limits_.max_recursion_depth)
    fail_at(pos, "macro calls nest deeper than " + std::to_string(limits_.max_recursion_depth));
  ++macro_depth_;
  struct Unwind {
    Interpreter& in;
    Scope* saved_scope;
    std::string* saved_out;
    ~Unwind() {
      --in.macro_depth_;
      in.scope_ = saved_scope;
      in.out_ = saved_out;
    }
  } unwind{*this, scope_, out_};
  Scope scope;
  scope.parent = captured;
  const auto& params = block.caller_params;
  if (args.positional.size() > params.size())
    fail_at(pos, "caller() takes not more than " + std::to_string(params.size()) + " argument(s)");
  std::vector<bool> given(params.size(), false);
  for (size_t k = 0; k < args.positional.size(); ++k) {
    bind(scope, params[k].sym, std::move(args.positional[k]));
    given[k] = true;
  }
  for (auto& [name, value] : args.keywords) {
    size_t k = 0;
    while (k < params.size() && params[k].name != name) ++k;
    if (k == params.size()) fail_at(pos, "caller() has no argument '" + name + "'");
    bind(scope, params[k].sym, std::move(value));
    given[k] = true;
  }
  scope_ = &scope;
  for (size_t k = 0; k < params.size(); ++k) {
    if (given[k]) continue;
    bind(scope, params[k].sym,
         params[k].default_value ? eval(*params[k].default_value) : Value::undefined());
  }
  std::string buf;
  out_ = &buf;
  exec_body(block.body);
  return Value::string(std::move(buf));
}

Value Interpreter::call_value(const Value& callee, CallArgs& args, Pos pos) {
  if (callee.kind() == Kind::kFunction) return callee.as_function().call(*this, args, pos);
  if (callee.is_undefined()) fail_undefined(callee, pos);
  fail_at(pos, std::string("'") + type_name(callee) + "' object is not callable");
}

// --- expressions -----------------------------------------------------------------------------

void Interpreter::eval_args(const Arguments& args, CallArgs& out) {
  out.positional.reserve(args.positional.size());
  for (const ExprPtr& e : args.positional) out.positional.push_back(eval(*e));
  for (const auto& [name, e] : args.keywords) out.keywords.emplace_back(name, eval(*e));
}

Value Interpreter::eval(const Expr& e) {
  DepthGuard guard(*this, e.pos);
  charge(1, e.pos);
  switch (e.kind) {
    case ExprKind::kConst:
      return static_cast<const ConstExpr&>(e).value;
    case ExprKind::kName: {
      const auto& n = static_cast<const NameExpr&>(e);
      return lookup(n.sym, &n);
    }
    case ExprKind::kList:
    case ExprKind::kTuple: {
      const auto& s = static_cast<const SeqExpr&>(e);
      std::vector<Value> items;
      items.reserve(s.items.size());
      for (const ExprPtr& item : s.items) items.push_back(eval(*item));
      Value v = Value::list(std::move(items), e.kind == ExprKind::kTuple);
      check_depth(v, e.pos);
      return v;
    }
    case ExprKind::kDict: {
      const auto& d = static_cast<const DictExpr&>(e);
      std::vector<std::pair<std::string, Value>> items;
      for (const auto& [ke, ve] : d.items) {
        const Value key = eval(*ke);
        if (!key.is_string())
          fail_at(ke->pos, std::string("dict keys must be strings in chat templates, not '") +
                               type_name(key) + "'");
        Value value = eval(*ve);
        bool replaced = false;
        for (auto& [k, v] : items) {
          if (k == key.as_string()) {
            v = value;
            replaced = true;
          }
        }
        if (!replaced) items.emplace_back(key.as_string(), std::move(value));
      }
      Value v = Value::dict(std::move(items));
      check_depth(v, e.pos);
      return v;
    }
    case ExprKind::kGetattr: {
      const auto& g = static_cast<const GetattrExpr&>(e);
      return get_attr(eval(*g.object), g.attr, e.pos);
    }
    case ExprKind::kGetitem: {
      const auto& g = static_cast<const GetitemExpr&>(e);
      const Value obj = eval(*g.object);
      return get_item(obj, eval(*g.index), e.pos);
    }
    case ExprKind::kSlice: {
      const auto& s = static_cast<const SliceExpr&>(e);
      const Value obj = eval(*s.object);
      Value start, stop, step;
      if (s.start) start = eval(*s.start);
      if (s.stop) stop = eval(*s.stop);
      if (s.step) step = eval(*s.step);
      return slice_value(*this, obj, s.start ? &start : nullptr, s.stop ? &stop : nullptr,
                         s.step ? &step : nullptr, e.pos);
    }
    case ExprKind::kCall:
      return eval_call(static_cast<const CallExpr&>(e));
    case ExprKind::kFilter: {
      const auto& f = static_cast<const FilterExpr&>(e);
      return eval_filter(f, eval(*f.operand));
    }
    case ExprKind::kTest:
      return Value::boolean(eval_test(static_cast<const TestExpr&>(e)));
    case ExprKind::kUnary: {
      const auto& u = static_cast<const UnaryExpr&>(e);
      const Value v = eval(*u.operand);
      if (u.op == UnOp::kNot) return Value::boolean(!truthy(v));
      if (v.is_undefined()) fail_undefined(v, e.pos);
      if (!v.is_number())
        fail_at(e.pos, std::string("bad operand type for unary ") +
                           (u.op == UnOp::kNeg ? "-" : "+") + ": '" + type_name(v) + "'");
      if (u.op == UnOp::kPos) return v.kind() == Kind::kFloat ? v : Value::integer(v.as_int());
      if (v.kind() == Kind::kFloat) return Value::number(-v.as_float());
      if (v.as_int() == std::numeric_limits<int64_t>::min()) fail_at(e.pos, "integer overflow");
      return Value::integer(-v.as_int());
    }
    case ExprKind::kBinary:
      return eval_binary(static_cast<const BinaryExpr&>(e));
    case ExprKind::kAnd: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      Value left = eval(*b.left);
      return truthy(left) ? eval(*b.right) : left;
    }
    case ExprKind::kOr: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      Value left = eval(*b.left);
      return truthy(left) ? left : eval(*b.right);
    }
    case ExprKind::kCompare:
      return eval_compare(static_cast<const CompareExpr&>(e));
    case ExprKind::kCondExpr: {
      const auto& c = static_cast<const CondExpr&>(e);
      if (truthy(eval(*c.cond))) return eval(*c.then);
      if (c.otherwise) return eval(*c.otherwise);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.pos.line) +
                              " evaluated to false and no else section was defined");
    }
  }
  return Value::undefined();
}

Value Interpreter::eval_call(const CallExpr& c) {
  CallArgs args;
  if (c.callee->kind == ExprKind::kGetattr) {  // obj.method(...): call without binding
    const auto& g = static_cast<const GetattrExpr&>(*c.callee);
    const Value obj = eval(*g.object);
    eval_args(c.args, args);
    Value result;
    if (call_method(*this, obj, g.attr, args, c.pos, result)) return result;
    return call_value(get_attr(obj, g.attr, g.pos), args, c.pos);
  }
  const Value callee = eval(*c.callee);
  eval_args(c.args, args);
  return call_value(callee, args, c.pos);
}

Value Interpreter::eval_filter(const FilterExpr& f, Value operand) {
  CallArgs args;
  eval_args(f.args, args);
  return apply_filter(*this, f.name, operand, args, f.pos);
}

bool Interpreter::eval_test(const TestExpr& t) {
  const Value operand = eval(*t.operand);
  CallArgs args;
  eval_args(t.args, args);
  const bool r = apply_test(*this, t.name, operand, args, t.pos);
  return t.negated ? !r : r;
}

Value Interpreter::eval_binary(const BinaryExpr& b) {
  const Value x = eval(*b.left);
  const Value y = eval(*b.right);
  const Pos pos = b.pos;
  if (b.op == BinOp::kConcat) {
    std::string s = to_str(x);
    const std::string t = to_str(y);
    check_string_size(s.size() + t.size(), pos);
    charge(s.size() + t.size(), pos);
    s += t;
    return Value::string(std::move(s));
  }
  if (x.is_undefined()) fail_undefined(x, pos);
  if (y.is_undefined()) fail_undefined(y, pos);
  const bool both_int = x.is_integral() && y.is_integral();
  const bool both_num = x.is_number() && y.is_number();
  switch (b.op) {
    case BinOp::kAdd:
      if (both_int) {
        int64_t r;
        if (__builtin_add_overflow(x.as_int(), y.as_int(), &r)) fail_at(pos, "integer overflow");
        return Value::integer(r);
      }
      if (both_num) return Value::number(x.as_float() + y.as_float());
      if (x.is_string() && y.is_string()) {
        const size_t n = x.as_string().size() + y.as_string().size();
        check_string_size(n, pos);
        charge(n, pos);
        std::string s;
        s.reserve(n);
        s += x.as_string();
        s += y.as_string();
        return Value::string(std::move(s));
      }
      if (x.is_list() && y.is_list() && x.as_list().is_tuple == y.as_list().is_tuple) {
        const auto& l = x.as_list().items;
        const auto& r = y.as_list().items;
        check_list_size(l.size() + r.size(), pos);
        charge(l.size() + r.size(), pos);
        std::vector<Value> items(l);
        items.insert(items.end(), r.begin(), r.end());
        return Value::list(std::move(items), x.as_list().is_tuple);
      }
      fail_operands(b.op, x, y, pos);
    case BinOp::kSub:
      if (both_int) {
        int64_t r;
        if (__builtin_sub_overflow(x.as_int(), y.as_int(), &r)) fail_at(pos, "integer overflow");
        return Value::integer(r);
      }
      if (both_num) return Value::number(x.as_float() - y.as_float());
      fail_operands(b.op, x, y, pos);
    case BinOp::kMul: {
      if (both_int) {
        int64_t r;
        if (__builtin_mul_overflow(x.as_int(), y.as_int(), &r)) fail_at(pos, "integer overflow");
        return Value::integer(r);
      }
      if (both_num) return Value::number(x.as_float() * y.as_float());
      const Value* seq = x.is_integral() ? &y : &x;
      const Value* count = x.is_integral() ? &x : &y;
      if (!count->is_integral() || !(seq->is_string() || seq->is_list()))
        fail_operands(b.op, x, y, pos);
      const int64_t n = std::max<int64_t>(count->as_int(), 0);
      if (seq->is_string()) {
        const std::string& s = seq->as_string();
        if (!s.empty() && static_cast<uint64_t>(n) > limits_.max_output_bytes / s.size())
          check_string_size(limits_.max_output_bytes + 1, pos);
        const size_t total = s.size() * static_cast<size_t>(n);
        check_string_size(total, pos);
        charge(total, pos);
        std::string r;
        r.reserve(total);
        for (int64_t k = 0; k < n && !s.empty(); ++k) r += s;
        return Value::string(std::move(r));
      }
      const auto& items = seq->as_list().items;
      if (!items.empty() && static_cast<uint64_t>(n) > limits_.max_loop_iterations / items.size())
        check_list_size(limits_.max_loop_iterations + 1, pos);
      const size_t total = items.size() * static_cast<size_t>(n);
      check_list_size(total, pos);
      charge(total, pos);
      std::vector<Value> r;
      r.reserve(total);
      for (int64_t k = 0; k < n && !items.empty(); ++k)
        r.insert(r.end(), items.begin(), items.end());
      return Value::list(std::move(r), seq->as_list().is_tuple);
    }
    case BinOp::kDiv:
      if (!both_num) fail_operands(b.op, x, y, pos);
      if (y.as_float() == 0.0) fail_at(pos, "division by zero");
      return Value::number(x.as_float() / y.as_float());
    case BinOp::kFloorDiv:
    case BinOp::kMod: {
      if (!both_num) {
        if (b.op == BinOp::kMod && x.is_string())
          return percent_format(*this, x.as_string(), y, pos);
        fail_operands(b.op, x, y, pos);
      }
      if (both_int) {
        const int64_t a = x.as_int(), d = y.as_int();
        if (d == 0) fail_at(pos, "integer division or modulo by zero");
        if (a == std::numeric_limits<int64_t>::min() && d == -1) {
          if (b.op == BinOp::kMod) return Value::integer(0);
          fail_at(pos, "integer overflow");
        }
        int64_t q = a / d, r = a % d;
        if (r != 0 && ((r < 0) != (d < 0))) {
          q -= 1;
          r += d;
        }
        return Value::integer(b.op == BinOp::kFloorDiv ? q : r);
      }
      if (y.as_float() == 0.0) fail_at(pos, "float division by zero");
      double q, r;
      float_divmod(x.as_float(), y.as_float(), q, r);
      return Value::number(b.op == BinOp::kFloorDiv ? q : r);
    }
    case BinOp::kPow: {
      if (!both_num) fail_operands(b.op, x, y, pos);
      if (both_int && y.as_int() >= 0) {
        int64_t base = x.as_int(), e = y.as_int(), r = 1;
        while (e > 0) {
          if (e & 1) {
            if (__builtin_mul_overflow(r, base, &r)) fail_at(pos, "integer overflow");
          }
          e >>= 1;
          if (e > 0 && __builtin_mul_overflow(base, base, &base)) fail_at(pos, "integer overflow");
        }
        return Value::integer(r);
      }
      if (x.as_float() == 0.0 && y.as_float() < 0)
        fail_at(pos, "0.0 cannot be raised to a negative power");
      if (x.as_float() < 0 && std::isfinite(y.as_float()) &&
          y.as_float() != std::floor(y.as_float()))
        fail_at(pos,
                "a negative number raised to a fractional power is complex, which chat templates "
                "do not support");
      return Value::number(std::pow(x.as_float(), y.as_float()));
    }
    case BinOp::kConcat:
      break;
  }
  return Value::undefined();
}

static bool contains(const Value& container, const Value& item, Pos pos) {
  switch (container.kind()) {
    case Kind::kString:
      if (!item.is_string())
        fail_at(pos, std::string("'in <string>' requires string as left operand, not ") +
                         type_name(item));
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Kind::kList:
      for (const Value& v : container.as_list().items)
        if (equals(v, item)) return true;
      return false;
    case Kind::kDict:
      if (item.is_dict() || (item.is_list() && !item.as_list().is_tuple) ||
          item.kind() == Kind::kObject)
        fail_at(pos, std::string("unhashable type: '") + type_name(item) + "'");
      return item.is_string() && container.as_dict().find(item.as_string());
    case Kind::kUndefined:
      return false;
    default:
      fail_at(pos, std::string("argument of type '") + type_name(container) + "' is not iterable");
  }
}

Value Interpreter::eval_compare(const CompareExpr& c) {
  Value left = eval(*c.first);
  for (const auto& [op, expr] : c.rest) {
    Value right = eval(*expr);
    bool r = false;
    switch (op) {
      case CmpOp::kEq:
        r = equals(left, right);
        break;
      case CmpOp::kNe:
        r = !equals(left, right);
        break;
      case CmpOp::kIn:
        r = contains(right, left, expr->pos);
        break;
      case CmpOp::kNotIn:
        r = !contains(right, left, expr->pos);
        break;
      default: {
        if (left.is_undefined()) fail_undefined(left, c.pos);
        if (right.is_undefined()) fail_undefined(right, c.pos);
        int cmp = 0;
        const char* sym = op == CmpOp::kLt   ? "<"
                          : op == CmpOp::kLe ? "<="
                          : op == CmpOp::kGt ? ">"
                                             : ">=";
        if (!try_compare(left, right, cmp))
          fail_at(c.pos, std::string("'") + sym + "' not supported between instances of '" +
                             type_name(left) + "' and '" + type_name(right) + "'");
        if (cmp == 2) {
          r = false;
        } else if (op == CmpOp::kLt) {
          r = cmp < 0;
        } else if (op == CmpOp::kLe) {
          r = cmp <= 0;
        } else if (op == CmpOp::kGt) {
          r = cmp > 0;
        } else {
          r = cmp >= 0;
        }
      }
    }
    if (!r) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

}  // namespace hearth::jinja
