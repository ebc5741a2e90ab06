// huge_pages: alignment and rounding of alloc_huge, the advice's range rules, and that a
// touched alloc_huge buffer really is backed by huge pages where the kernel offers them.
#include "core/huge_pages.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>

namespace moex {
namespace {

std::string thp_mode() {  // "always [madvise] never" -> "madvise"; "" when unknown
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  const auto a = line.find('['), b = line.find(']');
  return a == std::string::npos || b == std::string::npos ? "" : line.substr(a + 1, b - a - 1);
}

TEST(HugePages, AllocIsAlignedAndAdviceNeedsAWholeHugePage) {
  auto buf = make_huge_array<uint8_t>(100, "test buffer");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buf.get()) % kHugePageBytes, 0u);
  buf[kHugePageBytes - 1] = 1;  // rounded up to a whole huge page: the last byte is ours
  EXPECT_FALSE(advise_huge_pages(nullptr, kHugePageBytes));
  EXPECT_FALSE(advise_huge_pages(buf.get() + 1, kHugePageBytes));  // no whole page inside
}

TEST(HugePages, TouchedBufferGetsHugePages) {
  const std::string mode = thp_mode();
  if (mode.empty() || mode == "never" || anon_huge_page_bytes() < 0)
    GTEST_SKIP() << "transparent huge pages unavailable here (mode '" << mode << "')";
  const int64_t before = anon_huge_page_bytes();
  const size_t bytes = 64 * kHugePageBytes;
  auto buf = make_huge_array<uint8_t>(bytes, "test buffer");
  std::memset(buf.get(), 1, bytes);
  EXPECT_GE(anon_huge_page_bytes() - before, int64_t(kHugePageBytes))
      << "THP mode '" << mode << "': a 128 MB advised buffer got no huge page";
}

}  // namespace
}  // namespace moex
