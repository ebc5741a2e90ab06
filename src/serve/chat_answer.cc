// ChatAnswer (see chat_answer.h).
#include "serve/chat_answer.h"

#include <random>

namespace moex::serve {

using ojson = nlohmann::ordered_json;
using Kind = generate::OutputEvent::Kind;

std::string new_tool_call_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += "0123456789abcdef"[rng() & 15];
  return id;
}

std::vector<ojson> ChatAnswer::add(const generate::OutputEvents& events) {
  std::vector<ojson> deltas;
  for (const generate::OutputEvent& e : events) {
    const int index = int(calls_.size()) - 1;
    switch (e.kind) {
      case Kind::kContent:
        content_ += e.text;
        deltas.push_back({{"content", e.text}});
        break;
      case Kind::kReasoning:
        reasoning_ += e.text;
        deltas.push_back({{"reasoning_content", e.text}});
        break;
      case Kind::kToolCallBegin:
        calls_.push_back({new_tool_call_id(), e.text, "", false});
        deltas.push_back({{"tool_calls", ojson::array({{{"index", index + 1},
                                                         {"id", calls_.back().id},
                                                         {"type", "function"},
                                                         {"function",
                                                          {{"name", e.text}, {"arguments", ""}}}}})}});
        break;
      case Kind::kToolCallArguments:
        if (index < 0) break;  // a parser never sends arguments outside a call
        calls_.back().arguments += e.text;
        deltas.push_back({{"tool_calls", ojson::array({{{"index", index},
                                                         {"function", {{"arguments", e.text}}}}})}});
        break;
      case Kind::kToolCallEnd:
        break;
      case Kind::kToolCallAbandon:  // the open call was malformed: its text is content
        if (index >= 0) calls_.back().abandoned = true;
        content_ += e.text;
        deltas.push_back({{"content", e.text}});
        break;
    }
  }
  return deltas;
}

ojson ChatAnswer::message() const {
  ojson m = {{"role", "assistant"}};
  m["content"] = content_.empty() && has_tool_calls() ? ojson(nullptr) : ojson(content_);
  if (!reasoning_.empty()) m["reasoning_content"] = reasoning_;
  if (has_tool_calls()) {
    ojson calls = ojson::array();
    for (const ToolCallOut& c : calls_)
      if (!c.abandoned)
        calls.push_back({{"id", c.id},
                       {"type", "function"},
                       {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    m["tool_calls"] = std::move(calls);
  }
  m["refusal"] = nullptr;
  return m;
}

bool ChatAnswer::has_tool_calls() const {
  for (const ToolCallOut& c : calls_)
    if (!c.abandoned) return true;
  return false;
}

std::string chat_finish_reason(const ChatAnswer& a, const std::string& reason) {
  return a.has_tool_calls() && reason == "stop" ? "tool_calls" : reason;
}

}  // namespace moex::serve
