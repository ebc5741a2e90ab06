// A chat answer built from the output parsers' events (generate/output_parser.h): the whole
// message of a non-streaming response (content, reasoning_content, tool_calls with ids) and
// the OpenAI delta objects a stream sends for the same events.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "generate/output_parser.h"

namespace moex::serve {

struct ToolCallOut {
  std::string id;  // "call_" and 24 random hex digits
  std::string name;
  std::string arguments;  // JSON text
  // Malformed once streamed (kToolCallAbandon): its text became content; left out of the
  // message, its index not reused in the stream.
  bool abandoned = false;
};

class ChatAnswer {
 public:
  // Takes the events and returns the stream's deltas for them, in order: {"content"},
  // {"reasoning_content"}, and for a call {"tool_calls": [{"index", "id", "type", "function":
  // {"name", "arguments": ""}}]} then {"tool_calls": [{"index", "function": {"arguments"}}]}
  // per piece (the index stable, counted from 0 over the answer's calls); an abandoned call's
  // text as {"content"}.
  std::vector<nlohmann::ordered_json> add(const generate::OutputEvents& events);

  // The message of a chat.completion: role, content (null when only calls were made),
  // reasoning_content (when any), tool_calls (when any), refusal.
  nlohmann::ordered_json message() const;
  bool has_tool_calls() const;  // calls not abandoned
  const std::string& content() const { return content_; }
  const std::string& reasoning() const { return reasoning_; }
  const std::vector<ToolCallOut>& tool_calls() const { return calls_; }

 private:
  std::string content_, reasoning_;
  std::vector<ToolCallOut> calls_;
};

// The finish_reason of a chat answer: "tool_calls" when a call was made and generation ended
// at the model's stop, else `reason`.
std::string chat_finish_reason(const ChatAnswer& a, const std::string& reason);

std::string new_tool_call_id();

}  // namespace moex::serve
