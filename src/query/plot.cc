// SVG charts of query results: a line per group over the intervals (PlotResultSvg) and bars
// (PlotBarsSvg); see output.h.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/text.h"
#include "query/output.h"

namespace weft::query {
namespace {

// Sizes in pixels. Text width is estimated, generously, from the character count, so that
// the canvas always has room for the longest label.
constexpr double kCharWidth = 7.2;  // 12px sans-serif
constexpr double kPlotWidth = 640, kPlotHeight = 360;
constexpr double kTop = 44, kBottom = 52, kRight = 24, kLegendRow = 18;
constexpr size_t kMaxLabelChars = 60;  // longer group names end in "…" (the full one in <title>)

// Colours that stay apart from each other (Tableau 10 and two more); "other" is grey.
constexpr const char* kColours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                    "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                    "#9c755f", "#17becf", "#8c564b", "#393b79"};
constexpr const char* kOtherColour = "#9a9a9a";

// At most `limit` code points, the last one "…" when cut.
std::string Shorten(std::string_view text, size_t limit) {
  if (CodePoints(text) <= limit) return std::string(text);
  size_t points = 0, end = 0;
  for (; end < text.size(); ++end) {
    if (((unsigned char)text[end] & 0xC0) != 0x80 && ++points == limit) break;
  }
  return std::string(text.substr(0, end)) + "…";
}

double TextWidth(std::string_view text) { return double(CodePoints(text)) * kCharWidth; }

// 1, 2 or 5 times a power of ten, near `rough`; `exponent` gets the power.
double NiceStep(double rough, int& exponent) {
  if (!(rough > 0) || !std::isfinite(rough)) rough = 1;
  exponent = int(std::floor(std::log10(rough)));
  double base = std::pow(10.0, exponent);
  double f = rough / base;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * base;
}

struct Axis {
  double lo = 0, hi = 1, step = 1;
  int exponent = 0;
  std::vector<double> ticks;
};

Axis MakeAxis(double lo, double hi, int wanted_ticks) {
  Axis axis;
  if (hi <= lo) hi = lo + 1;
  axis.step = NiceStep((hi - lo) / wanted_ticks, axis.exponent);
  if (axis.step == std::pow(10.0, axis.exponent + 1)) ++axis.exponent;
  axis.lo = std::floor(lo / axis.step + 1e-9) * axis.step;
  axis.hi = std::ceil(hi / axis.step - 1e-9) * axis.step;
  for (double t = axis.lo; t <= axis.hi + axis.step / 2; t += axis.step) axis.ticks.push_back(t);
  return axis;
}

// A tick's label: SI suffixes for large values (latencies are in ns), digits to the step.
std::string TickLabel(double value, const Axis& axis) {
  static constexpr struct {
    double scale;
    const char* suffix;
  } kUnits[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  if (std::fabs(value) < axis.step / 2) return "0";
  for (const auto& unit : kUnits) {
    if (axis.step >= unit.scale) {
      int decimals = std::max(0, int(std::log10(unit.scale)) - axis.exponent);
      return fmt::format("{:.{}f}{}", value / unit.scale, decimals, unit.suffix);
    }
  }
  return fmt::format("{:.{}f}", value, std::max(0, -axis.exponent));
}

struct Series {
  std::string label;
  std::map<int64_t, double> points;  // interval index -> y
  double total = 0;
};

std::string GroupLabel(const ResultRow& row, const std::vector<std::string>& columns) {
  if (columns.size() == 1) return columns[0];
  std::string label;
  for (size_t c = 0; c + 1 < columns.size() && c < row.values.size(); ++c) {
    if (c > 0) label += ", ";
    label += FormatValue(row.values[c]);
  }
  return label;
}

}  // namespace

Result<std::string> PlotResultSvg(const QueryResult& result, const PlotOptions& options) {
  if (options.interval <= 0)
    return Status::InvalidArgument("a plot needs an interval (--interval, e.g. 1s)");
  if (result.columns.empty()) return Status::InvalidArgument("the result has no columns");
  const std::string& y_name = result.columns.back();
  // One series per group, in the order groups first appear (rows are sorted by interval).
  std::vector<Series> series;
  std::map<std::string, size_t> by_label;
  for (const ResultRow& row : result.rows) {
    if (row.interval_start == kNoTime)
      return Status::InvalidArgument("the result has rows without an interval");
    if (row.values.size() != result.columns.size())
      return Status::Internal("a row has {} values for {} columns", row.values.size(),
                              result.columns.size());
    const Value& y = row.values.back();
    if (y.is_null()) continue;
    if (!y.is_number()) {
      return Status::InvalidArgument(
          "cannot plot '{}': the last column is the y axis and must be a number, not '{}'", y_name,
          FormatValue(y));
    }
    std::string label = GroupLabel(row, result.columns);
    auto [it, added] = by_label.try_emplace(label, series.size());
    if (added) series.push_back({label, {}, 0});
    Series& s = series[it->second];
    int64_t index = (row.interval_start - options.origin) / options.interval;
    if (!s.points.emplace(index, y.AsDouble()).second) {
      return Status::InvalidArgument(
          "cannot plot '{}': group '{}' has several values in one interval; plot a query "
          "that aggregates its last column (GroupBy the other columns, e.g. Select g, "
          "AVERAGE(x))",
          y_name, label);
    }
    s.total += y.AsDouble();
  }
  // The largest groups by total, the rest summed as "other".
  std::stable_sort(series.begin(), series.end(),
                   [](const Series& a, const Series& b) { return a.total > b.total; });
  const size_t max_groups = std::max<size_t>(options.max_groups, 2);
  const bool has_other = series.size() > max_groups;
  if (has_other) {
    Series other{fmt::format("other ({} groups, summed)", series.size() - (max_groups - 1)), {}, 0};
    for (size_t k = max_groups - 1; k < series.size(); ++k) {
      for (const auto& [index, y] : series[k].points) other.points[index] += y;
      other.total += series[k].total;
    }
    series.resize(max_groups - 1);
    series.push_back(std::move(other));
  }

  // Axes: x in seconds since the origin, y from zero (or below, for negative values).
  const double interval_s = double(options.interval) / double(kSecond);
  double x_min = 0, x_max = 0, y_min = 0, y_max = 0;
  bool any = false;
  for (const Series& s : series) {
    for (const auto& [index, y] : s.points) {
      double x = double(index) * interval_s;
      x_min = any ? std::min(x_min, x) : x;
      x_max = any ? std::max(x_max, x) : x;
      y_min = std::min(y_min, y);
      y_max = std::max(y_max, y);
      any = true;
    }
  }
  if (x_max <= x_min) x_max = x_min + interval_s;
  Axis x_axis = MakeAxis(x_min, x_max, 8);
  Axis y_axis = MakeAxis(y_min, y_max, 6);

  std::vector<std::string> y_labels;
  double y_label_width = 0;
  for (double t : y_axis.ticks) {
    y_labels.push_back(TickLabel(t, y_axis));
    y_label_width = std::max(y_label_width, TextWidth(y_labels.back()));
  }
  std::string title = options.title.empty()
                          ? fmt::format("{} per {}", y_name, FormatDuration(options.interval))
                          : options.title;
  title = Shorten(title, 120);
  std::string origin = FormatTimestamp(options.origin);  // "5.000000000": trim to "5"
  while (origin.back() == '0') origin.pop_back();
  if (origin.back() == '.') origin.pop_back();
  std::string x_title = fmt::format("interval start, seconds since {}", origin);
  std::string y_title = Shorten(y_name, 50);

  const double left = 8 + 16 + 8 + y_label_width + 8;  // margin, y title, gap, labels, gap
  const double plot_right = left + kPlotWidth;
  // The legend names the group's columns above its entries.
  std::string legend_heading;
  for (size_t c = 0; c + 1 < result.columns.size(); ++c)
    legend_heading += (c > 0 ? ", " : "") + result.columns[c];
  legend_heading = Shorten(legend_heading, kMaxLabelChars + 4);
  const double legend_top = kTop + 8 + (legend_heading.empty() ? 0 : kLegendRow);
  std::vector<std::string> legend;
  double legend_width = TextWidth(legend_heading);
  for (const Series& s : series) {
    legend.push_back(Shorten(s.label, kMaxLabelChars));
    legend_width = std::max(legend_width, 28 + TextWidth(legend.back()));
  }
  const double legend_x = plot_right + 24;
  double width = legend_x + legend_width + kRight;
  // The y title runs along the plot's height; a longer one widens nothing, so it is cut.
  width = std::max(width, 16 + TextWidth(title) * 14.0 / 12.0);
  width = std::max(width, left + TextWidth(x_title) + kRight);
  const double height =
      std::max(kTop + kPlotHeight + kBottom, legend_top + double(legend.size()) * kLegendRow + 8);
  auto sx = [&](double x) { return left + (x - x_axis.lo) / (x_axis.hi - x_axis.lo) * kPlotWidth; };
  auto sy = [&](double y) {
    return kTop + kPlotHeight - (y - y_axis.lo) / (y_axis.hi - y_axis.lo) * kPlotHeight;
  };

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "viewBox=\"0 0 {:.0f} {:.0f}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height, width, height);
  out += fmt::format("<text x=\"{:.1f}\" y=\"24\" font-size=\"14\">{}</text>\n", 8.0,
                     XmlEscape(title));
  // Grid and y ticks.
  for (size_t k = 0; k < y_axis.ticks.size(); ++k) {
    double y = sy(y_axis.ticks[k]);
    out += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e4e4e4\"/>\n",
        left, y, plot_right, y);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 6,
                       y + 4, XmlEscape(y_labels[k]));
  }
  // x ticks.
  for (double t : x_axis.ticks) {
    double x = sx(t);
    out += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#444\"/>\n", x,
        kTop + kPlotHeight, x, kTop + kPlotHeight + 5);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x,
                       kTop + kPlotHeight + 19, TickLabel(t, x_axis));
  }
  // The axes and their titles.
  out += fmt::format(
      "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#444\"/>\n"
      "<line x1=\"{0:.1f}\" y1=\"{2:.1f}\" x2=\"{3:.1f}\" y2=\"{2:.1f}\" stroke=\"#444\"/>\n",
      left, kTop, kTop + kPlotHeight, plot_right);
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                     left + kPlotWidth / 2, kTop + kPlotHeight + 42, XmlEscape(x_title));
  out += fmt::format(
      "<text transform=\"translate(20 {:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
      kTop + kPlotHeight / 2, XmlEscape(y_title));
  // One path per group; a group missing from an interval has a gap there, and a point
  // with no neighbour is a dot (a zero-length segment with round caps, and a circle wide
  // enough to see).
  for (size_t g = 0; g < series.size(); ++g) {
    const char* colour =
        has_other && g + 1 == series.size() ? kOtherColour : kColours[g % std::size(kColours)];
    std::string d, dots;
    int64_t previous = 0;
    bool first = true;
    for (const auto& [index, y] : series[g].points) {
      bool joined = !first && index == previous + 1;
      d += fmt::format("{}{:.1f} {:.1f}", joined ? " L" : (first ? "M" : " M"),
                       sx(double(index) * interval_s), sy(y));
      auto next = series[g].points.upper_bound(index);
      bool alone = !joined && (next == series[g].points.end() || next->first != index + 1);
      if (alone) {
        d += " l0 0";
        dots += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"/>\n",
                            sx(double(index) * interval_s), sy(y), colour);
      }
      previous = index;
      first = false;
    }
    out += fmt::format(
        "<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" "
        "stroke-linejoin=\"round\" stroke-linecap=\"round\"><title>{}</title></path>\n",
        d, colour, XmlEscape(series[g].label));
    out += dots;
  }
  // The legend, right of the plot, in the order of the groups' totals.
  if (!legend_heading.empty()) {
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-weight=\"bold\">{}</text>\n", legend_x,
                       legend_top - kLegendRow + 4, XmlEscape(legend_heading));
  }
  for (size_t g = 0; g < series.size(); ++g) {
    const char* colour =
        has_other && g + 1 == series.size() ? kOtherColour : kColours[g % std::size(kColours)];
    double y = legend_top + double(g) * kLegendRow;
    out += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"3\"/>\n",
        legend_x, y, legend_x + 20, y, colour);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\"><title>{}</title>{}</text>\n",
                       legend_x + 28, y + 4, XmlEscape(series[g].label), XmlEscape(legend[g]));
  }
  if (series.empty()) {
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">no data</text>\n",
                       left + kPlotWidth / 2, kTop + kPlotHeight / 2);
  }
  out += "</svg>\n";
  return out;
}

Result<std::string> PlotBarsSvg(const QueryResult& result, const PlotOptions& options) {
  if (result.columns.size() < 2) {
    return Status::InvalidArgument("stacked bars need a label column and a column to stack");
  }
  // The last interval's rows (all of them when the result has no interval).
  TimeNs last = kNoTime;
  for (const ResultRow& row : result.rows) last = std::max(last, row.interval_start);
  struct Bar {
    std::string label;
    std::vector<double> parts;  // per column; 0 where the value is not a positive number
    double total = 0;
  };
  std::vector<Bar> bars;
  for (const ResultRow& row : result.rows) {
    if (row.interval_start != last || row.values.size() != result.columns.size()) continue;
    Bar bar{FormatValue(row.values[0]), std::vector<double>(result.columns.size(), 0), 0};
    for (size_t c = 1; c < row.values.size(); ++c) {
      const Value& v = row.values[c];
      if (result.columns[c] == "COUNT") {
        bar.label += fmt::format(" (n={})", FormatValue(v));
      } else if (v.is_number() && v.AsDouble() > 0) {
        bar.parts[c] = v.AsDouble();
        bar.total += bar.parts[c];
      }
    }
    bars.push_back(std::move(bar));
  }
  double most = 0;
  for (const Bar& b : bars) most = std::max(most, b.total);
  if (bars.empty() || !(most > 0)) return Status::InvalidArgument("no row has a value to stack");
  Axis axis = MakeAxis(0, most, 6);
  std::vector<size_t> segments;  // the stacked columns
  for (size_t c = 1; c < result.columns.size(); ++c) {
    if (result.columns[c] != "COUNT") segments.push_back(c);
  }
  constexpr double kBar = 28, kGap = 14;
  double label_width = TextWidth(result.columns[0]);
  for (Bar& b : bars) {
    b.label = Shorten(b.label, kMaxLabelChars);
    label_width = std::max(label_width, TextWidth(b.label));
  }
  const double left = 8 + label_width + 10;
  const double plot_height = double(bars.size()) * (kBar + kGap) + kGap;
  const double legend_top = kTop + plot_height + 48;
  double legend_width = 0;
  for (size_t c : segments)
    legend_width = std::max(legend_width, 28 + TextWidth(result.columns[c]));
  std::string title = Shorten(options.title.empty() ? "where the time goes" : options.title, 120);
  const double width = std::max({left + kPlotWidth + kRight, 16 + TextWidth(title) * 14.0 / 12.0,
                                 left + legend_width + kRight});
  const double height = legend_top + double(segments.size()) * kLegendRow + 8;
  auto sx = [&](double x) { return left + x / axis.hi * kPlotWidth; };

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "viewBox=\"0 0 {:.0f} {:.0f}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height, width, height);
  out += fmt::format("<text x=\"8\" y=\"24\" font-size=\"14\">{}</text>\n", XmlEscape(title));
  const double bottom = kTop + plot_height;
  for (double t : axis.ticks) {
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#e4e4e4\"/>\n"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
        sx(t), kTop, bottom, bottom + 19, TickLabel(t, axis));
  }
  out += fmt::format(
      "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#444\"/>\n"
      "<line x1=\"{0:.1f}\" y1=\"{2:.1f}\" x2=\"{3:.1f}\" y2=\"{2:.1f}\" stroke=\"#444\"/>\n",
      left, kTop, bottom, left + kPlotWidth);
  out += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" "
      "font-weight=\"bold\">{}</text>\n",
      left - 8, kTop - 6, XmlEscape(result.columns[0]));
  for (size_t b = 0; b < bars.size(); ++b) {
    double y = kTop + kGap + double(b) * (kBar + kGap);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 8,
                       y + kBar / 2 + 4, XmlEscape(bars[b].label));
    double at = 0;
    for (size_t k = 0; k < segments.size(); ++k) {
      double v = bars[b].parts[segments[k]];
      if (v <= 0) continue;
      out += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\">"
          "<title>{}: {}</title></rect>\n",
          sx(at), y, sx(at + v) - sx(at), kBar, kColours[k % std::size(kColours)],
          XmlEscape(result.columns[segments[k]]), FormatValue(Value::Float(v)));
      at += v;
    }
  }
  for (size_t k = 0; k < segments.size(); ++k) {
    double y = legend_top + double(k) * kLegendRow;
    out += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"20\" height=\"10\" fill=\"{}\"/>\n"
        "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
        left, y - 6, kColours[k % std::size(kColours)], left + 28, y + 4,
        XmlEscape(result.columns[segments[k]]));
  }
  out += "</svg>\n";
  return out;
}

}  // namespace weft::query
