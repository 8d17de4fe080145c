#include "query/diagnostic.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "core/text.h"

namespace weft::query {
namespace {

// A line longer than this is shown as a window around the caret.
constexpr size_t kMaxShownLine = 160;
constexpr size_t kWindowHalf = 70;

// Damerau-Levenshtein distance (the optimal string alignment variant: a swap of two
// neighbours is one edit), ignoring case.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = AsciiLower(a[i - 1]) == AsciiLower(b[j - 1]) ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && AsciiLower(a[i - 1]) == AsciiLower(b[j - 2]) &&
          AsciiLower(a[i - 2]) == AsciiLower(b[j - 1])) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

}  // namespace

Status DiagnosticStatus(const Diagnostic& diagnostic, std::string_view text,
                        std::string_view source) {
  // The line is found by its number, so that a location without an offset still shows it.
  size_t start = 0;
  for (uint32_t line = 1; line < diagnostic.where.line && start <= text.size(); ++line) {
    size_t newline = text.find('\n', start);
    start = newline == std::string_view::npos ? text.size() + 1 : newline + 1;
  }
  std::string_view line;
  if (start <= text.size()) {
    line = text.substr(start);
    line = line.substr(0, line.find('\n'));
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  }
  size_t column = diagnostic.where.column > 0 ? diagnostic.where.column - 1 : 0;
  column = std::min(column, line.size());

  std::string prefix, suffix;
  if (line.size() > kMaxShownLine) {
    size_t from = column > kWindowHalf ? column - kWindowHalf : 0;
    size_t to = std::min(line.size(), column + kWindowHalf);
    if (from > 0) prefix = "...";
    if (to < line.size()) suffix = "...";
    line = line.substr(from, to - from);
    column -= from;
  }
  // The caret lines up under tabs and multi-byte UTF-8 characters as the terminal shows them.
  std::string caret = prefix.empty() ? "" : "   ";
  for (size_t i = 0; i < column; ++i) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    if (c == '\t') {
      caret.push_back('\t');
    } else if ((c & 0xc0) != 0x80) {
      caret.push_back(' ');
    }
  }
  return Status::InvalidArgument("{}:{}:{}: {}\n  {}{}{}\n  {}^", source, diagnostic.where.line,
                                 diagnostic.where.column, diagnostic.message, prefix, line, suffix,
                                 caret);
}

std::string NearestName(std::string_view name, std::span<const std::string> candidates) {
  size_t threshold = std::max<size_t>(1, name.size() / 3);
  std::string best;
  size_t best_distance = threshold + 1;
  for (const std::string& candidate : candidates) {
    size_t length_gap = candidate.size() > name.size() ? candidate.size() - name.size()
                                                       : name.size() - candidate.size();
    if (length_gap >= best_distance) continue;
    size_t distance = EditDistance(name, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

std::string WithSuggestion(std::string message, std::string_view name,
                           std::span<const std::string> candidates) {
  std::string nearest = NearestName(name, candidates);
  if (!nearest.empty() && nearest != name) {
    message += fmt::format("; did you mean '{}'?", nearest);
  }
  return message;
}

}  // namespace weft::query
