// JSON reading and typed getters: wrong types, floats for ints, bools for numbers, out of
// range, missing and null fields, duplicates; every error names the file and the field.
#include "io/json_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "core/testing/fifo_probe.h"
#include "io/test_util.h"

namespace moex::io {
namespace {

using nlohmann::json;
using testing::TempDir;
using testing::throws_error_with;
using testing::write_file;

const char* kFile = "cfg/config.json";

json sample() {
  return json::parse(R"({
    "hidden_size": 2048, "neg": -3, "big_unsigned": 18446744073709551615, "float_int": 4.0,
    "ratio": 0.5, "theta": 10000, "flag": true, "name": "qwen3_moe", "nothing": null,
    "dims": [1, 2, 3], "mixed": [1, 2.5], "floats": [0.5, 1], "names": ["a", "b"],
    "text_config": {"hidden_size": 7}, "huge_float": 1e300
  })");
}

TEST(JsonConfig, TypedGettersAcceptTheRightTypes) {
  const json j = sample();
  EXPECT_EQ(get_int(j, "hidden_size", kFile), 2048);
  EXPECT_EQ(get_int(j, "neg", kFile), -3);
  EXPECT_EQ(get_int_or(j, "absent", 5, kFile), 5);
  EXPECT_EQ(get_int_or(j, "nothing", 6, kFile), 6);  // null counts as absent
  EXPECT_EQ(get_int_in(j, "hidden_size", 1, 4096, kFile), 2048);
  EXPECT_DOUBLE_EQ(get_double(j, "ratio", kFile), 0.5);
  EXPECT_DOUBLE_EQ(get_double(j, "theta", kFile), 10000.0);  // integers are numbers too
  EXPECT_DOUBLE_EQ(get_double_or(j, "absent", 1.5, kFile), 1.5);
  EXPECT_TRUE(get_bool(j, "flag", kFile));
  EXPECT_FALSE(get_bool_or(j, "absent", false, kFile));
  EXPECT_EQ(get_string(j, "name", kFile), "qwen3_moe");
  EXPECT_EQ(get_string_or(j, "absent", "x", kFile), "x");
  EXPECT_EQ(get_int_array(j, "dims", kFile), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(get_double_array(j, "floats", kFile), (std::vector<double>{0.5, 1.0}));
  EXPECT_EQ(get_string_array(j, "names", kFile), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(get_int(get_object(j, "text_config", kFile), "hidden_size", kFile), 7);
  EXPECT_EQ(get_object_or_null(j, "absent", kFile), nullptr);
  EXPECT_TRUE(has_field(j, "flag"));
  EXPECT_FALSE(has_field(j, "nothing"));
}

struct BadGet {
  const char* id;
  std::function<void(const json&)> get;
  std::vector<std::string> expect;  // besides the file name
};

TEST(JsonConfig, WrongTypesAndRangesNameFileAndField) {
  const json j = sample();
  const std::vector<BadGet> cases = {
      {"missing", [](const json& c) { get_int(c, "absent", kFile); }, {"'absent'", "missing"}},
      {"null", [](const json& c) { get_int(c, "nothing", kFile); }, {"'nothing'", "null"}},
      {"float_for_int", [](const json& c) { get_int(c, "float_int", kFile); }, {"'float_int'", "floating-point", "expected an integer"}},
      {"float_for_int_or", [](const json& c) { get_int_or(c, "ratio", 1, kFile); }, {"'ratio'", "expected an integer"}},
      {"bool_for_int", [](const json& c) { get_int(c, "flag", kFile); }, {"'flag'", "a boolean", "expected an integer"}},
      {"string_for_int", [](const json& c) { get_int(c, "name", kFile); }, {"'name'", "a string"}},
      {"beyond_int64", [](const json& c) { get_int(c, "big_unsigned", kFile); }, {"'big_unsigned'", "out of range"}},
      {"out_of_range", [](const json& c) { get_int_in(c, "hidden_size", 1, 1024, kFile); }, {"'hidden_size' = 2048", "[1, 1024]"}},
      {"bool_for_double", [](const json& c) { get_double(c, "flag", kFile); }, {"'flag'", "expected a number"}},
      {"string_for_double", [](const json& c) { get_double_or(c, "name", 1.0, kFile); }, {"'name'", "expected a number"}},
      {"int_for_bool", [](const json& c) { get_bool(c, "hidden_size", kFile); }, {"'hidden_size'", "expected true or false"}},
      {"int_for_string", [](const json& c) { get_string(c, "hidden_size", kFile); }, {"'hidden_size'", "expected a string"}},
      {"mixed_array", [](const json& c) { get_int_array(c, "mixed", kFile); }, {"'mixed'[1]", "floating-point"}},
      {"not_array", [](const json& c) { get_int_array(c, "hidden_size", kFile); }, {"'hidden_size'", "expected an array"}},
      {"string_array_ints", [](const json& c) { get_string_array(c, "dims", kFile); }, {"'dims'[0]", "expected a string"}},
      {"not_object_field", [](const json& c) { get_object(c, "dims", kFile); }, {"'dims'", "expected an object"}},
      {"not_object_or_null", [](const json& c) { get_object_or_null(c, "name", kFile); }, {"'name'", "expected an object"}},
      {"receiver_not_object", [](const json& c) { get_int(c["dims"], "x", kFile); }, {"'x'", "expected a JSON object"}},
  };
  for (const BadGet& c : cases) {
    std::vector<std::string> parts = c.expect;
    parts.push_back(kFile);
    try {
      c.get(j);
      ADD_FAILURE() << c.id << ": accepted";
    } catch (const Error& e) {
      const std::string msg = e.what();
      for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << c.id << " lacks '" << p << "': " << msg;
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.id << ": non-moex exception " << e.what();
    }
  }
}

TEST(JsonConfig, ReadJsonFile) {
  TempDir tmp;
  const std::string path = tmp.file("config.json");
  write_file(path, R"({"model_type": "mixtral", "num_local_experts": 8})");
  const json j = read_json_file(path);
  EXPECT_EQ(get_string(j, "model_type", path), "mixtral");

  EXPECT_TRUE(throws_error_with([&] { read_json_file(tmp.file("absent.json")); }, {"absent.json", "cannot open"}));
  EXPECT_TRUE(throws_error_with([&] { read_json_file(tmp.path()); }, {tmp.path()}));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "invalid JSON"},
      {"{\"a\": 1,}", "invalid JSON"},
      {"{\"a\": 1} {", "invalid JSON"},
      {"[1]", "top level is an array"},
      {"\"text\"", "top level is a string"},
      {"{\"a\": 1, \"a\": 2}", "duplicate JSON key 'a'"},
      {"{\"o\": {\"k\": 1, \"k\": 1}}", "duplicate JSON key 'k'"},
      {std::string(200, '[') + std::string(200, ']'), "nesting deeper"},
      {"{\"a\": NaNa}", "invalid JSON"},
      {"{\"a\": 1 NaN}", "invalid JSON"},
      {"{Infinity: 1}", "invalid JSON"},
      {std::string("{}\0{", 4), "NUL byte at offset 2"},  // nlohmann stops at a NUL
  };
  for (const auto& [text, expect] : bad) {
    write_file(path, text);
    EXPECT_TRUE(throws_error_with([&] { read_json_file(path); }, {path, expect})) << text.substr(0, 40);
  }
  // Same key in different objects is fine.
  write_file(path, R"({"a": {"k": 1}, "b": {"k": 2}, "k": [{"k": 3}, {"k": 4}]})");
  EXPECT_EQ(read_json_file(path)["b"]["k"], 2);
}

TEST(JsonConfig, ReadJsonFileRefusesWhatIsNotASmallRegularFile) {
  TempDir tmp;
  EXPECT_TRUE(throws_error_with([&] { read_json_file(tmp.path()); },
                                {tmp.path(), "a directory; expected a regular file"}));
  EXPECT_TRUE(throws_error_with([] { read_json_file("/dev/zero"); },
                                {"/dev/zero", "a character device; expected a regular file"}));
  const auto fifo = moex::testing::probe_fifo(tmp.file("fifo.json"),
                                              [](const std::string& p) { read_json_file(p); });
  EXPECT_TRUE(fifo.returned) << "blocked waiting for a writer";
  EXPECT_NE(fifo.message.find("a FIFO (named pipe); expected a regular file"), std::string::npos)
      << fifo.message;
  // Sparse: the size is refused before anything is read.
  const std::string big = tmp.file("big.json");
  write_file(big, "{}");
  std::filesystem::resize_file(big, uintmax_t(kMaxConfigJsonBytes) + 1);
  EXPECT_TRUE(throws_error_with([&] { read_json_file(big); }, {big, "expected at most 67108864"}));
  std::filesystem::resize_file(big, uintmax_t(kMaxConfigJsonBytes));  // at the cap: read
  EXPECT_TRUE(throws_error_with([&] { read_json_file(big); }, {big, "NUL byte at offset 2"}));
  // A missing model directory is named as such, not as a missing config.json.
  const std::string in_missing = tmp.file("no_model") + "/config.json";
  EXPECT_TRUE(throws_error_with([&] { read_json_file(in_missing); },
                                {"the directory " + tmp.file("no_model") + " does not exist"}));
}

TEST(JsonConfig, NonFiniteNumbersRejected) {
  // nlohmann refuses 1e400 while parsing; a value built in code can still hold inf.
  EXPECT_TRUE(throws_error_with([] { parse_json_text(R"({"x": 1e400})", kFile); }, {kFile, "invalid JSON", "1e400"}));
  const json j = {{"big", 1e300}, {"inf", INFINITY}};
  EXPECT_DOUBLE_EQ(get_double(j, "big", kFile), 1e300);
  EXPECT_TRUE(throws_error_with([&] { get_double(j, "inf", kFile); }, {"'inf'", "finite"}));
}

// Python's two spellings of a non-finite float (json_config.h): a bare token in a value
// position becomes the tagged object and strings are untouched; every getter refuses either
// spelling naming the field, get_double_array_nonfinite reads both; the count is bounded.
TEST(JsonConfig, PythonNonFiniteFloats) {
  EXPECT_EQ(tag_python_nonfinite(R"({"a": [0.0, Infinity], "b": -Infinity,"c":NaN})", kFile),
            R"({"a": [0.0, {"__float__": "Infinity"}], "b": {"__float__": "-Infinity"},)"
            R"("c":{"__float__": "NaN"}})");
  const std::string strings = R"({"Infinity": "NaN, Infinity", "q": "\"NaN", "r": [1]})";
  EXPECT_EQ(tag_python_nonfinite(strings, kFile), strings);

  TempDir tmp;
  const std::string path = tmp.file("config.json");
  write_file(path, R"({"time_step_limit": [0.0, Infinity], "rope_theta": NaN, "n": -Infinity,
                       "tagged": [{"__float__": "-Infinity"}, 1],
                       "other_tag": {"__float__": "inf"}})");
  const json j = read_json_file(path);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(get_double_array_nonfinite(j, "time_step_limit", path),
            (std::vector<double>{0.0, inf}));
  EXPECT_EQ(get_double_array_nonfinite(j, "tagged", path), (std::vector<double>{-inf, 1.0}));
  EXPECT_TRUE(throws_error_with([&] { get_double(j, "rope_theta", path); },
                                {path, "'rope_theta'", "NaN", "expected a finite number"}));
  EXPECT_TRUE(throws_error_with([&] { get_int(j, "n", path); }, {"'n'", "-Infinity", "integer"}));
  EXPECT_TRUE(throws_error_with([&] { get_double_array(j, "time_step_limit", path); },
                                {"'time_step_limit'[1]", "Infinity", "finite"}));
  EXPECT_FALSE(python_nonfinite(j["other_tag"]).has_value());  // not one of the three tags
  EXPECT_TRUE(std::isnan(*python_nonfinite(json{{"__float__", "NaN"}})));

  std::string many = "[";
  for (int i = 0; i <= kMaxNonFiniteTokens; ++i) many += i ? ", NaN" : "NaN";
  EXPECT_TRUE(throws_error_with([&] { tag_python_nonfinite(many + "]", kFile); },
                                {kFile, "more than 64"}));
}

}  // namespace
}  // namespace moex::io
