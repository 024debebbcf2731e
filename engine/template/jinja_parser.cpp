#include "engine/template/jinja_parser.h"

#include <initializer_list>
#include <unordered_map>

#include "engine/template/jinja_builtins.h"
#include "engine/template/jinja_lexer.h"

namespace hearth::jinja {
namespace {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  Program run() {
    Program program;
    program.body = parse_body({}, Pos{1, 1}, "");
    program.symbols = std::move(symbols_);
    return program;
  }

 private:
  struct DepthGuard {
    DepthGuard(Parser& p, Pos pos) : parser(p) {
      if (++parser.depth_ > kMaxSyntaxDepth)
        fail_at(pos, "template nests too deeply (more than " + std::to_string(kMaxSyntaxDepth) +
                         " levels of statements, brackets or operators)");
    }
    ~DepthGuard() { --parser.depth_; }
    Parser& parser;
  };

  // Operator chains (a + b + c, x|f|g, a.b.c) build left-nested trees without recursing here;
  // each link counts as one level so that evaluating and freeing the tree stays bounded too.
  struct ChainGuard {
    explicit ChainGuard(Parser& p) : parser(p) {}
    void link(Pos pos) {
      ++added;
      if (++parser.depth_ > kMaxSyntaxDepth)
        fail_at(pos, "template nests too deeply (more than " + std::to_string(kMaxSyntaxDepth) +
                         " levels of statements, brackets or operators)");
    }
    ~ChainGuard() { parser.depth_ -= added; }
    Parser& parser;
    uint32_t added = 0;
  };

  const Token& cur() const { return toks_[i_]; }
  const Token& peek(size_t k = 1) const {
    return toks_[i_ + k < toks_.size() ? i_ + k : toks_.size() - 1];
  }
  void advance() {
    if (i_ + 1 < toks_.size()) ++i_;
  }
  bool at_op(std::string_view op) const { return cur().type == Tok::kOp && cur().text == op; }
  bool at_name(std::string_view n) const { return cur().type == Tok::kName && cur().text == n; }
  bool skip_op(std::string_view op) {
    if (!at_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(std::string_view n) {
    if (!at_name(n)) return false;
    advance();
    return true;
  }

  static std::string describe(const Token& t) {
    switch (t.type) {
      case Tok::kData:
        return "template text";
      case Tok::kVarBegin:
        return "'{{'";
      case Tok::kVarEnd:
        return "'}}'";
      case Tok::kBlockBegin:
        return "'{%'";
      case Tok::kBlockEnd:
        return "'%}'";
      case Tok::kName:
        return "'" + t.text + "'";
      case Tok::kString:
        return "a string";
      case Tok::kInt:
      case Tok::kFloat:
        return "a number";
      case Tok::kOp:
        return "'" + t.text + "'";
      case Tok::kEof:
        return "end of template";
    }
    return "token";
  }

  [[noreturn]] void unexpected(const std::string& expected) const {
    fail_at(cur().pos, "expected " + expected + ", got " + describe(cur()));
  }

  void expect_op(std::string_view op) {
    if (!skip_op(op)) unexpected("'" + std::string(op) + "'");
  }
  std::string expect_name() {
    if (cur().type != Tok::kName) unexpected("a name");
    std::string n = cur().text;
    advance();
    return n;
  }
  void expect_block_end() {
    if (cur().type != Tok::kBlockEnd) unexpected("end of statement '%}'");
    advance();
  }

  int intern(const std::string& name) {
    auto [it, inserted] = symbol_ids_.emplace(name, static_cast<int>(symbols_.size()));
    if (inserted) symbols_.push_back(name);
    return it->second;
  }

  // --- statements ------------------------------------------------------------------------

  // Parses statements until one of end_tags opens a block ({% end_tag ...); the cursor is then
  // on that tag's name. At the top level (no end tags) it stops at the end of the template.
  Body parse_body(std::initializer_list<std::string_view> end_tags, Pos opened,
                  std::string_view what) {
    Body body;
    if (end_tags.size() != 0) open_blocks_.push_back(what);
    struct Pop {
      Parser& p;
      bool active;
      ~Pop() {
        if (active) p.open_blocks_.pop_back();
      }
    } pop{*this, end_tags.size() != 0};
    while (true) {
      const Token& t = cur();
      switch (t.type) {
        case Tok::kData:
          body.push_back(std::make_unique<TextStmt>(t.pos, t.text));
          advance();
          break;
        case Tok::kVarBegin: {
          advance();
          ExprPtr e = parse_tuple(true, false, {});
          if (cur().type != Tok::kVarEnd) unexpected("end of print statement '}}'");
          advance();
          body.push_back(std::make_unique<PrintStmt>(t.pos, std::move(e)));
          break;
        }
        case Tok::kBlockBegin: {
          const Token& name = peek();
          if (name.type == Tok::kName) {
            for (std::string_view end : end_tags) {
              if (name.text == end) {
                advance();
                return body;
              }
            }
          }
          advance();
          body.push_back(parse_statement(t.pos));
          break;
        }
        case Tok::kEof:
          if (end_tags.size() != 0)
            fail_at(opened, "unclosed '" + std::string(what) + "' block: expected '{% " +
                                std::string(*end_tags.begin()) +
                                " %}' before the end of the template");
          return body;
        default:
          unexpected("template text or a tag");
      }
    }
  }

  StmtPtr parse_statement(Pos pos) {
    DepthGuard guard(*this, pos);
    if (cur().type != Tok::kName) unexpected("a statement name");
    const std::string tag = cur().text;
    advance();
    if (tag == "if") return parse_if(pos);
    if (tag == "for") return parse_for(pos);
    if (tag == "set") return parse_set(pos);
    if (tag == "macro") return parse_macro(pos);
    if (tag == "call") return parse_call_block(pos);
    if (tag == "filter") return parse_filter_block(pos);
    if (tag == "with") return parse_with(pos);
    if (tag == "generation") {  // transformers' assistant-mask extension: render the body
      expect_block_end();
      auto s = std::make_unique<ScopeStmt>(pos);
      s->body = parse_body({"endgeneration"}, pos, "generation");
      finish_end_tag();
      return s;
    }
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail_at(pos, "'" + tag + "' outside of a for loop");
      expect_block_end();
      return std::make_unique<LoopControlStmt>(
          tag == "break" ? StmtKind::kBreak : StmtKind::kContinue, pos);
    }
    if (tag == "else" || tag == "elif" || tag.rfind("end", 0) == 0) {
      std::string message = "unexpected '{% " + tag + " %}'";
      if (!open_blocks_.empty())
        message += " (the open '" + std::string(open_blocks_.back()) + "' block needs '{% end" +
                   std::string(open_blocks_.back()) + " %}')";
      fail_at(pos, message);
    }
    static const char* kUnsupported[] = {"extends",    "block", "include", "import",    "from",
                                         "autoescape", "do",    "trans",   "pluralize", "debug"};
    for (const char* u : kUnsupported)
      if (tag == u) fail_at(pos, "the '" + tag + "' tag is not supported in chat templates");
    fail_at(pos, "unknown tag '" + tag + "'");
  }

  // After parse_body stopped on an end tag: consume the tag name and '%}'.
  void finish_end_tag() {
    advance();
    expect_block_end();
  }

  StmtPtr parse_if(Pos pos) {
    auto s = std::make_unique<IfStmt>(pos);
    ExprPtr cond = parse_tuple(true, false, {});
    expect_block_end();
    while (true) {
      Body body = parse_body({"elif", "else", "endif"}, pos, "if");
      s->branches.emplace_back(std::move(cond), std::move(body));
      const std::string tag = cur().text;
      advance();
      if (tag == "elif") {
        cond = parse_tuple(true, false, {});
        expect_block_end();
        continue;
      }
      if (tag == "else") {
        expect_block_end();
        s->otherwise = parse_body({"endif"}, pos, "if");
        advance();
      }
      expect_block_end();
      return s;
    }
  }

  Target parse_target(bool allow_namespace) {
    Target t;
    const bool parens = skip_op("(");
    const std::string first = expect_name();
    if (!parens && allow_namespace && at_op(".")) {
      advance();
      t.ns_name = first;
      t.ns_sym = intern(first);
      t.ns_attr = expect_name();
      return t;
    }
    t.names.push_back(intern(first));
    while (skip_op(",")) {
      t.is_tuple = true;
      if (cur().type != Tok::kName || at_name("in")) break;
      t.names.push_back(intern(expect_name()));
    }
    if (parens) {
      expect_op(")");
      t.is_tuple = true;
    }
    return t;
  }

  StmtPtr parse_for(Pos pos) {
    auto s = std::make_unique<ForStmt>(pos);
    s->target = parse_target(false);
    if (!skip_name("in")) unexpected("'in'");
    s->iterable = parse_tuple(false, false, {"recursive", "if"});
    if (skip_name("if")) s->condition = parse_expression(true);
    if (at_name("recursive")) fail_at(cur().pos, "recursive for loops are not supported");
    expect_block_end();
    ++loop_depth_;
    s->body = parse_body({"else", "endfor"}, pos, "for");
    --loop_depth_;
    if (cur().text == "else") {
      advance();
      expect_block_end();
      s->otherwise = parse_body({"endfor"}, pos, "for");
    }
    finish_end_tag();
    return s;
  }

  StmtPtr parse_set(Pos pos) {
    Target target = parse_target(true);
    if (skip_op("=")) {
      auto s = std::make_unique<SetStmt>(pos);
      s->target = std::move(target);
      s->value = parse_tuple(true, false, {});
      expect_block_end();
      return s;
    }
    if (target.ns_sym >= 0 || target.is_tuple) fail_at(pos, "a block set assigns to a single name");
    auto s = std::make_unique<SetBlockStmt>(pos);
    s->target = std::move(target);
    while (at_op("|")) s->filters.push_back(parse_filter(nullptr));
    if (s->filters.size() > kMaxSyntaxDepth) fail_at(pos, "too many filters");
    expect_block_end();
    s->body = parse_body({"endset"}, pos, "set");
    finish_end_tag();
    return s;
  }

  std::vector<MacroParam> parse_params() {
    std::vector<MacroParam> params;
    expect_op("(");
    while (!at_op(")")) {
      if (!params.empty()) expect_op(",");
      if (at_op(")")) break;
      MacroParam p;
      p.name = expect_name();
      p.sym = intern(p.name);
      if (skip_op("=")) {
        p.default_value = parse_expression(true);
      } else if (!params.empty() && params.back().default_value) {
        fail_at(cur().pos, "non-default argument '" + p.name + "' follows default argument");
      }
      params.push_back(std::move(p));
    }
    advance();
    return params;
  }

  StmtPtr parse_macro(Pos pos) {
    auto s = std::make_unique<MacroStmt>(pos);
    s->name = expect_name();
    s->sym = intern(s->name);
    s->params = parse_params();
    expect_block_end();
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    s->body = parse_body({"endmacro"}, pos, "macro");
    loop_depth_ = saved_loops;
    finish_end_tag();
    return s;
  }

  StmtPtr parse_call_block(Pos pos) {
    auto s = std::make_unique<CallBlockStmt>(pos);
    if (at_op("(")) s->caller_params = parse_params();
    ExprPtr call = parse_expression(true);
    if (call->kind != ExprKind::kCall) fail_at(call->pos, "'call' needs a macro call");
    s->call.reset(static_cast<CallExpr*>(call.release()));
    expect_block_end();
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    s->body = parse_body({"endcall"}, pos, "call");
    loop_depth_ = saved_loops;
    finish_end_tag();
    intern("caller");
    return s;
  }

  StmtPtr parse_filter_block(Pos pos) {
    auto s = std::make_unique<FilterBlockStmt>(pos);
    s->filters.push_back(parse_filter_name_and_args(nullptr, cur().pos));
    while (at_op("|")) s->filters.push_back(parse_filter(nullptr));
    expect_block_end();
    s->body = parse_body({"endfilter"}, pos, "filter");
    finish_end_tag();
    return s;
  }

  StmtPtr parse_with(Pos pos) {
    auto s = std::make_unique<WithStmt>(pos);
    while (cur().type != Tok::kBlockEnd) {
      if (!s->assignments.empty()) expect_op(",");
      Target t = parse_target(false);
      expect_op("=");
      s->assignments.emplace_back(std::move(t), parse_expression(true));
    }
    expect_block_end();
    s->body = parse_body({"endwith"}, pos, "with");
    finish_end_tag();
    return s;
  }

  // --- expressions -----------------------------------------------------------------------

  bool at_tuple_end(std::initializer_list<std::string_view> extra_end) const {
    const Token& t = cur();
    if (t.type == Tok::kVarEnd || t.type == Tok::kBlockEnd || t.type == Tok::kEof) return true;
    if (t.type == Tok::kOp && t.text == ")") return true;
    if (t.type == Tok::kName)
      for (std::string_view e : extra_end)
        if (t.text == e) return true;
    return false;
  }

  ExprPtr parse_tuple(bool with_condexpr, bool explicit_parens,
                      std::initializer_list<std::string_view> extra_end) {
    const Pos pos = cur().pos;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (at_tuple_end(extra_end)) break;
      items.push_back(parse_expression(with_condexpr));
      if (at_op(",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (items.size() == 1) return std::move(items[0]);
      if (!explicit_parens) unexpected("an expression");
    }
    auto t = std::make_unique<SeqExpr>(ExprKind::kTuple, pos);
    t->items = std::move(items);
    return t;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(*this, cur().pos);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    DepthGuard guard(*this, cur().pos);
    ExprPtr expr = parse_or();
    ChainGuard chain(*this);
    while (at_name("if")) {
      const Pos pos = cur().pos;
      chain.link(pos);
      advance();
      auto c = std::make_unique<CondExpr>(pos);
      c->then = std::move(expr);
      c->cond = parse_or();
      if (skip_name("else")) c->otherwise = parse_condexpr();
      expr = std::move(c);
    }
    return expr;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    ChainGuard chain(*this);
    while (at_name("or")) {
      const Pos pos = cur().pos;
      chain.link(pos);
      advance();
      left = std::make_unique<BinaryExpr>(ExprKind::kOr, pos, BinOp::kAdd, std::move(left),
                                          parse_and());
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    ChainGuard chain(*this);
    while (at_name("and")) {
      const Pos pos = cur().pos;
      chain.link(pos);
      advance();
      left = std::make_unique<BinaryExpr>(ExprKind::kAnd, pos, BinOp::kAdd, std::move(left),
                                          parse_not());
    }
    return left;
  }

  ExprPtr parse_not() {
    if (at_name("not")) {
      const Pos pos = cur().pos;
      DepthGuard guard(*this, pos);
      advance();
      return std::make_unique<UnaryExpr>(pos, UnOp::kNot, parse_not());
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const Pos pos = cur().pos;
    ExprPtr first = parse_math1();
    std::unique_ptr<CompareExpr> cmp;
    ChainGuard chain(*this);
    while (true) {
      chain.link(cur().pos);
      CmpOp op;
      if (cur().type == Tok::kOp &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
           cur().text == ">" || cur().text == ">=")) {
        const std::string& o = cur().text;
        op = o == "=="   ? CmpOp::kEq
             : o == "!=" ? CmpOp::kNe
             : o == "<"  ? CmpOp::kLt
             : o == "<=" ? CmpOp::kLe
             : o == ">"  ? CmpOp::kGt
                         : CmpOp::kGe;
        advance();
      } else if (at_name("in")) {
        op = CmpOp::kIn;
        advance();
      } else if (at_name("not") && peek().type == Tok::kName && peek().text == "in") {
        op = CmpOp::kNotIn;
        advance();
        advance();
      } else {
        break;
      }
      if (!cmp) cmp = std::make_unique<CompareExpr>(pos, std::move(first));
      cmp->rest.emplace_back(op, parse_math1());
    }
    if (cmp) return cmp;
    return first;
  }

  ExprPtr binary(Pos pos, BinOp op, ExprPtr l, ExprPtr r) {
    return std::make_unique<BinaryExpr>(ExprKind::kBinary, pos, op, std::move(l), std::move(r));
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    ChainGuard chain(*this);
    while (at_op("+") || at_op("-")) {
      const Pos pos = cur().pos;
      chain.link(pos);
      const BinOp op = cur().text == "+" ? BinOp::kAdd : BinOp::kSub;
      advance();
      left = binary(pos, op, std::move(left), parse_concat());
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    ChainGuard chain(*this);
    while (at_op("~")) {
      const Pos pos = cur().pos;
      chain.link(pos);
      advance();
      left = binary(pos, BinOp::kConcat, std::move(left), parse_math2());
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    ChainGuard chain(*this);
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const Pos pos = cur().pos;
      chain.link(pos);
      const std::string& o = cur().text;
      const BinOp op = o == "*"    ? BinOp::kMul
                       : o == "/"  ? BinOp::kDiv
                       : o == "//" ? BinOp::kFloorDiv
                                   : BinOp::kMod;
      advance();
      left = binary(pos, op, std::move(left), parse_pow());
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    ChainGuard chain(*this);
    while (at_op("**")) {
      const Pos pos = cur().pos;
      chain.link(pos);
      advance();
      left = binary(pos, BinOp::kPow, std::move(left), parse_unary(true));
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    const Pos pos = cur().pos;
    DepthGuard guard(*this, pos);
    ExprPtr node;
    if (at_op("-")) {
      advance();
      node = std::make_unique<UnaryExpr>(pos, UnOp::kNeg, parse_unary(false));
    } else if (at_op("+")) {
      advance();
      node = std::make_unique<UnaryExpr>(pos, UnOp::kPos, parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    const Pos pos = t.pos;
    switch (t.type) {
      case Tok::kName: {
        const std::string& n = t.text;
        ExprPtr e;
        if (n == "true" || n == "True") {
          e = std::make_unique<ConstExpr>(pos, Value::boolean(true));
        } else if (n == "false" || n == "False") {
          e = std::make_unique<ConstExpr>(pos, Value::boolean(false));
        } else if (n == "none" || n == "None") {
          e = std::make_unique<ConstExpr>(pos, Value::none());
        } else {
          e = std::make_unique<NameExpr>(pos, intern(n), n);
        }
        advance();
        return e;
      }
      case Tok::kString: {
        std::string s = t.text;
        advance();
        while (cur().type == Tok::kString) {  // adjacent literals concatenate
          s += cur().text;
          advance();
        }
        return std::make_unique<ConstExpr>(pos, Value::string(std::move(s)));
      }
      case Tok::kInt: {
        auto e = std::make_unique<ConstExpr>(pos, Value::integer(t.int_value));
        advance();
        return e;
      }
      case Tok::kFloat: {
        auto e = std::make_unique<ConstExpr>(pos, Value::number(t.float_value));
        advance();
        return e;
      }
      case Tok::kOp:
        if (t.text == "(") {
          advance();
          ExprPtr e = parse_tuple(true, true, {});
          expect_op(")");
          return e;
        }
        if (t.text == "[") {
          advance();
          auto l = std::make_unique<SeqExpr>(ExprKind::kList, pos);
          while (!at_op("]")) {
            if (!l->items.empty()) expect_op(",");
            if (at_op("]")) break;
            l->items.push_back(parse_expression(true));
          }
          advance();
          return l;
        }
        if (t.text == "{") {
          advance();
          auto d = std::make_unique<DictExpr>(pos);
          while (!at_op("}")) {
            if (!d->items.empty()) expect_op(",");
            if (at_op("}")) break;
            ExprPtr key = parse_expression(true);
            expect_op(":");
            d->items.emplace_back(std::move(key), parse_expression(true));
          }
          advance();
          return d;
        }
        break;
      default:
        break;
    }
    unexpected("an expression");
  }

  ExprPtr parse_postfix(ExprPtr node) {
    ChainGuard chain(*this);
    while (true) {
      chain.link(cur().pos);
      if (at_op(".") || at_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (at_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    ChainGuard chain(*this);
    while (true) {
      chain.link(cur().pos);
      if (at_op("|")) {
        node = parse_filter(std::move(node));
      } else if (at_name("is")) {
        node = parse_test(std::move(node));
      } else if (at_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const Pos pos = cur().pos;
    if (skip_op(".")) {
      if (cur().type == Tok::kName) {
        std::string attr = cur().text;
        advance();
        return std::make_unique<GetattrExpr>(pos, std::move(node), std::move(attr));
      }
      if (cur().type == Tok::kInt) {
        auto index = std::make_unique<ConstExpr>(cur().pos, Value::integer(cur().int_value));
        advance();
        return std::make_unique<GetitemExpr>(pos, std::move(node), std::move(index));
      }
      unexpected("an attribute name");
    }
    advance();  // [
    std::vector<ExprPtr> indices;
    std::unique_ptr<SliceExpr> slice;
    while (!at_op("]")) {
      if (!indices.empty() || slice) expect_op(",");
      ExprPtr start;
      if (!at_op(":")) {
        start = parse_expression(true);
        if (!at_op(":")) {
          indices.push_back(std::move(start));
          continue;
        }
      }
      if (slice || !indices.empty()) fail_at(pos, "multi-dimensional subscripts are not supported");
      advance();  // :
      slice = std::make_unique<SliceExpr>(pos);
      slice->start = std::move(start);
      if (!at_op("]") && !at_op(",") && !at_op(":")) slice->stop = parse_expression(true);
      if (skip_op(":") && !at_op("]") && !at_op(",")) slice->step = parse_expression(true);
    }
    advance();  // ]
    if (slice) {
      if (!indices.empty()) fail_at(pos, "multi-dimensional subscripts are not supported");
      slice->object = std::move(node);
      return slice;
    }
    if (indices.empty()) fail_at(pos, "empty subscript");
    ExprPtr index;
    if (indices.size() == 1) {
      index = std::move(indices[0]);
    } else {
      auto t = std::make_unique<SeqExpr>(ExprKind::kTuple, pos);
      t->items = std::move(indices);
      index = std::move(t);
    }
    return std::make_unique<GetitemExpr>(pos, std::move(node), std::move(index));
  }

  void parse_call_args(Arguments& args) {
    expect_op("(");
    while (!at_op(")")) {
      if (!args.positional.empty() || !args.keywords.empty()) expect_op(",");
      if (at_op(")")) break;
      if (at_op("*") || at_op("**")) fail_at(cur().pos, "*args and **kwargs are not supported");
      if (cur().type == Tok::kName && peek().type == Tok::kOp && peek().text == "=") {
        std::string key = cur().text;
        advance();
        advance();
        args.keywords.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!args.keywords.empty())
          fail_at(cur().pos, "positional argument follows keyword argument");
        args.positional.push_back(parse_expression(true));
      }
    }
    advance();
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto c = std::make_unique<CallExpr>(cur().pos, std::move(callee));
    parse_call_args(c->args);
    return c;
  }

  std::string parse_dotted_name() {
    std::string name = expect_name();
    while (at_op(".")) {
      advance();
      name += "." + expect_name();
    }
    return name;
  }

  std::unique_ptr<FilterExpr> parse_filter_name_and_args(ExprPtr operand, Pos pos) {
    const std::string name = parse_dotted_name();
    if (!has_filter(name)) fail_at(pos, "no filter named '" + name + "'");
    auto f = std::make_unique<FilterExpr>(pos, std::move(operand), name);
    if (at_op("(")) parse_call_args(f->args);
    return f;
  }

  std::unique_ptr<FilterExpr> parse_filter(ExprPtr operand) {
    const Pos pos = cur().pos;
    expect_op("|");
    return parse_filter_name_and_args(std::move(operand), pos);
  }

  ExprPtr parse_test(ExprPtr operand) {
    const Pos pos = cur().pos;
    advance();  // is
    const bool negated = skip_name("not");
    const std::string name = parse_dotted_name();
    if (!has_test(name)) fail_at(pos, "no test named '" + name + "'");
    auto t = std::make_unique<TestExpr>(pos, std::move(operand), name);
    t->negated = negated;
    const Token& c = cur();
    if (at_op("(")) {
      parse_call_args(t->args);
    } else if ((c.type == Tok::kName || c.type == Tok::kString || c.type == Tok::kInt ||
                c.type == Tok::kFloat || at_op("[") || at_op("{")) &&
               !at_name("else") && !at_name("or") && !at_name("and")) {
      if (at_name("is")) fail_at(c.pos, "tests cannot be chained with 'is'");
      t->args.positional.push_back(parse_postfix(parse_primary()));
    }
    return t;
  }

  std::vector<Token> toks_;
  size_t i_ = 0;
  uint32_t depth_ = 0;
  int loop_depth_ = 0;
  std::vector<std::string_view> open_blocks_;  // for error messages
  std::vector<std::string> symbols_;
  std::unordered_map<std::string, int> symbol_ids_;
};

}  // namespace

Program parse_template(std::string_view source) {
  return Parser(tokenize(source)).run();
}

}  // namespace hearth::jinja
