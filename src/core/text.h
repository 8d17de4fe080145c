// Small text helpers that several stages need: ASCII case folding (protocol headers, query
// keywords) and escaping for XML (the SVG reports).
#pragma once

#include <string>
#include <string_view>

namespace weft {

inline char AsciiLower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

// Equal ignoring ASCII case.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// `text` for XML character data or a quoted attribute: & < > " escaped, and control
// characters other than tab (which XML 1.0 forbids even escaped) as spaces.
std::string XmlEscape(std::string_view text);

}  // namespace weft
