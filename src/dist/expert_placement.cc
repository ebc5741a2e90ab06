// ExpertPlacement: the even split and the placement file.
#include "dist/expert_placement.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_read.h"
#include "core/strict_parse.h"

namespace moex::dist {

ExpertPlacement ExpertPlacement::even(int ranks, int64_t layers, int64_t experts) {
  if (experts < 1) fail("expert parallelism: the model has no routed experts");
  if (ranks < 1 || ranks > experts)
    fail("expert parallelism: ", ranks, " ranks for ", experts,
         " experts; each rank must own at least one expert (ranks 1..", experts, ")");
  ExpertPlacement p;
  p.ranks_ = ranks;
  p.layers_ = layers;
  p.experts_ = experts;
  p.owner_.resize(size_t(layers * experts));
  for (int64_t l = 0; l < layers; ++l)
    for (int64_t e = 0; e < experts; ++e)
      p.owner_[size_t(l * experts + e)] = int32_t(e * ranks / experts);
  p.description_ = str_cat("even split over ", ranks, " ranks:");
  for (int r = 0; r < ranks; ++r) {
    const int64_t first = (int64_t(r) * experts + ranks - 1) / ranks;
    const int64_t last = (int64_t(r + 1) * experts + ranks - 1) / ranks - 1;
    p.description_ += str_cat(r ? "," : "", " rank ", r, " experts ", first, "-", last);
  }
  return p;
}

namespace {

void read_owner_list(const nlohmann::json& j, const std::string& where, int ranks,
                     int64_t experts, int32_t* out) {
  if (!j.is_array() || int64_t(j.size()) != experts)
    fail(where, ": expected a list of ", experts, " ranks (one owner per expert), got ",
         j.is_array() ? str_cat(j.size(), " entries") : std::string(j.type_name()));
  for (int64_t e = 0; e < experts; ++e) {
    const nlohmann::json& v = j[size_t(e)];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= ranks)
      fail(where, "[", e, "]: expected a rank in [0, ", ranks, "), got ", v.dump());
    out[e] = int32_t(v.get<int64_t>());
  }
}

}  // namespace

ExpertPlacement ExpertPlacement::from_file(const std::string& path, int ranks, int64_t layers,
                                           int64_t experts) {
  ExpertPlacement p = even(ranks, layers, experts);
  const nlohmann::json j = nlohmann::json::parse(read_small_file(path, int64_t(64) << 20, "expert placement file"),
                                                 nullptr, false);
  if (j.is_discarded()) fail(path, ": not valid JSON (truncated or malformed)");
  if (!j.is_object()) fail(path, ": expected a JSON object {\"experts\": [...], \"layers\": {...}}");
  for (const auto& [key, value] : j.items())
    if (key != "experts" && key != "layers")
      fail(path, ": unknown field '", key, "' (expected \"experts\" and/or \"layers\")");
  if (j.contains("experts"))
    for (int64_t l = 0; l < layers; ++l)
      read_owner_list(j["experts"], path + ": experts", ranks, experts,
                      &p.owner_[size_t(l * experts)]);
  if (j.contains("layers")) {
    const nlohmann::json& per = j["layers"];
    if (!per.is_object()) fail(path, ": layers: expected an object {\"<layer>\": [...]}");
    for (const auto& [key, value] : per.items()) {
      const int64_t l = parse_int_strict(key, path + ": layers key", 0, layers - 1);
      read_owner_list(value, str_cat(path, ": layers[\"", key, "\"]"), ranks, experts,
                      &p.owner_[size_t(l * experts)]);
    }
  }
  p.description_ = "placement file " + path;
  return p;
}

std::vector<uint8_t> ExpertPlacement::owned_mask(int rank, int64_t layer) const {
  std::vector<uint8_t> m(static_cast<size_t>(experts_));
  for (int64_t e = 0; e < experts_; ++e) m[size_t(e)] = owner(layer, e) == rank;
  return m;
}

int64_t ExpertPlacement::owned_count(int rank, int64_t layer) const {
  int64_t n = 0;
  for (int64_t e = 0; e < experts_; ++e) n += owner(layer, e) == rank;
  return n;
}

}  // namespace moex::dist
