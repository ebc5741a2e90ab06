// load_generation_config and the stop rule.
#include "model/generation_config.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "io/json_config.h"

namespace moex::model {

GenerationConfig load_generation_config(const std::string& dir, int64_t vocab) {
  GenerationConfig g;
  const std::string path = dir + "/generation_config.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && !ec) return g;
  const nlohmann::json j = io::read_json_file(path);
  g.source = path;
  if (io::has_field(j, "eos_token_id")) {
    const nlohmann::json& v = j.at("eos_token_id");
    g.eos_token_ids = v.is_array() ? io::get_int_array(j, "eos_token_id", path)
                                   : std::vector<int64_t>{io::get_int(j, "eos_token_id", path)};
    for (int64_t id : g.eos_token_ids)
      if (id < 0 || id >= vocab)
        fail(path, ": field 'eos_token_id': id ", id, " is outside the vocabulary [0, ", vocab,
             ") of config.json");
    // mlx-lm takes the field only when it is truthy in Python: 0 and [] leave config.json's.
    if (g.eos_token_ids == std::vector<int64_t>{0}) g.eos_token_ids.clear();
  }
  g.do_sample = io::get_bool_or(j, "do_sample", false, path);
  if (io::has_field(j, "temperature")) {
    g.temperature = io::get_double(j, "temperature", path);
    if (*g.temperature < 0) fail(path, ": field 'temperature' must be >= 0, got ", *g.temperature);
  }
  if (io::has_field(j, "top_p")) {
    g.top_p = io::get_double(j, "top_p", path);
    if (*g.top_p < 0 || *g.top_p > 1) fail(path, ": field 'top_p' must lie in [0, 1], got ", *g.top_p);
  }
  if (io::has_field(j, "top_k")) g.top_k = io::get_int_in(j, "top_k", 0, INT32_MAX, path);
  return g;
}

std::vector<int32_t> stop_token_ids(const ModelConfig& cfg, const GenerationConfig& gen,
                                    const std::vector<int32_t>& tokenizer_eos) {
  std::vector<int32_t> ids = tokenizer_eos;
  for (int64_t id : gen.eos_token_ids.empty() ? cfg.eos_token_ids : gen.eos_token_ids) {
    if (id < 0 || id > INT32_MAX) fail("eos_token_id ", id, " is not a token id");
    ids.push_back(int32_t(id));
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::string apply_sampling_defaults(const GenerationConfig& g, SamplingFieldsGiven given,
                                    ops::SamplerArgs& args) {
  if (!g.do_sample) return "";
  std::string used;
  auto note = [&](const char* name, const auto& v) {
    used += str_cat(used.empty() ? "" : ", ", name, " ", v);
  };
  if (g.temperature && !given.temperature) {
    args.temperature = *g.temperature;
    note("temperature", *g.temperature);
  }
  if (g.top_p && !given.top_p) {
    args.top_p = *g.top_p;
    note("top_p", *g.top_p);
  }
  if (g.top_k && !given.top_k) {
    args.top_k = *g.top_k;
    note("top_k", *g.top_k);
  }
  return used;
}

}  // namespace moex::model
