#include "core/time.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace weft {
namespace {

// Parses "[-]digits[.digits]" into an exact value scaled by `scale` (a power of ten in ns);
// fraction digits beyond the scale's precision are rejected, not rounded.
Result<TimeNs> ParseScaled(std::string_view text, TimeNs scale, std::string_view what) {
  std::string_view original = text;
  bool negative = false;
  if (!text.empty() && text[0] == '-') {
    negative = true;
    text.remove_prefix(1);
  }
  size_t dot = text.find('.');
  std::string_view whole = text.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  auto bad = [&] { return Status::InvalidArgument("bad {} '{}'", what, original); };
  if (whole.empty() && frac.empty()) return bad();
  // from_chars would take a second sign ("--5"), and negating its result can overflow.
  if (!whole.empty() && (whole[0] < '0' || whole[0] > '9')) return bad();
  if (dot != std::string_view::npos && frac.empty()) return bad();
  int64_t whole_value = 0;
  if (!whole.empty()) {
    auto [ptr, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), whole_value);
    if (ec != std::errc() || ptr != whole.data() + whole.size()) return bad();
  }
  int64_t frac_value = 0;
  TimeNs frac_scale = scale;
  for (char c : frac) {
    if (c < '0' || c > '9') return bad();
    if (frac_scale < 10) {
      if (c != '0')
        return Status::InvalidArgument("{} '{}' is finer than a nanosecond", what, original);
      continue;
    }
    frac_scale /= 10;
    frac_value += (c - '0') * frac_scale;
  }
  if (whole_value > (std::numeric_limits<TimeNs>::max() - frac_value) / scale) {
    return Status::InvalidArgument("{} '{}' is out of range", what, original);
  }
  TimeNs value = whole_value * scale + frac_value;
  return negative ? -value : value;
}

}  // namespace

Result<TimeNs> ParseTimestamp(std::string_view text) {
  if (text.find('.') == std::string_view::npos) return ParseScaled(text, 1, "timestamp");
  return ParseScaled(text, kSecond, "timestamp");
}

Result<TimeNs> ParseDuration(std::string_view text) {
  struct Unit {
    std::string_view suffix;
    TimeNs scale;
  };
  // Longest suffixes first so "ms" is not read as "s".
  static constexpr Unit kUnits[] = {{"ns", 1},      {"us", kMicrosecond}, {"ms", kMillisecond},
                                    {"s", kSecond}, {"m", 60 * kSecond},  {"h", 3600 * kSecond}};
  if (text == "0") return TimeNs{0};
  for (const Unit& unit : kUnits) {
    if (text.size() > unit.suffix.size() && text.ends_with(unit.suffix)) {
      std::string_view number = text.substr(0, text.size() - unit.suffix.size());
      if (number.back() < '0' || number.back() > '9') continue;  // "1ms" must not match "s"
      return ParseScaled(number, unit.scale, "duration");
    }
  }
  return Status::InvalidArgument(
      "bad duration '{}' (want a number and a unit: ns, us, ms, s, m, h)", text);
}

std::string FormatTimestamp(TimeNs t) {
  bool negative = t < 0;
  uint64_t magnitude = negative ? uint64_t(0) - uint64_t(t) : uint64_t(t);
  return fmt::format("{}{}.{:09}", negative ? "-" : "", magnitude / kSecond, magnitude % kSecond);
}

std::string FormatDuration(TimeNs d) {
  if (d == kNoTime) return "-";
  double v = static_cast<double>(d);
  double a = std::fabs(v);
  if (a < 1e3) return fmt::format("{}ns", d);
  if (a < 1e6) return fmt::format("{:.3g}us", v / 1e3);
  if (a < 1e9) return fmt::format("{:.3g}ms", v / 1e6);
  if (a < 60e9) return fmt::format("{:.3g}s", v / 1e9);
  if (a < 3600e9) return fmt::format("{}m{:02}s", d / (60 * kSecond), std::abs(d / kSecond) % 60);
  return fmt::format("{}h{:02}m", d / (3600 * kSecond), std::abs(d / (60 * kSecond)) % 60);
}

}  // namespace weft
