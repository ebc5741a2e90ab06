// Progress lines on stderr for the slow, silent parts of a command (opening a checkpoint maps
// and faults in every weight page): what is being loaded, how big, and how long it took.
#pragma once

#include <string>

namespace moex::tools {

// Prints "CMD: loading DIR (N files, X GB) ..." when made and "CMD: loaded DIR in T s" on
// done(); nothing on stdout, so `-o json` output stays clean.
class LoadProgress {
 public:
  LoadProgress(std::string command, std::string dir);
  void done() const;

 private:
  std::string command_, dir_;
  double start_ = 0;
};

}  // namespace moex::tools
