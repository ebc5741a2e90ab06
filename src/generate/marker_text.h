// Small text helpers the reasoning and tool-call parsers share: how much of a text's end could
// still grow into a marker, whitespace trimming, and finding one marker after another.
#pragma once

#include <string>
#include <string_view>

namespace moex::generate {

// Bytes at the end of `text` that are a proper prefix of `marker` (the longest such suffix):
// text a streaming parser must hold back until it knows whether the marker follows.
size_t partial_marker_suffix(std::string_view text, std::string_view marker);

bool is_space(char c);
std::string_view trim(std::string_view s);
bool all_space(std::string_view s);

// The text between `open` and the next `close` at or after `from`; advances `from` past the
// close. False (from unchanged) when either is missing.
bool take_between(std::string_view s, size_t& from, std::string_view open, std::string_view close,
                  std::string_view& inner);

}  // namespace moex::generate
