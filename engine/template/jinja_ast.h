// The parsed form of a chat template: expression and statement nodes. Names are interned into
// symbol ids at parse time so that rendering looks variables up by index.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/template/jinja_value.h"

namespace hearth::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind : uint8_t {
  kConst,
  kName,
  kList,
  kTuple,
  kDict,
  kGetattr,
  kGetitem,
  kSlice,
  kCall,
  kFilter,
  kTest,
  kUnary,
  kBinary,
  kAnd,
  kOr,
  kCompare,
  kCondExpr,
};

enum class BinOp : uint8_t { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kConcat };
enum class UnOp : uint8_t { kNeg, kPos, kNot };
enum class CmpOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

struct Expr {
  Expr(ExprKind k, Pos p) : kind(k), pos(p) {}
  virtual ~Expr() = default;
  ExprKind kind;
  Pos pos;
};

struct ConstExpr final : Expr {
  ConstExpr(Pos p, Value v) : Expr(ExprKind::kConst, p), value(std::move(v)) {}
  Value value;
};

struct NameExpr final : Expr {
  NameExpr(Pos p, int s, std::string n) : Expr(ExprKind::kName, p), sym(s), name(std::move(n)) {}
  int sym;
  std::string name;
};

// kList and kTuple.
struct SeqExpr final : Expr {
  SeqExpr(ExprKind k, Pos p) : Expr(k, p) {}
  std::vector<ExprPtr> items;
};

struct DictExpr final : Expr {
  explicit DictExpr(Pos p) : Expr(ExprKind::kDict, p) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};

struct GetattrExpr final : Expr {
  GetattrExpr(Pos p, ExprPtr o, std::string a)
      : Expr(ExprKind::kGetattr, p), object(std::move(o)), attr(std::move(a)) {}
  ExprPtr object;
  std::string attr;
};

struct GetitemExpr final : Expr {
  GetitemExpr(Pos p, ExprPtr o, ExprPtr i)
      : Expr(ExprKind::kGetitem, p), object(std::move(o)), index(std::move(i)) {}
  ExprPtr object;
  ExprPtr index;
};

struct SliceExpr final : Expr {
  explicit SliceExpr(Pos p) : Expr(ExprKind::kSlice, p) {}
  ExprPtr object;
  ExprPtr start, stop, step;  // each may be null
};

struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
};

struct CallExpr final : Expr {
  CallExpr(Pos p, ExprPtr c) : Expr(ExprKind::kCall, p), callee(std::move(c)) {}
  ExprPtr callee;
  Arguments args;
};

// A filter application; operand is null inside {% filter %} and {% set x | f %}.
struct FilterExpr final : Expr {
  FilterExpr(Pos p, ExprPtr o, std::string n)
      : Expr(ExprKind::kFilter, p), operand(std::move(o)), name(std::move(n)) {}
  ExprPtr operand;
  std::string name;
  Arguments args;
};

struct TestExpr final : Expr {
  TestExpr(Pos p, ExprPtr o, std::string n)
      : Expr(ExprKind::kTest, p), operand(std::move(o)), name(std::move(n)) {}
  ExprPtr operand;
  std::string name;
  Arguments args;
  bool negated = false;
};

struct UnaryExpr final : Expr {
  UnaryExpr(Pos p, UnOp o, ExprPtr x) : Expr(ExprKind::kUnary, p), op(o), operand(std::move(x)) {}
  UnOp op;
  ExprPtr operand;
};

// kBinary (with op), kAnd and kOr.
struct BinaryExpr final : Expr {
  BinaryExpr(ExprKind k, Pos p, BinOp o, ExprPtr l, ExprPtr r)
      : Expr(k, p), op(o), left(std::move(l)), right(std::move(r)) {}
  BinOp op;
  ExprPtr left, right;
};

// Chained comparisons: a < b < c.
struct CompareExpr final : Expr {
  CompareExpr(Pos p, ExprPtr f) : Expr(ExprKind::kCompare, p), first(std::move(f)) {}
  ExprPtr first;
  std::vector<std::pair<CmpOp, ExprPtr>> rest;
};

struct CondExpr final : Expr {
  explicit CondExpr(Pos p) : Expr(ExprKind::kCondExpr, p) {}
  ExprPtr cond, then, otherwise;  // otherwise may be null
};

enum class StmtKind : uint8_t {
  kText,
  kPrint,
  kIf,
  kFor,
  kSet,
  kSetBlock,
  kMacro,
  kCallBlock,
  kFilterBlock,
  kWith,
  kScope,  // a body rendered as it is ({% generation %})
  kBreak,
  kContinue,
};

struct Stmt {
  Stmt(StmtKind k, Pos p) : kind(k), pos(p) {}
  virtual ~Stmt() = default;
  StmtKind kind;
  Pos pos;
};

struct TextStmt final : Stmt {
  TextStmt(Pos p, std::string t) : Stmt(StmtKind::kText, p), text(std::move(t)) {}
  std::string text;
};

struct PrintStmt final : Stmt {
  PrintStmt(Pos p, ExprPtr e) : Stmt(StmtKind::kPrint, p), expr(std::move(e)) {}
  ExprPtr expr;
};

struct IfStmt final : Stmt {
  explicit IfStmt(Pos p) : Stmt(StmtKind::kIf, p) {}
  std::vector<std::pair<ExprPtr, Body>> branches;  // if and elifs
  Body otherwise;
};

// An assignment target: a name, a tuple of names, or namespace.attr.
struct Target {
  std::vector<int> names;  // one or more symbols
  bool is_tuple = false;
  int ns_sym = -1;  // for ns.attr
  std::string ns_attr;
  std::string ns_name;
};

struct ForStmt final : Stmt {
  explicit ForStmt(Pos p) : Stmt(StmtKind::kFor, p) {}
  Target target;
  ExprPtr iterable;
  ExprPtr condition;  // may be null
  Body body;
  Body otherwise;
};

struct SetStmt final : Stmt {
  explicit SetStmt(Pos p) : Stmt(StmtKind::kSet, p) {}
  Target target;
  ExprPtr value;
};

struct SetBlockStmt final : Stmt {
  explicit SetBlockStmt(Pos p) : Stmt(StmtKind::kSetBlock, p) {}
  Target target;
  std::vector<std::unique_ptr<FilterExpr>> filters;
  Body body;
};

struct MacroParam {
  int sym;
  std::string name;
  ExprPtr default_value;  // may be null
};

struct MacroStmt final : Stmt {
  explicit MacroStmt(Pos p) : Stmt(StmtKind::kMacro, p) {}
  int sym = -1;
  std::string name;
  std::vector<MacroParam> params;
  Body body;
};

struct CallBlockStmt final : Stmt {
  explicit CallBlockStmt(Pos p) : Stmt(StmtKind::kCallBlock, p) {}
  std::vector<MacroParam> caller_params;
  std::unique_ptr<CallExpr> call;
  Body body;
};

struct FilterBlockStmt final : Stmt {
  explicit FilterBlockStmt(Pos p) : Stmt(StmtKind::kFilterBlock, p) {}
  std::vector<std::unique_ptr<FilterExpr>> filters;
  Body body;
};

struct WithStmt final : Stmt {
  explicit WithStmt(Pos p) : Stmt(StmtKind::kWith, p) {}
  std::vector<std::pair<Target, ExprPtr>> assignments;
  Body body;
};

struct ScopeStmt final : Stmt {
  explicit ScopeStmt(Pos p) : Stmt(StmtKind::kScope, p) {}
  Body body;
};

struct LoopControlStmt final : Stmt {
  LoopControlStmt(StmtKind k, Pos p) : Stmt(k, p) {}
};

// A parsed template and its symbol table.
struct Program {
  Body body;
  std::vector<std::string> symbols;  // id -> name
};

}  // namespace hearth::jinja
