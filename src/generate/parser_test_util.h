// Test support for output parsers: a canned model output pushed whole, one byte at a time and
// split in two at every byte boundary must give the same events (text events merged).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "generate/output_parser.h"

namespace moex::generate::testing {

using Kind = OutputEvent::Kind;
using MakeChain = std::function<OutputParserChain()>;

// Events with adjacent text of one kind merged (a parser may split text anywhere).
inline OutputEvents merged(const OutputEvents& in) {
  OutputEvents out;
  for (const OutputEvent& e : in) {
    if (e.kind == Kind::kContent || e.kind == Kind::kReasoning ||
        e.kind == Kind::kToolCallArguments)
      append_text(out, e.kind, e.text);
    else
      out.push_back(e);
  }
  return out;
}

inline OutputEvents run_pieces(OutputParserChain chain, const std::vector<std::string>& pieces) {
  OutputEvents all;
  for (const std::string& p : pieces)
    for (OutputEvent& e : chain.push(p)) all.push_back(std::move(e));
  for (OutputEvent& e : chain.flush()) all.push_back(std::move(e));
  return merged(all);
}

// The events of `text` whole; checks that every split gives the same.
inline OutputEvents parse_all_splits(const MakeChain& make, const std::string& text) {
  const OutputEvents whole = run_pieces(make(), {text});
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  EXPECT_EQ(run_pieces(make(), bytes), whole) << "one byte at a time: " << text;
  for (size_t i = 1; i < text.size(); ++i)
    EXPECT_EQ(run_pieces(make(), {text.substr(0, i), text.substr(i)}), whole)
        << "split at " << i << ": " << text;
  return whole;
}

inline OutputEvent content(std::string s) { return {Kind::kContent, std::move(s)}; }
inline OutputEvent reasoning(std::string s) { return {Kind::kReasoning, std::move(s)}; }
inline OutputEvents call(std::string name, std::string args) {
  return {{Kind::kToolCallBegin, std::move(name)},
          {Kind::kToolCallArguments, std::move(args)},
          {Kind::kToolCallEnd, {}}};
}
inline OutputEvents cat(std::initializer_list<OutputEvents> parts) {
  OutputEvents out;
  for (const OutputEvents& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace moex::generate::testing
