// What `moex chat` reads a user's turn with. On a terminal, GNU readline where the build has it:
// line editing, history (Up / Down), no 4 KB line limit (the terminal's canonical mode cut long
// pastes), and bracketed paste, so that a pasted block arrives as one turn with its newlines.
// Typed text spans lines between two lines of `"""`. Without a terminal (a pipe, a file) or
// without readline, plain lines from stdin.
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace moex::tools {

class LineReader {
 public:
  virtual ~LineReader() = default;
  // The next turn's text (nullopt at the end of input). `prompt` is shown on a terminal only.
  virtual std::optional<std::string> read_turn(const std::string& prompt) = 0;
  virtual const char* name() const = 0;  // "readline" or "plain lines", for -v
};

// A reader for stdin: readline when stdin and stdout are terminals and the build has it.
std::unique_ptr<LineReader> open_stdin_reader();

// True for a line that is `"""` (spaces and tabs around allowed).
bool is_block_fence(const std::string& line);

// The multi-line rule, shared by both readers: `first` is a line just read; when it is a fence,
// lines are read with `next` until the next fence, and the turn is those lines joined by
// newlines (end of input ends it too). Otherwise the turn is `first` itself.
template <typename NextLine>
std::optional<std::string> read_multiline(std::string first, NextLine&& next) {
  if (!is_block_fence(first)) return first;
  std::string text;
  bool any = false;
  for (std::optional<std::string> l = next(); l; l = next()) {
    if (is_block_fence(*l)) return text;
    if (any) text += '\n';
    text += *l;
    any = true;
  }
  return text;
}

}  // namespace moex::tools
