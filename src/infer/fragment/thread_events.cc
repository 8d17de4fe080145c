// Nodes are scanned each in its own time order (clocks of different hosts are not
// compared), except that nodes joined by process links (a fork, an exec, a thread's
// creation) are scanned together: they run on one host, and a child's first fragment must
// see its parent's designation at the fork.
#include "infer/fragment/thread_events.h"

#include <algorithm>
#include <span>

namespace weft {
namespace {

using Step = ThreadEvent::Step;

// Per node, the node all nodes joined to it by process links are ordered with (union-find
// over the links, whose two ends share a host's clock); a node without links is its own.
std::vector<ClockId> ClockOfNodes(const Trace& trace) {
  std::vector<uint32_t> root(trace.nodes().size());
  for (uint32_t n = 0; n < root.size(); ++n) root[n] = n;
  auto find = [&](uint32_t n) {
    while (root[n] != n) n = root[n] = root[root[n]];
    return n;
  };
  for (const ProcessLink& l : trace.process_links()) {
    uint32_t a = find(l.from.value()), b = find(l.to.value());
    root[std::max(a, b)] = std::min(a, b);
  }
  std::vector<ClockId> clock(root.size());
  for (uint32_t n = 0; n < root.size(); ++n) clock[n] = ClockId(find(n));
  return clock;
}

}  // namespace

Result<std::vector<ThreadEvent>> CollectThreadEvents(const Trace& trace) {
  const TraceColumns& c = trace.columns();
  const std::vector<ClockId> clock = ClockOfNodes(trace);
  bool threads = trace.empty();
  std::vector<ThreadEvent> events;
  events.reserve(2 * trace.size() + trace.process_links().size());
  for (size_t i = 0; i < trace.size(); ++i) {
    const uint32_t m = uint32_t(i);
    const uint32_t sender = c.sender[i].value(), receiver = c.receiver[i].value();
    if (c.send_time[i] != kNoTime && c.sender_thread[i].valid()) {
      events.push_back({clock[sender], sender, c.sender_thread[i], c.send_time[i], Step::kSend, m});
      TimeNs connected = c.kind[i] == MessageKind::kCall ? c.connect_time[i] : kNoTime;
      if (connected != kNoTime && connected <= c.send_time[i]) {
        events.push_back({clock[sender], sender, c.sender_thread[i], connected, Step::kConnect, m});
      }
    }
    if (c.recv_time[i] != kNoTime && c.receiver_thread[i].valid()) {
      events.push_back(
          {clock[receiver], receiver, c.receiver_thread[i], c.recv_time[i], Step::kReceive, m});
      if (c.kind[i] == MessageKind::kCall && c.accept_time[i] != kNoTime) {
        events.push_back(
            {clock[receiver], receiver, c.receiver_thread[i], c.accept_time[i], Step::kAccept, m});
      }
      // A call read in several reads is an input from its first: a proxy that streams a
      // request on (tinyproxy sends the head, then reads and sends the body) calls before
      // the last. Its last read is an input again, for a loop that served another between.
      if (c.kind[i] == MessageKind::kCall && c.first_read_time[i] != kNoTime) {
        events.push_back({clock[receiver], receiver, c.receiver_thread[i], c.first_read_time[i],
                          Step::kFirstRead, m});
      }
    }
    threads = threads || c.sender_thread[i].valid() || c.receiver_thread[i].valid();
  }
  const std::span<const ProcessLink> links = trace.process_links();
  for (size_t k = 0; k < links.size(); ++k) {
    const ProcessLink& l = links[k];
    const uint32_t from = l.from.value(), to = l.to.value();
    if (l.kind != ProcessLinkKind::kHandoff) {
      events.push_back({clock[from], from, l.from_thread, l.time, Step::kProcessLink, uint32_t(k)});
      continue;
    }
    events.push_back({clock[from], from, l.from_thread, l.time, Step::kHandOver, uint32_t(k)});
    events.push_back({clock[to], to, l.to_thread, l.TakenAt(), Step::kTakeOver, uint32_t(k)});
  }
  if (!threads) {
    return Status::InvalidArgument(
        "no message names its threads: the fragment algorithm needs a trace reconciled from a "
        "capture "
        "(weft capture, weft reconcile)");
  }
  std::sort(events.begin(), events.end(),
            [](const ThreadEvent& a, const ThreadEvent& b) { return a.Key() < b.Key(); });
  return events;
}

}  // namespace weft
