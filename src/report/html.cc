// The HTML report's data: everything the page draws, as one JSON document that the page's
// script reads (see html.h; the page itself is in html_page.cc).
#include "report/html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "report/describe.h"
#include "report/requests.h"
#include "report/timeline.h"

namespace weft {

extern const std::string_view kHtmlPageHead;  // html_page.cc: up to the data
extern const std::string_view kHtmlPageTail;  // after the data

namespace {

using Json = nlohmann::json;

// A histogram for drawing: its quantiles, and its positive values summed per half
// octave (a factor of √2: a few dozen bars from microseconds to seconds, fine enough to
// see two modes). Zeros and negatives (skewed clocks) are counted apart. Counts are
// divided by `unit`: alternatives (linking) count kProbabilityUnits x their probability
// times, so that the page shows expected counts.
Json HistogramJson(const LatencyHistogram& h, double unit) {
  auto scaled = [unit](uint64_t n) -> Json {
    return unit == 1 ? Json(n) : Json(std::round(double(n) / unit * 10) / 10);
  };
  Json j = {{"n", scaled(h.count())},    {"mean", h.mean()},        {"p50", h.Quantile(0.5)},
            {"p90", h.Quantile(0.9)},    {"p99", h.Quantile(0.99)}, {"max", h.max()},
            {"zeros", scaled(h.zeros())}};
  uint64_t negative = 0;
  for (uint64_t n : h.negative().counts) negative += n;
  j["negative"] = scaled(negative);
  std::map<int, uint64_t> ranges;
  const LatencyHistogram::Side& side = h.positive();
  for (size_t i = 0; i < side.counts.size(); ++i) {
    if (side.counts[i] == 0) continue;
    const double low = LatencyHistogram::BinLow(side.first_bin + int32_t(i));
    ranges[int(std::floor(2 * std::log2(std::max(low, 1.0)) + 1e-9))] += side.counts[i];
  }
  Json bins = Json::array();
  if (!ranges.empty()) {
    for (int b = ranges.begin()->first; b <= ranges.rbegin()->first; ++b) {
      auto it = ranges.find(b);
      bins.push_back(
          {std::exp2(b / 2.0), std::exp2((b + 1) / 2.0), it == ranges.end() ? 0 : it->second});
    }
  }
  j["bins"] = std::move(bins);
  return j;
}

char KindLetter(MessageKind kind) {
  return kind == MessageKind::kCall ? 'C' : kind == MessageKind::kReturn ? 'R' : 'M';
}

std::string AttributeText(const Trace& trace, MessageId m) {
  std::string out;
  for (const Attribute& a : trace.AttributesOf(m)) {
    std::string_view key = trace.strings().Get(a.key);
    if (key.starts_with("payload.")) continue;  // raw bytes, not for reading
    std::string_view value = trace.strings().Get(a.value);
    if (value.size() > 120) value = value.substr(0, 120);
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", key, value);
  }
  return out;
}

Json PatternJson(const PathSet& set, uint32_t p, size_t rank, uint64_t total) {
  const PathPattern& pattern = set.patterns[p];
  const double unit = set.shared_messages ? kProbabilityUnits : 1;
  Json elements = Json::array();
  for (const PatternElement& e : pattern.elements) {
    Json el = {{"kind", std::string(1, KindLetter(e.kind))},
               {"from", set.nodes.Get(e.sender)},
               {"to", set.nodes.Get(e.receiver)},
               {"parent", e.parent},
               {"round_trip", e.round_trip},
               {"attrs", DescribeAttributes(e, pattern.count)}};
    if (!e.delay.empty()) el["delay"] = HistogramJson(e.delay, unit);
    elements.push_back(std::move(el));
  }
  return {{"rank", rank},
          {"index", p},
          {"count", pattern.count},
          {"expected", pattern.expected_count},
          {"share", total ? double(pattern.count) / double(total) : 0.0},
          {"shape", CompactShape(set, pattern)},
          {"latency", HistogramJson(pattern.latency, unit)},
          {"elements", std::move(elements)}};
}

// One request for its waterfall: the nodes it visits (a lane each, in order of first
// appearance) and a span per CALL or MSG, with the RETURN of a CALL folded into it. Times
// are offsets from the request's start, null when not observed.
Json RequestJson(const PathSet& set, const Trace& trace, const RequestTiming& r) {
  const TraceColumns& c = trace.columns();
  auto msgs = set.InstanceMessages(r.instance);
  auto parents = set.InstanceParents(r.instance);
  auto offset = [&](TimeNs t) -> Json { return t == kNoTime ? Json() : Json(t - r.start); };
  std::vector<NodeId> lanes;
  auto lane = [&](NodeId n) {
    auto it = std::find(lanes.begin(), lanes.end(), n);
    if (it != lanes.end()) return size_t(it - lanes.begin());
    lanes.push_back(n);
    return lanes.size() - 1;
  };
  std::vector<int> span_of(msgs.size(), -1);
  std::vector<MessageId> return_of(msgs.size(), MessageId());
  for (size_t k = 0; k < msgs.size(); ++k) {
    if (parents[k] >= 0 && c.kind[msgs[k].value()] == MessageKind::kReturn)
      return_of[size_t(parents[k])] = msgs[k];
  }
  Json spans = Json::array();
  for (size_t k = 0; k < msgs.size(); ++k) {
    const uint32_t m = msgs[k].value();
    if (c.kind[m] == MessageKind::kReturn) continue;
    int parent = -1;
    for (int32_t a = parents[k]; a >= 0 && parent < 0; a = parents[size_t(a)]) {
      parent = span_of[size_t(a)];
    }
    span_of[k] = int(spans.size());
    const size_t from = lane(c.sender[m]), to = lane(c.receiver[m]);
    Json span = {{"parent", parent},
                 {"kind", std::string(1, KindLetter(c.kind[m]))},
                 {"from", from},
                 {"to", to},
                 {"send", offset(c.send_time[m])},
                 {"recv", offset(c.recv_time[m])}};
    if (return_of[k].valid()) {
      span["ret_send"] = offset(c.send_time[return_of[k].value()]);
      span["ret_recv"] = offset(c.recv_time[return_of[k].value()]);
    }
    std::string attrs = AttributeText(trace, msgs[k]);
    if (!attrs.empty()) span["attrs"] = std::move(attrs);
    spans.push_back(std::move(span));
  }
  Json names = Json::array();
  for (NodeId n : lanes) names.push_back(trace.NodeName(n));
  return {{"id", r.instance},
          {"pattern", set.pattern[r.instance]},
          {"probability", set.probability[r.instance]},
          {"start", FormatTimestamp(r.start)},
          {"latency", r.latency},
          {"lanes", std::move(names)},
          {"spans", std::move(spans)}};
}

// Which requests to embed: a few from each pattern shown (its slowest, median and
// fastest), then the slowest overall, up to the cap; slowest first.
Json RequestsJson(const PathSet& set, const Trace& trace, const std::vector<uint32_t>& ranked,
                  const std::vector<RequestTiming>& by_latency, const HtmlReportOptions& o) {
  std::vector<bool> shown(set.patterns.size(), false);
  for (uint32_t p : ranked) shown[p] = true;
  std::vector<std::vector<size_t>> of_pattern(set.patterns.size());
  for (size_t i = 0; i < by_latency.size(); ++i) {
    const uint32_t p = set.pattern[by_latency[i].instance];
    if (shown[p]) of_pattern[p].push_back(i);
  }
  std::vector<bool> chosen(by_latency.size(), false);
  size_t count = 0;
  const size_t per_pattern =
      std::min(o.examples_per_pattern, ranked.empty() ? 0 : o.max_waterfalls / ranked.size());
  for (uint32_t p : ranked) {
    const std::vector<size_t>& list = of_pattern[p];
    if (list.empty() || per_pattern == 0) continue;
    for (size_t j = 0; j < per_pattern; ++j) {
      // Evenly spread from the slowest to the fastest.
      size_t at = per_pattern == 1 ? 0 : j * (list.size() - 1) / (per_pattern - 1);
      if (!chosen[list[at]]) chosen[list[at]] = true, ++count;
    }
  }
  size_t slowest = 0;
  for (size_t i = 0; i < by_latency.size() && count < o.max_waterfalls; ++i) {
    if (!chosen[i]) chosen[i] = true, ++count;
    slowest = i + 1;
  }
  Json items = Json::array();
  for (size_t i = 0; i < by_latency.size(); ++i) {
    if (chosen[i]) items.push_back(RequestJson(set, trace, by_latency[i]));
  }
  return {{"total", by_latency.size()},
          {"embedded", items.size()},
          {"slowest_prefix", slowest},
          {"per_pattern", per_pattern},
          {"items", std::move(items)}};
}

}  // namespace

Result<std::string> HtmlReport(const PathSet& set, const HtmlReportOptions& o) {
  std::vector<uint32_t> ranked = o.ranked;
  if (ranked.empty()) {
    for (uint32_t p = 0; p < set.patterns.size(); ++p) ranked.push_back(p);
  }
  uint64_t total = 0;
  for (const PathPattern& p : set.patterns) total += p.count;
  Json data = {{"title", o.title},
               {"algorithm", set.algorithm},
               {"instances", set.instance_count()},
               {"patterns_total", set.patterns.size()},
               {"trace_messages", set.trace_messages},
               {"notice", o.notice},
               {"weighted", set.shared_messages},
               {"probabilistic", std::any_of(set.probability.begin(), set.probability.end(),
                                             [](double p) { return p < 1; })}};
  Json patterns = Json::array();
  for (size_t rank = 0; rank < ranked.size(); ++rank) {
    patterns.push_back(PatternJson(set, ranked[rank], rank + 1, total));
  }
  data["patterns"] = std::move(patterns);
  if (o.trace != nullptr) {
    WEFT_ASSIGN_OR_RETURN(std::vector<RequestTiming> by_latency,
                          SlowestRequests(set, *o.trace, set.instance_count()));
    data["requests"] = RequestsJson(set, *o.trace, ranked, by_latency, o);
  }
  Json delays = Json::array();
  for (const auto& [node, h] : NodeOwnDelays(set)) {
    Json d = HistogramJson(h, set.shared_messages ? kProbabilityUnits : 1);
    d["node"] = node;
    delays.push_back(std::move(d));
  }
  data["node_delays"] = std::move(delays);
  if (!o.accuracy_text.empty()) {
    Json figures = Json::array();
    for (const auto& [label, value] : o.accuracy_figures) figures.push_back({label, value});
    data["accuracy"] = {
        {"source", o.accuracy_source}, {"text", o.accuracy_text}, {"figures", figures}};
  }
  // In a <script> element only "</" can end the data early; escape it as JSON allows.
  std::string json = data.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string page(kHtmlPageHead);
  page.reserve(page.size() + json.size() + kHtmlPageTail.size() + 64);
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') {
      page += "<\\/";
      ++i;
    } else {
      page += json[i];
    }
  }
  page += kHtmlPageTail;
  return page;
}

}  // namespace weft
