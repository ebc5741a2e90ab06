// Subcommand registry for the `moex` tool: each tools/cmd_<name>.cc registers itself with
// MOEX_REGISTER_COMMAND, so adding a subcommand touches no shared file.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace moex::tools {

// setup(sub) adds options to the CLI11 subcommand and returns the function that runs it
// (returning the process exit code). Any exception thrown by it (moex::Error for bad input)
// ends as "moex: error: ..." with exit code 2 (main.cc).
using CommandSetup = std::function<std::function<int()>(CLI::App& sub)>;

struct CommandInfo {
  std::string name;
  std::string help;
  CommandSetup setup;
};

std::vector<CommandInfo>& command_registry();

struct CommandRegistrar {
  CommandRegistrar(std::string name, std::string help, CommandSetup setup) {
    command_registry().push_back({std::move(name), std::move(help), std::move(setup)});
  }
};

#define MOEX_REGISTER_COMMAND(ident, name, help, setup) \
  static ::moex::tools::CommandRegistrar moex_command_##ident(name, help, setup)

}  // namespace moex::tools
