// Timelines (WAP5 §6.1) and node delay histograms from a hand-made two-timestamp trace.
#include "report/timeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "infer/truth/truth.h"
#include "trace/text_format.h"

namespace weft {
namespace {

// A calls B (10 ms away, both traced); B calls C, which is not traced, 2 ms after the call
// arrived, hears back 38 ms later, and answers A 1 ms after that.
constexpr std::string_view kTrace =
    "1.000 CALL_SENT A B c1 recv=1.010 path=1 msg=1\n"
    "1.012 CALL_SENT B C c2 path=1 msg=2 parent=1\n"
    "- RET_SENT C B c2 recv=1.050 path=1 msg=3 parent=2\n"
    "1.051 RET_SENT B A c1 recv=1.061 path=1 msg=4 parent=1\n";

PathSet Truth() {
  Result<Trace> trace = ParseTextTrace(kTrace, "t.trace");
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  Result<TruthInference> set = InferFromTruth(*trace, {.clock_offsets = true});
  EXPECT_TRUE(set.ok()) << set.status().message();
  return std::move(set->paths);
}

TEST(Timeline, LaysOutMeanTimes) {
  PathSet set = Truth();
  ASSERT_EQ(set.patterns.size(), 1u);
  std::vector<TimelineEvent> events = LayOutTimeline(set, 0);
  ASSERT_EQ(events.size(), 4u);
  const double ms = 1e6;
  // Pre-order: A->B, B->C, C->B, B->A.
  EXPECT_NEAR(events[0].send, 0, 1e3);
  EXPECT_NEAR(events[0].arrive, 10 * ms, 1e3);
  EXPECT_NEAR(events[0].network, 10 * ms, 1e3);
  EXPECT_NEAR(events[1].send, 12 * ms, 1e3);
  EXPECT_NEAR(events[1].node_delay, 2 * ms, 1e3);
  EXPECT_FALSE(events[1].network_known);  // C was not traced
  EXPECT_TRUE(events[2].round_trip);
  EXPECT_NEAR(events[2].node_delay, 38 * ms, 1e3);
  EXPECT_NEAR(events[2].arrive, 50 * ms, 1e3);
  EXPECT_NEAR(events[3].send, 51 * ms, 1e3);
  EXPECT_NEAR(events[3].node_delay, 1 * ms, 1e3);  // B's own time, after C's answer
  EXPECT_NEAR(events[3].arrive, 61 * ms, 1e3);

  std::string text = TimelineText(set, 0);
  EXPECT_NE(text.find("◇ 38.000 round trip"), std::string::npos) << text;
  std::string svg = TimelineSvg(set, 0);
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_NE(svg.find("<polygon class=\"visit\""), std::string::npos);  // C's round trip
  EXPECT_NE(svg.find("38.000 ms round trip"), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

// The number after `name="` in `tag`, or NaN.
double Attribute(const std::string& tag, const std::string& name) {
  size_t at = tag.find(" " + name + "=\"");
  return at == std::string::npos ? std::nan("") : std::stod(tag.substr(at + name.size() + 3));
}

// Every element of one kind in the drawing, as its opening tag.
std::vector<std::string> Tags(const std::string& svg, const std::string& start) {
  std::vector<std::string> tags;
  for (size_t at = svg.find(start); at != std::string::npos; at = svg.find(start, at + 1)) {
    tags.push_back(svg.substr(at, svg.find('>', at) - at));
  }
  return tags;
}

// A lane per node and one name each (not a box per arrival), every arrow starting on a
// bar of its sender, and no label past the canvas's right edge.
TEST(Timeline, SvgHasLanesBarsAndNoLooseEnds) {
  PathSet set = Truth();
  std::string svg = TimelineSvg(set, 0);
  EXPECT_EQ(Tags(svg, "<rect class=\"lane\"").size(), 3u) << svg;  // A, B, C
  for (std::string_view node : {">A</text>", ">B</text>", ">C</text>"}) {
    size_t first = svg.find(node);
    EXPECT_NE(first, std::string::npos) << node;
    EXPECT_EQ(svg.find(node, first + 1), std::string::npos) << node << " drawn twice";
  }
  const double width = Attribute(Tags(svg, "<svg ")[0], "width");
  // The bars (rectangles and the diamond's bounding box) an arrow may start on.
  struct Box {
    double left, top, right, bottom;
  };
  std::vector<Box> bars;
  for (const std::string& tag : Tags(svg, "<rect class=\"visit\"")) {
    double x = Attribute(tag, "x"), y = Attribute(tag, "y");
    bars.push_back({x, y, x + Attribute(tag, "width"), y + Attribute(tag, "height")});
  }
  for (const std::string& tag : Tags(svg, "<polygon class=\"visit\"")) {
    std::string points = tag.substr(tag.find("points=\"") + 8);
    Box box{1e9, 1e9, -1e9, -1e9};
    double px, py;
    for (const char* p = points.c_str(); std::sscanf(p, "%lf,%lf", &px, &py) == 2;) {
      box = {std::min(box.left, px), std::min(box.top, py), std::max(box.right, px),
             std::max(box.bottom, py)};
      p = std::strchr(p, ' ');
      if (p == nullptr) break;
      ++p;
    }
    bars.push_back(box);
  }
  EXPECT_EQ(bars.size(), 3u);  // A's wait, B's visit, C's round trip
  std::vector<std::string> arrows = Tags(svg, "<line class=\"message\"");
  EXPECT_EQ(arrows.size(), 4u);
  for (const std::string& arrow : arrows) {
    const double x = Attribute(arrow, "x1"), y = Attribute(arrow, "y1");
    EXPECT_TRUE(std::any_of(bars.begin(), bars.end(),
                            [&](const Box& b) {
                              return x >= b.left - 0.5 && x <= b.right + 0.5 && y >= b.top &&
                                     y <= b.bottom;
                            }))
        << arrow << " starts on no bar";
  }
  // Labels: 0.62 em per character is wider than any sans-serif run; all inside the canvas.
  for (const std::string& tag : Tags(svg, "<text ")) {
    size_t open = svg.find(tag) + tag.size() + 1;
    std::string text = svg.substr(open, svg.find("</text>", open) - open);
    size_t points = 0;
    for (unsigned char c : text) points += (c & 0xC0) != 0x80;
    const double size = std::isnan(Attribute(tag, "font-size")) ? 12 : Attribute(tag, "font-size");
    const double x = Attribute(tag, "x");
    const bool end = tag.find("text-anchor=\"end\"") != std::string::npos;
    const bool middle = tag.find("text-anchor=\"middle\"") != std::string::npos;
    const double w = double(points) * size * 0.62;
    const double right = end ? x : middle ? x + w / 2 : x + w;
    EXPECT_LE(right, width) << tag << ">" << text;
    EXPECT_GE(end ? x - w : middle ? x - w / 2 : x, 0) << tag << ">" << text;
  }
}

TEST(Timeline, NodeDelaysAreOwnTimesOnly) {
  std::string text = NodeDelayHistograms(Truth());
  // B's first call (2 ms) only: its return counts C's time too, and C's is a round trip.
  EXPECT_EQ(text.rfind("B: mean 2ms", 0), 0u) << text;
  EXPECT_EQ(text.find("C:"), std::string::npos);
}

}  // namespace
}  // namespace weft
