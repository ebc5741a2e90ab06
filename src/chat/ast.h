// The parsed template: expression and statement nodes, each with its line and column.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace moex::chat {

enum class ExprKind {
  kLiteral,  // literal
  kName,     // name
  kList,     // args
  kTuple,    // args
  kDict,     // args: key, value, key, value...
  kGetattr,  // args[0] . name
  kGetitem,  // args[0] [ args[1] ]
  kSlice,    // args[0] [ args[1] : args[2] : args[3] ] (null parts allowed)
  kCall,     // args[0] ( args[1..], kwargs )
  kFilter,   // args[0] | name ( args[1..], kwargs ); args[0] null in a filter block
  kTest,     // args[0] is [not] name ( args[1..] ); negated
  kUnary,    // name: "-", "+", "not"; args[0]
  kBinary,   // name: "+", "-", "*", "/", "//", "%", "**", "~"; args[0], args[1]
  kAnd,      // args[0], args[1]
  kOr,       // args[0], args[1]
  kCompare,  // args[0] then (ops[i], args[i+1])...: "==", "!=", "<", "<=", ">", ">=", "in", "notin"
  kCondExpr,  // args[1] if args[0] else args[2] (args[2] null: undefined)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind;
  int line = 0, col = 0;
  Value literal;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;  // kCompare
  bool negated = false;          // kTest
  int height = 1;                // levels of this tree (a leaf is 1), at most kMaxExpressionDepth
};

enum class NodeKind {
  kText,         // text
  kPrint,        // expr
  kIf,           // branches (cond, body)..., else_body
  kFor,          // targets in expr [if expr2] body else else_body
  kSet,          // targets (or ns_attr on targets[0]) = expr
  kSetBlock,     // targets[0] = rendered body, through filters (expr: a kFilter chain or null)
  kMacro,        // text = name; params, defaults (null: none); body
  kCallBlock,    // expr = the call; params/defaults of caller; body
  kFilterBlock,  // expr = the kFilter chain; body
  kBreak,
  kContinue,
  kScope,  // body (generation blocks: rendered as is)
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  NodeKind kind;
  int line = 0, col = 0;
  std::string text;
  std::string ns_attr;  // kSet: `set ns.attr = ...`
  ExprPtr expr, expr2;
  std::vector<std::string> targets;
  bool target_tuple = false;  // `for a, in x` / `set a, b = ...`
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body, else_body;
};

}  // namespace moex::chat
