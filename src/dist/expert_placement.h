// Which process (rank) of an expert-parallel run owns each routed expert of each MoE layer.
// Every rank holds the non-expert weights; a rank reads and runs only the experts it owns.
// Default: each layer's experts split evenly into contiguous runs (rank r owns experts
// [r*E/R, (r+1)*E/R)), so a stacked checkpoint's owned rows are one range per projection.
// A placement file overrides it (docs/expert_parallel.md):
//   {"experts": [owner of expert 0, owner of expert 1, ...],     every MoE layer
//    "layers": {"5": [owner of expert 0, ...], ...}}             optional, per layer
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moex::dist {

class ExpertPlacement {
 public:
  // Contiguous even split; ranks in [1, experts] (a rank without experts is refused).
  static ExpertPlacement even(int ranks, int64_t layers, int64_t experts);
  // From a placement file; moex::Error naming the file and field for a malformed one, an owner
  // outside [0, ranks), a list of the wrong length or a layer out of range. A rank may own no
  // expert of a layer (it then adds nothing there).
  static ExpertPlacement from_file(const std::string& path, int ranks, int64_t layers,
                                   int64_t experts);

  int ranks() const { return ranks_; }
  int64_t experts() const { return experts_; }
  int owner(int64_t layer, int64_t expert) const {
    return owner_[size_t(layer * experts_ + expert)];
  }
  // [experts]: 1 where `rank` owns the expert in `layer`.
  std::vector<uint8_t> owned_mask(int rank, int64_t layer) const;
  // How many experts `rank` owns in `layer`.
  int64_t owned_count(int rank, int64_t layer) const;
  // One line for logs: "even split, 2 ranks: rank 0 experts 0-31, rank 1 experts 32-63" or
  // "placement file F".
  const std::string& description() const { return description_; }

 private:
  int ranks_ = 1;
  int64_t layers_ = 0, experts_ = 0;
  std::vector<int32_t> owner_;  // [layers][experts]
  std::string description_;
};

}  // namespace moex::dist
