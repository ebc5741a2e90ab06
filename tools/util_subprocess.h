// Runs a child process (argv, no shell), capturing its stdout; stderr passes through.
#pragma once

#include <string>
#include <vector>

namespace moex::tools {

struct ProcessResult {
  int exit_code = -1;      // exit status, or 128+signal when killed
  std::string stdout_text;
};

// Throws moex::Error if the process cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv);

// Path of the running moex executable (/proc/self/exe).
std::string self_exe_path();

}  // namespace moex::tools
