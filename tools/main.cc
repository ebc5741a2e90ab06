// The `moex` command: parses the subcommand and runs it; bad input exits with code 2.
#include <cstdio>
#include <map>

#include "core/error.h"
#include "tools/command.h"

namespace moex::tools {
std::vector<CommandInfo>& command_registry() {
  static std::vector<CommandInfo> r;
  return r;
}
}  // namespace moex::tools

int main(int argc, char** argv) {
  using namespace moex::tools;
  CLI::App app{"moex: mixture-of-experts inference engine"};
  app.require_subcommand(1);
  std::map<CLI::App*, std::function<int()>> runners;
  for (auto& c : command_registry()) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    runners[sub] = c.setup(*sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    for (auto& [sub, run] : runners)
      if (sub->parsed()) return run();
  } catch (const moex::Error& e) {
    std::fprintf(stderr, "moex: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "moex: error: out of memory\n");
    return 3;
  }
  return 0;
}
