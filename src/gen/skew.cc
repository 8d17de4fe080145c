// skewer (Project 5 §7.5.6). The paper's skewer shifts one timestamp per message; weft's
// messages carry a send time on the sender's clock and a receive time on the receiver's
// clock, so each is shifted by its own node's offset.
#include "gen/skew.h"

#include <fmt/format.h>

#include <cmath>

#include "gen/random.h"

namespace weft {
namespace {

// `time` moved by `offset` into *out; kNoTime stays kNoTime. False if the sum overflows or
// lands on kNoTime.
bool Shift(TimeNs time, TimeNs offset, TimeNs* out) {
  if (time == kNoTime) {
    *out = kNoTime;
    return true;
  }
  return !__builtin_add_overflow(time, offset, out) && *out != kNoTime;
}

}  // namespace

Result<std::pair<std::string, TimeNs>> ParseNodeOffset(std::string_view text) {
  size_t eq = text.rfind('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    return Status::InvalidArgument("bad offset '{}' (want NODE=+30ms or NODE=-5ms)", text);
  }
  std::string_view value = text.substr(eq + 1);
  if (value.starts_with('+')) value.remove_prefix(1);
  Result<TimeNs> d = ParseDuration(value);
  if (!d.ok()) return Status::InvalidArgument("offset '{}': {}", text, d.status().message());
  return std::pair<std::string, TimeNs>(std::string(text.substr(0, eq)), *d);
}

Result<Trace> SkewTrace(const Trace& trace, const SkewOptions& options,
                        std::vector<TimeNs>* applied) {
  // Far beyond any clock skew worth testing, and far from overflowing a time.
  constexpr TimeNs kMaxOffset = 24 * 3600 * kSecond;
  if (options.random_sd < 0 || options.random_sd > kMaxOffset / 10) {
    return Status::InvalidArgument("random offset deviation must be from 0 to {}",
                                   FormatDuration(kMaxOffset / 10));
  }
  for (const auto& [name, value] : options.offsets) {
    if (value > kMaxOffset || value < -kMaxOffset) {
      return Status::InvalidArgument("offset of '{}' is beyond +-{}", name,
                                     FormatDuration(kMaxOffset));
    }
  }
  const NodeTable& nodes = trace.nodes();
  std::vector<TimeNs> offset(nodes.size(), 0);
  if (options.random_sd > 0) {
    Random rng(options.seed);
    for (TimeNs& o : offset) o = TimeNs(std::llround(double(options.random_sd) * rng.Gaussian()));
  }
  for (const auto& [name, value] : options.offsets) {
    NodeId id = nodes.Find(name);
    if (!id.valid()) {
      std::vector<std::string_view> known;
      for (size_t i = 0; i < nodes.size() && i < 30; ++i) known.push_back(nodes.Get(NodeId(i)));
      return Status::NotFound("unknown node '{}' (the trace has: {}{})", name,
                              fmt::join(known, ", "), nodes.size() > 30 ? ", ..." : "");
    }
    offset[id.value()] = value;
  }
  TraceBuilder builder;
  builder.nodes() = nodes;
  builder.strings() = trace.strings();
  for (size_t i = 0; i < trace.size(); ++i) {
    MessageRecord r = trace.Row(MessageId(uint32_t(i)));
    // A connection's connect time is on its sender's clock, like the send; its accept
    // time on its receiver's.
    for (auto [time, node] : {std::pair{&r.send_time, r.sender},
                              {&r.connect_time, r.sender},
                              {&r.recv_time, r.receiver},
                              {&r.accept_time, r.receiver},
                              {&r.first_read_time, r.receiver}}) {
      if (!Shift(*time, offset[node.value()], time)) {
        return Status::OutOfRange("message {}: shifted time overflows", i);
      }
    }
    // truth_parent stays the old MessageId: rows are added in the old order, so it is
    // also the parent's row number, which Finish() remaps.
    builder.Add(r);
  }
  for (const Attribute& a : trace.attributes())
    builder.AddAttribute(a.message.value(), a.key, a.value);
  // A process link's time is on the clock of the host its two ends share: the creator's.
  for (ProcessLink link : trace.process_links()) {
    if (!Shift(link.time, offset[link.from.value()], &link.time) ||
        (link.to_time != kNoTime &&
         !Shift(link.to_time, offset[link.from.value()], &link.to_time))) {
      return Status::OutOfRange("process link at {}: shifted time overflows", link.time);
    }
    builder.AddProcessLink(link);
  }
  if (applied) *applied = offset;
  return std::move(builder).Finish();
}

}  // namespace weft
