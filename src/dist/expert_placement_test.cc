#include "dist/expert_placement.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace moex::dist {
namespace {

TEST(ExpertPlacement, EvenSplitIsContiguousAndCoversEveryExpertOnce) {
  for (int ranks : {1, 2, 3, 5, 8}) {
    const ExpertPlacement p = ExpertPlacement::even(ranks, 2, 8);
    int64_t total = 0;
    for (int r = 0; r < ranks; ++r) {
      total += p.owned_count(r, 1);
      EXPECT_GE(p.owned_count(r, 1), 8 / ranks);
      EXPECT_LE(p.owned_count(r, 1), (8 + ranks - 1) / ranks);
    }
    EXPECT_EQ(total, 8);
    for (int64_t e = 1; e < 8; ++e) EXPECT_GE(p.owner(0, e), p.owner(0, e - 1));  // contiguous
  }
  const ExpertPlacement p3 = ExpertPlacement::even(3, 1, 8);
  EXPECT_EQ(p3.owned_mask(1, 0), (std::vector<uint8_t>{0, 0, 0, 1, 1, 1, 0, 0}));
  EXPECT_EQ(p3.description(), "even split over 3 ranks: rank 0 experts 0-2, rank 1 experts 3-5, "
                              "rank 2 experts 6-7");
}

TEST(ExpertPlacement, MoreRanksThanExpertsIsRefused) {
  EXPECT_THROW(ExpertPlacement::even(9, 1, 8), Error);
  EXPECT_THROW(ExpertPlacement::even(0, 1, 8), Error);
}

std::string write(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::string& text) {
  const std::string path = write("moex_placement_test.json", text);
  try {
    ExpertPlacement::from_file(path, 2, 3, 4);
  } catch (const Error& e) {
    return std::string(e.what()).substr(path.size());
  }
  return "no error";
}

TEST(ExpertPlacement, FileSetsEveryLayerThenPerLayerOverrides) {
  const std::string path = write("moex_placement_ok.json",
                                 R"({"experts": [1, 0, 1, 0], "layers": {"2": [0, 0, 0, 1]}})");
  const ExpertPlacement p = ExpertPlacement::from_file(path, 2, 3, 4);
  EXPECT_EQ(p.owned_mask(1, 0), (std::vector<uint8_t>{1, 0, 1, 0}));
  EXPECT_EQ(p.owned_mask(1, 1), (std::vector<uint8_t>{1, 0, 1, 0}));
  EXPECT_EQ(p.owned_mask(1, 2), (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(p.owned_count(0, 2), 3);
}

TEST(ExpertPlacement, BadFilesNameTheField) {
  EXPECT_EQ(error_of("[1, 0]"), ": expected a JSON object {\"experts\": [...], \"layers\": {...}}");
  EXPECT_EQ(error_of("{\"experts\": [0, 1"), ": not valid JSON (truncated or malformed)");
  EXPECT_EQ(error_of(R"({"expert": [0, 1, 0, 1]})"),
            ": unknown field 'expert' (expected \"experts\" and/or \"layers\")");
  EXPECT_EQ(error_of(R"({"experts": [0, 1, 0]})"),
            ": experts: expected a list of 4 ranks (one owner per expert), got 3 entries");
  EXPECT_EQ(error_of(R"({"experts": [0, 1, 2, 1]})"),
            ": experts[2]: expected a rank in [0, 2), got 2");
  EXPECT_EQ(error_of(R"({"experts": [0, 1, -1, 1]})"),
            ": experts[2]: expected a rank in [0, 2), got -1");
  EXPECT_EQ(error_of(R"({"layers": {"3": [0, 1, 0, 1]}})").substr(0, 14), ": layers key: ");
  EXPECT_EQ(error_of(R"({"layers": [0, 1]})"), ": layers: expected an object {\"<layer>\": [...]}");
  EXPECT_EQ(error_of(R"({"layers": {"0": [0, 1, "1", 0]}})"),
            ": layers[\"0\"][2]: expected a rank in [0, 2), got \"1\"");
}

}  // namespace
}  // namespace moex::dist
