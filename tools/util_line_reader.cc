// LineReader: GNU readline on a terminal (MOEX_HAVE_READLINE), plain lines otherwise.
#include "tools/util_line_reader.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#if MOEX_HAVE_READLINE
#include <readline/history.h>
#include <readline/readline.h>
#endif

namespace moex::tools {
namespace {

std::string trim_line_end(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n')) s.pop_back();
  return s;
}

class PlainReader : public LineReader {
 public:
  explicit PlainReader(bool tty) : tty_(tty) {}
  std::optional<std::string> read_turn(const std::string& prompt) override {
    if (tty_) std::cout << prompt << std::flush;
    std::optional<std::string> first = next();
    if (!first) return std::nullopt;
    return read_multiline(*first, [this] { return next(); });
  }
  const char* name() const override { return "plain lines"; }

 private:
  std::optional<std::string> next() {
    std::string line;
    if (!std::getline(std::cin, line)) return std::nullopt;
    return trim_line_end(line);
  }
  bool tty_;
};

#if MOEX_HAVE_READLINE
// One readline() call; nullopt at end of input (Ctrl-D on an empty line).
std::optional<std::string> readline_once(const char* prompt) {
  char* raw = readline(prompt);
  if (raw == nullptr) return std::nullopt;
  std::string line(raw);
  std::free(raw);
  return trim_line_end(line);
}

class ReadlineReader : public LineReader {
 public:
  ReadlineReader() {
    rl_readline_name = "moex";  // `$if moex` in ~/.inputrc
    rl_instream = stdin;
    rl_outstream = stdout;
    rl_initialize();  // reads ~/.inputrc now, so that the setting below comes after it
    // On by default since readline 8.1; set so an ~/.inputrc that turned it off for the
    // shell does not make a pasted block into one turn per line here.
    rl_variable_bind("enable-bracketed-paste", "on");
    using_history();
  }
  std::optional<std::string> read_turn(const std::string& prompt) override {
    std::optional<std::string> first = readline_once(prompt.c_str());
    if (!first) return std::nullopt;
    std::optional<std::string> turn =
        read_multiline(*first, [] { return readline_once("... "); });
    if (turn && !turn->empty()) add_history(turn->c_str());
    return turn;
  }
  const char* name() const override { return "readline"; }
};
#endif

}  // namespace

bool is_block_fence(const std::string& line) {
  const size_t a = line.find_first_not_of(" \t");
  if (a == std::string::npos) return false;
  const size_t b = line.find_last_not_of(" \t");
  return line.compare(a, b - a + 1, "\"\"\"") == 0;
}

std::unique_ptr<LineReader> open_stdin_reader() {
  const bool tty = isatty(STDIN_FILENO) != 0;
#if MOEX_HAVE_READLINE
  if (tty && isatty(STDOUT_FILENO)) return std::make_unique<ReadlineReader>();
#endif
  return std::make_unique<PlainReader>(tty);
}

}  // namespace moex::tools
