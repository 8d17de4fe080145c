// Timelines (WAP5 §6.1) and node delay histograms (WAP5 Figure 11); see timeline.h.
#include "report/timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/text.h"
#include "report/describe.h"

namespace weft {
namespace {

std::string Ms(double ns) { return fmt::format("{:.3f}", ns / 1e6); }

}  // namespace

std::vector<TimelineEvent> LayOutTimeline(const PathSet& set, uint32_t pattern) {
  const std::vector<PatternElement>& elements = set.patterns[pattern].elements;
  std::vector<TimelineEvent> events(elements.size());
  for (size_t k = 0; k < elements.size(); ++k) {
    const PatternElement& e = elements[k];
    TimelineEvent& ev = events[k];
    ev.network_known = !e.network.empty();
    ev.network = e.network.mean();
    ev.node_delay_known = !e.delay.empty();
    ev.node_delay = e.delay.mean();
    if (e.parent < 0) {
      ev.send = 0;
    } else {
      const PatternElement& parent = elements[size_t(e.parent)];
      const TimelineEvent& p = events[size_t(e.parent)];
      if (e.round_trip) {
        // Sent by an untraced node back to the parent's sender: a round trip measured
        // from the parent's send; the arrival is what is known.
        ev.round_trip = true;
        ev.arrive = p.send + ev.node_delay;
        ev.send = ev.arrive;
        continue;
      } else if (parent.receiver == e.sender) {
        ev.send = p.arrive + ev.node_delay;  // acts on the parent's arrival
      } else {
        ev.send = p.send + ev.node_delay;
      }
    }
    ev.arrive = ev.send + (ev.network_known ? ev.network : 0);
  }
  // A node's own time before a send: since the latest arrival at it (the element delay of
  // a call tree counts from the enclosing call's arrival, which includes earlier callees).
  for (size_t k = 0; k < elements.size(); ++k) {
    TimelineEvent& ev = events[k];
    if (elements[k].parent < 0 || ev.round_trip || !ev.node_delay_known) continue;
    double latest = -1;
    for (size_t j = 0; j < elements.size(); ++j) {
      if (elements[j].receiver == elements[k].sender && events[j].arrive <= ev.send + 1) {
        latest = std::max(latest, events[j].arrive);
      }
    }
    if (latest >= 0) ev.node_delay = ev.send - latest;
  }
  return events;
}

std::string TimelineText(const PathSet& set, uint32_t pattern) {
  const PathPattern& p = set.patterns[pattern];
  std::vector<TimelineEvent> events = LayOutTimeline(set, pattern);
  std::vector<size_t> order(events.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return events[a].send < events[b].send; });
  std::string out =
      fmt::format("{}  ({} instances, expected {:.1f}; mean end to end {})\n", CompactShape(set, p),
                  p.count, p.expected_count, FormatDuration(TimeNs(p.latency.mean())));
  out += fmt::format("  {:>10} {:>10}  {:<40} {:>14} {:>12}\n", "send ms", "arrive ms", "message",
                     "node delay ms", "network ms");
  for (size_t k : order) {
    const TimelineEvent& ev = events[k];
    const PatternElement& e = p.elements[k];
    const char* kind = e.kind == MessageKind::kCall     ? "call"
                       : e.kind == MessageKind::kReturn ? "ret"
                                                        : "msg";
    std::string message =
        fmt::format("{} {} → {}", kind, set.nodes.Get(e.sender), set.nodes.Get(e.receiver));
    std::string delay = !ev.node_delay_known ? (e.parent < 0 ? "" : "?")
                        : ev.round_trip      ? fmt::format("◇ {} round trip", Ms(ev.node_delay))
                                             : Ms(ev.node_delay);
    out += fmt::format("  {:>10} {:>10}  {:<40} {:>14} {:>12}\n", Ms(ev.send), Ms(ev.arrive),
                       message, delay, ev.network_known ? Ms(ev.network) : "?");
  }
  return out;
}

namespace {

// A width no run of text of that length exceeds in a sans-serif font at `size` px (code
// points, not bytes, count), so labels are never cut off at the edge.
double TextWidth(std::string_view text, double size) {
  return double(CodePoints(text)) * size * 0.62 + 4;
}

// A tick step of 1, 2 or 5 times a power of ten giving about `n` ticks over `span`.
double TickStep(double span, int n) {
  const double raw = span / n, power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

// A node's visit: from a message's arrival at it (or the request's start, for the root's
// sender) to the last thing it did for that message, drawn as a bar on its lane.
struct Visit {
  size_t lane = 0;
  size_t row = 0;  // within the lane, when visits overlap
  double from = 0, to = 0;
  bool round_trip = false;  // through a node that was not traced
  std::string label;
  double left = 0, right = 0;  // pixels, label included
};

constexpr double kPlotWidth = 760, kRowHeight = 26, kLaneGap = 10, kTop = 62, kFont = 12;

}  // namespace

std::string TimelineSvg(const PathSet& set, uint32_t pattern) {
  const PathPattern& p = set.patterns[pattern];
  const std::vector<PatternElement>& elements = p.elements;
  std::vector<TimelineEvent> events = LayOutTimeline(set, pattern);
  const size_t n = elements.size();

  // Lanes: the root's sender, then each node in the order messages first reach it.
  std::vector<NodeId> lanes;
  auto lane_of = [&](NodeId node) {
    auto it = std::find(lanes.begin(), lanes.end(), node);
    if (it != lanes.end()) return size_t(it - lanes.begin());
    lanes.push_back(node);
    return lanes.size() - 1;
  };
  lane_of(elements[0].sender);
  for (const PatternElement& e : elements) lane_of(e.receiver);

  // One visit per element that the receiver acted on (it has children): from the arrival
  // to its last send, or the last reply it got back; the root's sender has one visit for
  // the whole request. A message nothing follows gets a mark at its arrival. A RETURN
  // arrives inside the visit of the node that made the call.
  std::vector<std::vector<size_t>> children(n);
  for (size_t k = 1; k < n; ++k) children[size_t(elements[k].parent)].push_back(k);
  std::vector<Visit> visits;
  std::vector<int> visit_of(n, -1);   // the visit an element's arrival lands in
  std::vector<int> sent_from(n, -1);  // the visit an element is sent from
  const size_t root_visit = visits.size();
  visits.push_back({.lane = 0, .from = 0, .to = 0});
  for (size_t k = 0; k < n; ++k) {
    const PatternElement& e = elements[k];
    sent_from[k] = e.parent < 0 ? int(root_visit) : visit_of[size_t(e.parent)];
    if (e.kind == MessageKind::kReturn && e.parent >= 0 && children[k].empty()) {
      visit_of[k] = sent_from[size_t(e.parent)];  // back in the caller's visit
      continue;
    }
    Visit v{.lane = lane_of(e.receiver), .from = events[k].arrive, .to = events[k].arrive};
    for (size_t c : children[k]) {
      v.to = std::max(v.to, events[c].send);
      v.round_trip = v.round_trip || elements[c].round_trip;
      for (size_t g : children[c]) {
        if (elements[g].receiver == e.receiver) v.to = std::max(v.to, events[g].arrive);
      }
    }
    visit_of[k] = int(visits.size());
    visits.push_back(v);
  }
  // The root's sender waits from its send to the last arrival back at it.
  for (size_t k = 0; k < n; ++k) {
    if (visit_of[k] == int(root_visit)) {
      visits[root_visit].to = std::max(visits[root_visit].to, events[k].arrive);
    }
  }

  double end = 1;
  for (const TimelineEvent& ev : events) end = std::max({end, ev.send, ev.arrive});
  double label_column = 0;
  for (NodeId node : lanes)
    label_column = std::max(label_column, TextWidth(set.nodes.Get(node), kFont));
  label_column += 24;
  auto x = [&](double t) { return label_column + t / end * kPlotWidth; };

  // Labels right of their bars; bars packed into rows per lane with their labels.
  double width = label_column + kPlotWidth + 20;
  std::vector<std::vector<std::vector<std::pair<double, double>>>> rows(lanes.size());
  for (size_t i = 0; i < visits.size(); ++i) {
    Visit& v = visits[i];
    const double length = v.to - v.from;
    if (i == root_visit) {
      v.label = fmt::format("{} ms end to end", Ms(length));
    } else if (v.round_trip) {
      v.label = fmt::format("◇ {} ms round trip (not traced)", Ms(length));
    } else if (length > 0) {
      v.label = fmt::format("{} ms", Ms(length));
    }
    v.left = x(v.from);
    const double bar_end = std::max(x(v.to), v.left + 3);
    v.right = v.label.empty() ? bar_end : bar_end + 6 + TextWidth(v.label, kFont - 1);
    width = std::max(width, v.right + 12);  // grow the canvas rather than cut a label
    auto& lane_rows = rows[v.lane];
    size_t r = 0;
    auto free = [&](const std::vector<std::pair<double, double>>& row) {
      for (const auto& [l, rt] : row) {
        if (!(v.right + 4 <= l || rt + 4 <= v.left)) return false;
      }
      return true;
    };
    while (r < lane_rows.size() && !free(lane_rows[r])) ++r;
    if (r == lane_rows.size()) lane_rows.emplace_back();
    lane_rows[r].push_back({v.left, v.right});
    v.row = r;
  }
  std::vector<double> lane_top(lanes.size());
  double y = kTop;
  for (size_t l = 0; l < lanes.size(); ++l) {
    lane_top[l] = y;
    y += double(std::max<size_t>(1, rows[l].size())) * kRowHeight + kLaneGap;
  }
  const double height = y + 16;
  auto row_y = [&](const Visit& v) { return lane_top[v.lane] + double(v.row) * kRowHeight + 5; };
  constexpr double kBar = 16;

  std::string title = fmt::format("{} — {} instances, mean {}", CompactShape(set, p), p.count,
                                  FormatDuration(TimeNs(p.latency.mean())));
  width = std::max(width, 20 + TextWidth(title, 14));
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"{}\">\n"
      "<defs><marker id=\"a\" markerWidth=\"8\" markerHeight=\"8\" refX=\"8\" refY=\"4\" "
      "orient=\"auto\"><path d=\"M0,0 L8,4 L0,8 z\" fill=\"#445\"/></marker></defs>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n"
      "<text x=\"10\" y=\"20\" font-size=\"14\">{}</text>\n",
      width, height, kFont, XmlEscape(title));
  // Lanes: a band and the node's name each.
  for (size_t l = 0; l < lanes.size(); ++l) {
    const double h = double(std::max<size_t>(1, rows[l].size())) * kRowHeight + kLaneGap;
    out += fmt::format(
        "<rect class=\"lane\" x=\"0\" y=\"{:.1f}\" width=\"{:.0f}\" height=\"{:.1f}\" "
        "fill=\"{}\"/>\n<text x=\"10\" y=\"{:.1f}\" font-weight=\"bold\">{}</text>\n",
        lane_top[l], width, h, l % 2 ? "#fbfcfe" : "#eef2f8", lane_top[l] + 17,
        XmlEscape(set.nodes.Get(lanes[l])));
  }
  // The time axis: ticks, grid lines, and labels kept inside the drawing.
  const double step = TickStep(end, 8);
  const int decimals = std::clamp(int(-std::floor(std::log10(step / 1e6) + 1e-9)), 0, 6);
  for (double t = 0; t <= end * (1 + 1e-9); t += step) {
    const std::string label = fmt::format("{:.{}f} ms", t / 1e6, decimals);
    const char* anchor = x(t) + TextWidth(label, 11) / 2 > width - 4 ? "end" : "middle";
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#d5dbe5\"/>\n"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" font-size=\"11\" fill=\"#556\" "
        "text-anchor=\"{4}\">{5}</text>\n",
        x(t), kTop - 6, height - 12, kTop - 12, anchor, label);
  }
  // Visits as bars (round trips through an untraced node as an elongated diamond).
  for (size_t i = 0; i < visits.size(); ++i) {
    const Visit& v = visits[i];
    const double top = row_y(v), left = x(v.from), right = std::max(x(v.to), left + 3);
    if (v.round_trip) {
      const double mid = top + kBar / 2, tip = std::min(8.0, (right - left) / 2);
      out += fmt::format(
          "<polygon class=\"visit\" points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f} "
          "{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" fill=\"#fde9c8\" stroke=\"#a66\"/>\n",
          left, mid, left + tip, top, right - tip, top, right, mid, right - tip, top + kBar,
          left + tip, top + kBar);
    } else {
      out += fmt::format(
          "<rect class=\"visit\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" "
          "rx=\"2\" fill=\"{}\"/>\n",
          left, top, right - left, kBar, i == root_visit ? "#9db7dc" : "#4f7fc4");
    }
    if (!v.label.empty()) {
      out +=
          fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{}\" fill=\"#223\">{}</text>\n",
                      right + 6, top + 12, kFont - 1, XmlEscape(v.label));
    }
  }
  // Messages: an arrow from the sender's visit at the send to the receiver's at the
  // arrival, with the one-way latency when both ends were timed and the sender's own time
  // before sending in its tooltip.
  for (size_t k = 0; k < n; ++k) {
    const TimelineEvent& ev = events[k];
    const PatternElement& e = elements[k];
    const Visit& from = visits[size_t(sent_from[k])];
    const Visit& to = visits[size_t(visit_of[k])];
    const double y1 = row_y(from) + kBar / 2, y2 = row_y(to) + kBar / 2;
    const double x1 = e.round_trip ? x(ev.arrive) : x(ev.send), x2 = x(ev.arrive);
    std::string tip = fmt::format("{} {} → {}",
                                  e.kind == MessageKind::kCall     ? "CALL"
                                  : e.kind == MessageKind::kReturn ? "RETURN"
                                                                   : "MSG",
                                  set.nodes.Get(e.sender), set.nodes.Get(e.receiver));
    if (ev.network_known) tip += fmt::format(", network {} ms", Ms(ev.network));
    if (ev.node_delay_known && e.parent >= 0 && !ev.round_trip) {
      tip += fmt::format(", sent {} ms after its last arrival at {}", Ms(ev.node_delay),
                         set.nodes.Get(e.sender));
    }
    out += fmt::format(
        "<line class=\"message\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
        "stroke=\"#445\" marker-end=\"url(#a)\"><title>{}</title></line>\n",
        x1, y1, x2,
        y2 + (y2 > y1   ? -kBar / 2
              : y2 < y1 ? kBar / 2
                        : 0),
        XmlEscape(tip));
  }
  out += "</svg>\n";
  return out;
}

std::map<std::string, LatencyHistogram> NodeOwnDelays(const PathSet& set) {
  // The delays that are a node's own time: an element's delay after its parent's arrival
  // at the sender when it is the parent's first child (a visit's first call, a message
  // hop), or a return from a visit that made no calls (the service time). A later call
  // or the return of a visit that made calls counts its callees' time too; round trips
  // through untraced nodes count the network's. Those are left out.
  std::map<std::string, LatencyHistogram> by_node;
  for (const PathPattern& p : set.patterns) {
    std::vector<int> children(p.elements.size(), 0);
    for (const PatternElement& e : p.elements) {
      if (e.parent >= 0) ++children[size_t(e.parent)];
    }
    for (size_t k = 1; k < p.elements.size(); ++k) {
      const PatternElement& e = p.elements[k];
      const PatternElement& parent = p.elements[size_t(e.parent)];
      const bool first_child = size_t(e.parent) + 1 == k;  // pre-order: it follows its parent
      const bool own =
          parent.receiver == e.sender && !e.round_trip &&
          (e.kind == MessageKind::kReturn ? children[size_t(e.parent)] == 1 : first_child);
      if (own && !e.delay.empty()) by_node[std::string(set.nodes.Get(e.sender))].Merge(e.delay);
    }
  }
  return by_node;
}

std::string NodeDelayHistograms(const PathSet& set) {
  std::map<std::string, LatencyHistogram> by_node = NodeOwnDelays(set);
  std::string out;
  for (const auto& [node, h] : by_node) {
    out += fmt::format("{}: mean {}  p50 {}  p90 {}  p99 {}  max {}\n", node,
                       FormatDuration(TimeNs(h.mean())), FormatDuration(h.Quantile(0.5)),
                       FormatDuration(h.Quantile(0.9)), FormatDuration(h.Quantile(0.99)),
                       FormatDuration(h.max()));
    // Bars per power-of-two range of positive delays (zeros and negatives, from skewed
    // clocks, are in the quantiles only): the histogram's bins summed per range.
    std::map<int, uint64_t> ranges;
    const LatencyHistogram::Side& side = h.positive();
    for (size_t i = 0; i < side.counts.size(); ++i) {
      const double low = LatencyHistogram::BinLow(side.first_bin + int32_t(i));
      ranges[int(std::floor(std::log2(std::max(low, 1.0)) + 1e-9))] += side.counts[i];
    }
    uint64_t peak = 0;
    for (const auto& [range, n] : ranges) peak = std::max(peak, n);
    for (int b = ranges.empty() ? 0 : ranges.begin()->first;
         !ranges.empty() && b <= ranges.rbegin()->first; ++b) {
      const uint64_t n = ranges.contains(b) ? ranges[b] : 0;
      out += fmt::format(
          "  {:>9} .. {:<9} {:5.1f}% {}\n", FormatDuration(TimeNs(std::ldexp(1.0, b))),
          FormatDuration(TimeNs(std::ldexp(1.0, b + 1))), 100.0 * double(n) / double(h.count()),
          std::string(size_t(std::llround(40.0 * double(n) / double(peak))), '#'));
    }
  }
  return out;
}

}  // namespace weft
