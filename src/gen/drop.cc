// Sniffer loss (Project 5 §7.5.5): a FIFO queue of finite length served at a constant peak
// capture rate; a message that finds the queue full is dropped.
#include "gen/drop.h"

#include <absl/container/flat_hash_set.h>
#include <fmt/format.h>

#include <cmath>
#include <vector>

namespace weft {

Result<Trace> DropMessages(const Trace& trace, const DropOptions& options, DropSummary* summary) {
  if (!(options.rate > 0) || !std::isfinite(options.rate)) {
    return Status::InvalidArgument("--rate must be a positive number of messages per second");
  }
  if (options.queue == 0) return Status::InvalidArgument("--queue must be at least 1");
  const size_t n = trace.size();
  const TraceColumns& c = trace.columns();
  const double service_ns = std::round(1e9 / options.rate);
  const TimeNs service = service_ns >= 9e18 ? TimeNs(9e18) : TimeNs(service_ns);

  // Completion times of the messages in the queue, a ring of `queue` entries; they are
  // increasing, so the finished ones are always at the head.
  std::vector<TimeNs> ring(options.queue);
  size_t head = 0, count = 0;
  TimeNs last_done = std::numeric_limits<TimeNs>::min();
  std::vector<bool> dropped(n, false);
  absl::flat_hash_set<uint32_t> paths, lost;
  uint64_t drops = 0;
  for (size_t i = 0; i < n; ++i) {
    const TimeNs t = trace.SortTime(MessageId(uint32_t(i)));
    while (count > 0 && ring[head] <= t) {
      head = (head + 1) % ring.size();
      --count;
    }
    const PathId path = c.truth_path[i];
    if (path.valid()) paths.insert(path.value());
    if (count == ring.size()) {
      dropped[i] = true;
      ++drops;
      if (path.valid()) lost.insert(path.value());
      continue;
    }
    last_done = std::max(last_done, t) + service;
    ring[(head + count) % ring.size()] = last_done;
    ++count;
  }

  TraceBuilder builder;
  builder.nodes() = trace.nodes();
  builder.strings() = trace.strings();
  constexpr uint32_t kGone = UINT32_MAX;
  std::vector<uint32_t> new_row(n, kGone);
  for (size_t i = 0; i < n; ++i) {
    if (dropped[i]) continue;
    MessageRecord r = trace.Row(MessageId(uint32_t(i)));
    if (r.truth_path.valid() && lost.contains(r.truth_path.value())) {
      r.truth_path = PathId();
      r.truth_parent = MessageId();
    } else if (r.truth_parent.valid()) {
      const uint32_t parent = new_row[r.truth_parent.value()];
      r.truth_parent = parent == kGone ? MessageId() : MessageId(parent);
    }
    new_row[i] = builder.Add(r);
  }
  for (const Attribute& a : trace.attributes()) {
    const uint32_t row = new_row[a.message.value()];
    if (row != kGone) builder.AddAttribute(row, a.key, a.value);
  }
  if (summary) {
    summary->messages = n;
    summary->dropped = drops;
    summary->paths = paths.size();
    summary->paths_lost = lost.size();
  }
  return std::move(builder).Finish();
}

std::string FormatDropSummary(const DropSummary& s) {
  double percent = s.messages ? 100.0 * double(s.dropped) / double(s.messages) : 0.0;
  return fmt::format("dropped {} of {} messages ({:.2f}%); {} of {} path instances lost a message",
                     s.dropped, s.messages, percent, s.paths_lost, s.paths);
}

}  // namespace weft
