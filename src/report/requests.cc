#include "report/requests.h"

#include <fmt/format.h>

#include <algorithm>

#include "report/describe.h"

namespace weft {
namespace {

TimeNs LastTime(const TraceColumns& c, MessageId m) {
  return std::max(c.send_time[m.value()], c.recv_time[m.value()]);  // kNoTime is the smallest
}

}  // namespace

Result<std::vector<RequestTiming>> SlowestRequests(const PathSet& set, const Trace& trace,
                                                   size_t n) {
  if (set.trace_messages != trace.size() || set.trace_fingerprint != TraceFingerprint(trace)) {
    return Status::InvalidArgument(
        "the paths were inferred from another trace ({} messages, not {})", set.trace_messages,
        trace.size());
  }
  const TraceColumns& c = trace.columns();
  std::vector<RequestTiming> all;
  all.reserve(set.instance_count());
  for (size_t i = 0; i < set.instance_count(); ++i) {
    auto msgs = set.InstanceMessages(i);
    RequestTiming r{.instance = uint32_t(i), .start = trace.SortTime(msgs[0])};
    TimeNs last = r.start;
    for (MessageId m : msgs) last = std::max(last, LastTime(c, m));
    r.latency = last - r.start;
    all.push_back(r);
  }
  n = std::min(n, all.size());
  std::partial_sort(all.begin(), all.begin() + ptrdiff_t(n), all.end(),
                    [](const RequestTiming& a, const RequestTiming& b) {
                      return a.latency != b.latency ? a.latency > b.latency
                                                    : a.instance < b.instance;
                    });
  all.resize(n);
  return all;
}

std::string FormatRequest(const PathSet& set, const Trace& trace, const RequestTiming& request) {
  const TraceColumns& c = trace.columns();
  auto msgs = set.InstanceMessages(request.instance);
  auto parents = set.InstanceParents(request.instance);
  const PathPattern& pattern = set.patterns[set.pattern[request.instance]];
  std::string out =
      fmt::format("request {} at {}: {} end to end, pattern {} ({} requests)\n", request.instance,
                  FormatTimestamp(request.start), FormatDuration(request.latency),
                  CompactShape(set, pattern), pattern.count);
  std::vector<int> depth(msgs.size(), 0);
  std::vector<TimeNs> returned(msgs.size(), kNoTime);  // per CALL: its RETURN's arrival
  for (size_t k = 0; k < msgs.size(); ++k) {
    if (parents[k] >= 0) depth[k] = depth[size_t(parents[k])] + 1;
    if (parents[k] >= 0 && c.kind[msgs[k].value()] == MessageKind::kReturn) {
      returned[size_t(parents[k])] = c.recv_time[msgs[k].value()];
    }
  }
  for (size_t k = 0; k < msgs.size(); ++k) {
    const uint32_t m = msgs[k].value();
    if (c.kind[m] == MessageKind::kReturn) continue;
    const TimeNs at = trace.SortTime(msgs[k]);
    std::string took = c.send_time[m] != kNoTime && returned[k] != kNoTime
                           ? FormatDuration(returned[k] - c.send_time[m])
                           : std::string("-");
    std::string line =
        fmt::format("  {:>10}  {:{}}{} {}→{}", "+" + FormatDuration(at - request.start), "",
                    2 * depth[k], c.kind[m] == MessageKind::kCall ? "CALL" : "MSG",
                    trace.NodeName(c.sender[m]), trace.NodeName(c.receiver[m]));
    out += fmt::format("{:<64} {:>9}", line, took);
    for (const Attribute& a : trace.AttributesOf(msgs[k])) {
      // Payload bytes (capture --payload-prefix, for tests) are not for reading here.
      if (trace.strings().Get(a.key).starts_with("payload.")) continue;
      out += fmt::format("  {}={}", trace.strings().Get(a.key), trace.strings().Get(a.value));
    }
    out += "\n";
  }
  return out;
}

}  // namespace weft
