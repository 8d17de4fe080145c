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

std::string TimelineSvg(const PathSet& set, uint32_t pattern) {
  const PathPattern& p = set.patterns[pattern];
  std::vector<TimelineEvent> events = LayOutTimeline(set, pattern);
  double end = 1;
  for (const TimelineEvent& ev : events) end = std::max({end, ev.send, ev.arrive});
  // One row per node appearance: the root's sender, then each arrival in pre-order.
  constexpr int kLeft = 20, kWidth = 900, kRow = 46, kTop = 50, kBox = 70;
  const int height = kTop + kRow * int(events.size() + 1) + 30;
  auto x = [&](double t) { return kLeft + kBox / 2 + t / end * (kWidth - kBox); };
  auto y = [&](int row) { return kTop + kRow * row; };
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" "
      "font-size=\"12\">\n<defs><marker id=\"a\" markerWidth=\"8\" markerHeight=\"8\" refX=\"8\" "
      "refY=\"4\" "
      "orient=\"auto\"><path d=\"M0,0 L8,4 L0,8 z\"/></marker></defs>\n"
      "<text x=\"{}\" y=\"20\" font-size=\"14\">{} — {} instances, mean {}</text>\n",
      kWidth + 2 * kLeft, height, kLeft, XmlEscape(CompactShape(set, p)), p.count,
      XmlEscape(FormatDuration(TimeNs(p.latency.mean()))));
  auto box = [&](double t, int row, std::string_view name, bool diamond, std::string_view label) {
    const double cx = x(t), cy = y(row);
    if (diamond) {
      out += fmt::format(
          "<polygon points=\"{:.1f},{} {:.1f},{} {:.1f},{} {:.1f},{}\" fill=\"#fde9c8\" "
          "stroke=\"#a66\"/>\n",
          cx - kBox / 2.0, cy, cx, cy - 16, cx + kBox / 2.0, cy, cx, cy + 16);
    } else {
      out += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{}\" width=\"{}\" height=\"24\" rx=\"4\" fill=\"#dbe8f6\" "
          "stroke=\"#468\"/>\n",
          cx - kBox / 2.0, cy - 12, kBox);
    }
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", cx, cy + 4,
                       XmlEscape(name));
    if (!label.empty()) {
      out += fmt::format(
          "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10\" "
          "fill=\"#555\">{}</text>\n",
          cx, cy + 24, XmlEscape(label));
    }
  };
  box(0, 0, set.nodes.Get(p.elements[0].sender), false, "");
  for (size_t k = 0; k < events.size(); ++k) {
    const TimelineEvent& ev = events[k];
    const PatternElement& e = p.elements[k];
    // The row the sender appears in: the parent's arrival at it, else its own first row.
    int from_row = 0;
    if (e.parent >= 0 && p.elements[size_t(e.parent)].receiver == e.sender) from_row = e.parent + 1;
    const int to_row = int(k) + 1;
    out += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#333\" "
        "marker-end=\"url(#a)\"/>\n",
        x(ev.send), y(from_row) + 12, x(ev.arrive), y(to_row) - 12);
    if (ev.network_known) {
      out += fmt::format(
          "<text x=\"{:.1f}\" y=\"{}\" font-size=\"10\" fill=\"#236\">{} ms</text>\n",
          (x(ev.send) + x(ev.arrive)) / 2 + 4, (y(from_row) + y(to_row)) / 2, Ms(ev.network));
    }
    std::string label;
    if (ev.round_trip)
      label = fmt::format("{} ms via {}", Ms(ev.node_delay), set.nodes.Get(e.sender));
    else if (ev.node_delay_known && e.parent >= 0)
      label = fmt::format("+{} ms at {}", Ms(ev.node_delay), set.nodes.Get(e.sender));
    box(ev.arrive, to_row, set.nodes.Get(e.receiver), ev.round_trip, label);
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
