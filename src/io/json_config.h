// Reading JSON files (config.json, index files) and typed, strict field getters whose errors
// name the file and the field and say what was expected. No nlohmann exception escapes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace moex::io {

// Nesting deeper than this is rejected (real configs nest a few levels).
inline constexpr int kMaxJsonDepth = 64;

// Parses `text` (the contents of `file`, used in messages). Rejects invalid JSON, nesting
// deeper than kMaxJsonDepth, duplicate keys in any object (nlohmann would silently keep
// the last one) and NUL bytes (nlohmann would stop there and ignore the rest). Does not
// require the top level to be an object.
nlohmann::json parse_json_text(std::string_view text, const std::string& file);

// Largest config-like JSON file read (config.json, generation_config.json, a safetensors
// index): real ones are kilobytes, an index of a trillion-parameter checkpoint a few MB.
inline constexpr int64_t kMaxConfigJsonBytes = int64_t{64} << 20;

// Python writes a non-finite float two ways: its json module as the bare tokens Infinity,
// -Infinity and NaN (not JSON), transformers 5 and mlx-lm 0.32 as the tagged object
// {"__float__": "Infinity"} ("-Infinity", "NaN"); both readers accept either anywhere.
// tag_python_nonfinite returns `text` with each bare token in a value position replaced by the
// tagged object, so that only that spelling reaches the getters (strings are left alone; a
// token anywhere else stays invalid JSON). More than kMaxNonFiniteTokens of them is an Error
// naming `file`. python_nonfinite reads a tagged object (nullopt for any other value). The
// getters below refuse it, naming the field, except get_double_array_nonfinite.
inline constexpr int kMaxNonFiniteTokens = 64;
std::string tag_python_nonfinite(std::string_view text, const std::string& file);
std::optional<double> python_nonfinite(const nlohmann::json& v);

// Reads (core/file_read.h: regular files only, at most kMaxConfigJsonBytes) and parses a
// whole file; Error naming the file if it is missing, unreadable, not a regular file, too
// large, not valid JSON (see parse_json_text; bare non-finite floats are read as
// tag_python_nonfinite says) or its top level is not an object.
nlohmann::json read_json_file(const std::string& path);

// Typed getters. `obj` must be a JSON object; `file` names the source in messages.
// Required getters fail on a missing field, a null, or a wrong JSON type. The `_or` getters
// return `def` when the field is missing or null, and fail on a wrong type.
// Integers: JSON integers only (4.0, true and "4" are rejected); values outside int64 are
// rejected. Doubles: any JSON number (not bool), must be finite.
int64_t get_int(const nlohmann::json& obj, std::string_view field, const std::string& file);
int64_t get_int_or(const nlohmann::json& obj, std::string_view field, int64_t def,
                   const std::string& file);
// As get_int, and the value must lie in [lo, hi].
int64_t get_int_in(const nlohmann::json& obj, std::string_view field, int64_t lo, int64_t hi,
                   const std::string& file);
double get_double(const nlohmann::json& obj, std::string_view field, const std::string& file);
double get_double_or(const nlohmann::json& obj, std::string_view field, double def,
                     const std::string& file);
bool get_bool(const nlohmann::json& obj, std::string_view field, const std::string& file);
bool get_bool_or(const nlohmann::json& obj, std::string_view field, bool def,
                 const std::string& file);
std::string get_string(const nlohmann::json& obj, std::string_view field, const std::string& file);
std::string get_string_or(const nlohmann::json& obj, std::string_view field, std::string def,
                          const std::string& file);
std::vector<int64_t> get_int_array(const nlohmann::json& obj, std::string_view field,
                                   const std::string& file);
std::vector<double> get_double_array(const nlohmann::json& obj, std::string_view field,
                                     const std::string& file);
// As get_double_array, and an element may be a non-finite float in either of Python's
// spellings (Nemotron-H's time_step_limit defaults to [0.0, Infinity]).
std::vector<double> get_double_array_nonfinite(const nlohmann::json& obj, std::string_view field,
                                               const std::string& file);
std::vector<std::string> get_string_array(const nlohmann::json& obj, std::string_view field,
                                          const std::string& file);
// A nested object field (e.g. "text_config"); nullptr from the _or form if missing or null.
const nlohmann::json& get_object(const nlohmann::json& obj, std::string_view field,
                                 const std::string& file);
const nlohmann::json* get_object_or_null(const nlohmann::json& obj, std::string_view field,
                                         const std::string& file);

// True if `obj` is an object holding `field` with a non-null value.
bool has_field(const nlohmann::json& obj, std::string_view field);

// Value conversions shared with other readers; `what` names the value in messages
// (e.g. "config.json: field 'bits'"). Same rules as the getters above.
int64_t json_to_int(const nlohmann::json& v, const std::string& what);
double json_to_double(const nlohmann::json& v, const std::string& what);
// "integer", "float", "string", ... as a reader would say it.
const char* json_kind(const nlohmann::json& v);

}  // namespace moex::io
