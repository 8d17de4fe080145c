// Small text helpers that several stages need: ASCII case folding (protocol headers, query
// keywords), counting code points (the width of a label) and escaping for XML (the SVG
// reports).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace weft {

inline char AsciiLower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

// Equal ignoring ASCII case.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// The code points of UTF-8 `text` (its bytes but continuation bytes): a terminal column or
// a glyph's width each.
inline size_t CodePoints(std::string_view text) {
  return size_t(std::count_if(text.begin(), text.end(),
                              [](char c) { return ((unsigned char)c & 0xC0) != 0x80; }));
}

// `text` for XML character data or a quoted attribute: & < > " escaped, and control
// characters other than tab (which XML 1.0 forbids even escaped) as spaces.
std::string XmlEscape(std::string_view text);

}  // namespace weft
