// The evaluator: one Renderer per render() walks the parsed template with jinja2's scoping
// (a for loop iteration, a macro call and a caller() body get their own scope; if does not).
// Its work is charged to the active RenderBudget (budget.h).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/ast.h"
#include "chat/builtins.h"

namespace moex::chat {

struct Scope {
  std::shared_ptr<Scope> parent;
  std::vector<std::pair<std::string, Value>> vars;
  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value v);
};

enum class Flow { kNormal, kBreak, kContinue };

class Renderer {
 public:
  Renderer(const std::string& origin, Value globals);
  std::string render(const Body& body);

  Value eval(const Expr& e);  // errors come out as moex::Error with e's line:col
  Flow exec_body(const Body& body);

 private:
  Value eval_inner(const Expr& e);
  Value eval_call(const Expr& e);
  Value eval_compare(const Expr& e);
  Value apply_block_filters(const Expr& chain, Value input);
  CallArgs eval_args(const Expr& e, size_t first);
  Flow exec(const Node& n);
  Flow exec_for(const Node& n);
  void exec_set(const Node& n);
  void assign(const Node& n, const Value& v);
  Value make_macro(const Node& n);
  std::weak_ptr<Scope> weak_scope() const;
  std::shared_ptr<Scope> closure_or_root(const std::weak_ptr<Scope>& closure) const;
  Value call_macro(const Node& def, const std::shared_ptr<Scope>& closure, CallArgs& args);
  std::string capture(const Body& body, std::shared_ptr<Scope> scope);
  void write(const std::string& s);

  // One level of the evaluator's recursion (eval or exec), refused past kMaxEvalDepth.
  struct Nest {
    explicit Nest(Renderer* r);
    ~Nest() { --r->eval_depth_; }
    Renderer* r;
  };

  const std::string& origin_;
  std::shared_ptr<Scope> scope_, root_;
  std::string* out_ = nullptr;
  int call_depth_ = 0;
  int eval_depth_ = 0;
  Value block_input_;  // the text a {% filter %} or {% set x | f %} block passes to its chain
};

}  // namespace moex::chat
