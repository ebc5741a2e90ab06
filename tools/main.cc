// The `moex` command: parses the subcommand and runs it. Bad input, and any other error a
// command throws, ends with "moex: error: ..." and exit code 2 (3: out of memory), never abort.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>

#include "core/error.h"
#include "core/sysinfo.h"
#include "tools/command.h"
#include "tools/util_expert_parallel.h"
#include "tools/util_flags.h"

namespace moex::tools {
std::vector<CommandInfo>& command_registry() {
  static std::vector<CommandInfo> r;
  return r;
}
}  // namespace moex::tools

namespace {

// `moex frobnicate`: name the mistyped command and the nearest real one, before CLI11's
// generic "arguments were not expected".
bool reject_unknown_command(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-' || argv[1][0] == '\0') return false;
  const std::string given = argv[1];
  std::vector<std::string> names;
  for (const auto& c : moex::tools::command_registry()) names.push_back(c.name);
  for (const auto& n : names)
    if (n == given) return false;
  const std::string near = moex::tools::nearest_word(given, names);
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  std::fprintf(stderr, "moex: error: unknown command '%s'%s; the commands are: %s\n", given.c_str(),
               near.empty() ? "" : (std::string("; did you mean '") + near + "'?").c_str(),
               all.c_str());
  return true;
}

int report(const char* what, int exit_code = 2) {
  // One rank of an expert-parallel run stops them all (and says which rank failed).
  moex::tools::expert_parallel_fatal(what, exit_code);
  std::fprintf(stderr, "moex: error: %s\n", what);
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace moex::tools;
  try {
    CLI::App app{"moex: mixture-of-experts inference engine"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "moex " + moex::moex_commit());
    std::map<CLI::App*, std::function<int()>> runners;
    for (auto& c : command_registry()) {
      CLI::App* sub = app.add_subcommand(c.name, c.help);
      runners[sub] = c.setup(*sub);
    }
    if (reject_unknown_command(argc, argv)) return 2;
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      const int rc = app.exit(e);
      return rc == 0 ? 0 : 2;
    }
    for (auto& [sub, run] : runners)
      if (sub->parsed()) {
        const int rc = run();
        expert_parallel_finish();
        return rc;
      }
  } catch (const moex::Error& e) {
    return report(e.what());
  } catch (const std::bad_alloc&) {
    return report("out of memory", 3);
  } catch (const std::filesystem::filesystem_error& e) {
    return report(e.what());  // names the path(s) and the system's reason
  } catch (const std::system_error& e) {
    // Thread creation (the worker pool) and other system calls that C++ reports this way.
    const std::string what = e.what(), code = e.code().message();
    const std::string line =
        what + (what.find(code) == std::string::npos ? " (" + code + ")" : "") +
        (e.code() == std::errc::resource_unavailable_try_again
             ? "; the system refused another thread or more memory: try a smaller --threads"
             : "");
    return report(line.c_str());
  } catch (const std::exception& e) {
    return report(e.what());
  } catch (...) {
    return report("unknown exception");
  }
  return 0;
}
