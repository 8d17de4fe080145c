#include "trace/trace.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace weft {

std::string_view MessageKindOp(MessageKind kind) {
  switch (kind) {
    case MessageKind::kCall:
      return "CALL_SENT";
    case MessageKind::kReturn:
      return "RET_SENT";
    case MessageKind::kMessage:
      return "MSG_SENT";
  }
  return "?";
}

std::string_view ProcessLinkKindName(ProcessLinkKind kind) {
  switch (kind) {
    case ProcessLinkKind::kFork:
      return "FORK";
    case ProcessLinkKind::kExec:
      return "EXEC";
    case ProcessLinkKind::kThread:
      return "THREAD";
    case ProcessLinkKind::kHandoff:
      return "HANDOFF";
  }
  return "?";
}

void TraceColumns::Resize(size_t n) {
  send_time.resize(n, kNoTime);
  recv_time.resize(n, kNoTime);
  sender.resize(n);
  receiver.resize(n);
  kind.resize(n, MessageKind::kMessage);
  call_id.resize(n);
  bytes.resize(n, -1);
  sender_thread.resize(n, ThreadId());
  receiver_thread.resize(n, ThreadId());
  sender_endpoint.resize(n);
  receiver_endpoint.resize(n);
  connect_time.resize(n, kNoTime);
  accept_time.resize(n, kNoTime);
  first_read_time.resize(n, kNoTime);
  truth_path.resize(n);
  truth_parent.resize(n);
}

Result<Trace> Trace::FromParts(NodeTable nodes, StringTable strings, TraceColumns columns,
                               std::vector<Attribute> attributes,
                               std::vector<ProcessLink> process_links) {
  const size_t n = columns.send_time.size();
  const size_t sizes[] = {columns.recv_time.size(),       columns.sender.size(),
                          columns.receiver.size(),        columns.kind.size(),
                          columns.call_id.size(),         columns.bytes.size(),
                          columns.sender_thread.size(),   columns.receiver_thread.size(),
                          columns.sender_endpoint.size(), columns.receiver_endpoint.size(),
                          columns.truth_path.size(),      columns.truth_parent.size(),
                          columns.connect_time.size(),    columns.first_read_time.size(),
                          columns.accept_time.size()};
  for (size_t s : sizes) {
    if (s != n) return Status::Corruption("columns have different lengths ({} and {})", n, s);
  }
  if (n >= MessageId::kInvalidValue) return Status::OutOfRange("{} messages is too many", n);
  auto optional_string_ok = [&](StringId id) { return !id.valid() || strings.Contains(id); };
  TimeNs previous = std::numeric_limits<TimeNs>::min();
  for (size_t i = 0; i < n; ++i) {
    TimeNs t = columns.send_time[i] != kNoTime ? columns.send_time[i] : columns.recv_time[i];
    if (t == kNoTime) return Status::Corruption("message {} has neither send nor receive time", i);
    if (t < previous) return Status::Corruption("message {} is out of time order", i);
    previous = t;
    if (!nodes.Contains(columns.sender[i]) || !nodes.Contains(columns.receiver[i])) {
      return Status::Corruption("message {} names a node that does not exist", i);
    }
    if (uint8_t(columns.kind[i]) >= kMessageKindCount) {
      return Status::Corruption("message {} has unknown kind {}", i, int(columns.kind[i]));
    }
    if (!optional_string_ok(columns.call_id[i]) ||
        !optional_string_ok(columns.sender_endpoint[i]) ||
        !optional_string_ok(columns.receiver_endpoint[i])) {
      return Status::Corruption("message {} names a string that does not exist", i);
    }
    MessageId parent = columns.truth_parent[i];
    if (parent.valid() && parent.value() >= n) {
      return Status::Corruption("message {} has parent {} beyond the last message", i,
                                parent.value());
    }
    if (parent.valid() && parent.value() == i) {
      return Status::Corruption("message {} is its own parent", i);
    }
    const TimeNs accepted = columns.accept_time[i];
    if (accepted != kNoTime &&
        (columns.recv_time[i] == kNoTime || accepted > columns.recv_time[i])) {
      return Status::Corruption("message {} has an accept time but a later or no receive time", i);
    }
    const TimeNs first_read = columns.first_read_time[i];
    if (first_read != kNoTime &&
        (columns.recv_time[i] == kNoTime || first_read > columns.recv_time[i])) {
      return Status::Corruption("message {} has a first read time but a later or no receive time",
                                i);
    }
  }
  for (size_t i = 0; i < attributes.size(); ++i) {
    const Attribute& a = attributes[i];
    if (a.message.value() >= n || !strings.Contains(a.key) || !strings.Contains(a.value)) {
      return Status::Corruption("attribute {} refers to a missing message or string", i);
    }
    if (i > 0 && attributes[i - 1].message > a.message) {
      return Status::Corruption("attribute {} is out of message order", i);
    }
  }
  for (size_t i = 0; i < process_links.size(); ++i) {
    const ProcessLink& l = process_links[i];
    if (l.time == kNoTime || !nodes.Contains(l.from) || !nodes.Contains(l.to) ||
        !l.from_thread.valid() || !l.to_thread.valid() ||
        uint8_t(l.kind) >= kProcessLinkKindCount) {
      return Status::Corruption("process link {} has no time, an unknown node, thread or kind", i);
    }
    if ((l.from_message.valid() && l.from_message.value() >= n) ||
        (l.to_message.valid() && l.to_message.value() >= n)) {
      return Status::Corruption("process link {} names a message beyond the last", i);
    }
    if (l.to_time != kNoTime && l.to_time < l.time) {
      return Status::Corruption("process link {} is taken over before it was handed over", i);
    }
    if (i > 0 && process_links[i - 1].time > l.time) {
      return Status::Corruption("process link {} is out of time order", i);
    }
  }
  Trace trace;
  trace.nodes_ = std::move(nodes);
  trace.strings_ = std::move(strings);
  trace.columns_ = std::move(columns);
  trace.attributes_ = std::move(attributes);
  trace.process_links_ = std::move(process_links);
  return trace;
}

std::span<const Attribute> Trace::AttributesOf(MessageId m) const {
  auto lo = std::lower_bound(attributes_.begin(), attributes_.end(), m,
                             [](const Attribute& a, MessageId id) { return a.message < id; });
  auto hi = lo;
  while (hi != attributes_.end() && hi->message == m) ++hi;
  return {lo, hi};
}

MessageRecord Trace::Row(MessageId m) const {
  const size_t i = m.value();
  const TraceColumns& c = columns_;
  return MessageRecord{c.send_time[i],
                       c.recv_time[i],
                       c.sender[i],
                       c.receiver[i],
                       c.kind[i],
                       c.call_id[i],
                       c.bytes[i],
                       c.sender_thread[i],
                       c.receiver_thread[i],
                       c.sender_endpoint[i],
                       c.receiver_endpoint[i],
                       c.truth_path[i],
                       c.truth_parent[i],
                       c.connect_time[i],
                       c.accept_time[i],
                       c.first_read_time[i]};
}

bool Trace::HasTruth() const {
  return std::any_of(columns_.truth_path.begin(), columns_.truth_path.end(),
                     [](PathId p) { return p.valid(); });
}

size_t Trace::MemoryBytes() const {
  const TraceColumns& c = columns_;
  size_t bytes =
      c.size() * (2 * sizeof(TimeNs) + 2 * sizeof(NodeId) + sizeof(MessageKind) + sizeof(StringId) +
                  sizeof(int64_t) + 2 * sizeof(uint32_t) + 2 * sizeof(StringId) + sizeof(PathId) +
                  sizeof(MessageId) + 3 * sizeof(TimeNs));
  bytes += attributes_.size() * sizeof(Attribute) + process_links_.size() * sizeof(ProcessLink);
  for (size_t i = 0; i < nodes_.size(); ++i) bytes += nodes_.Get(NodeId(uint32_t(i))).size() + 48;
  for (size_t i = 0; i < strings_.size(); ++i)
    bytes += strings_.Get(StringId(uint32_t(i))).size() + 48;
  return bytes;
}

uint32_t TraceBuilder::Add(const MessageRecord& r) {
  uint32_t row = uint32_t(columns_.size());
  TraceColumns& c = columns_;
  c.send_time.push_back(r.send_time);
  c.recv_time.push_back(r.recv_time);
  c.sender.push_back(r.sender);
  c.receiver.push_back(r.receiver);
  c.kind.push_back(r.kind);
  c.call_id.push_back(r.call_id);
  c.bytes.push_back(r.bytes);
  c.sender_thread.push_back(r.sender_thread);
  c.receiver_thread.push_back(r.receiver_thread);
  c.sender_endpoint.push_back(r.sender_endpoint);
  c.receiver_endpoint.push_back(r.receiver_endpoint);
  c.truth_path.push_back(r.truth_path);
  c.truth_parent.push_back(r.truth_parent);
  c.connect_time.push_back(r.connect_time);
  c.accept_time.push_back(r.accept_time);
  c.first_read_time.push_back(r.first_read_time);
  return row;
}

void TraceBuilder::AddAttribute(uint32_t row, StringId key, StringId value) {
  attributes_.push_back(Attribute{MessageId(row), key, value});
}

namespace {

template <typename T>
void Permute(std::vector<T>& column, const std::vector<uint32_t>& order) {
  std::vector<T> sorted(column.size());
  for (size_t i = 0; i < order.size(); ++i) sorted[i] = column[order[i]];
  column = std::move(sorted);
}

}  // namespace

Result<Trace> TraceBuilder::Finish() && {
  TraceColumns& c = columns_;
  const size_t n = c.size();
  for (size_t i = 0; i < n; ++i) {
    if (c.send_time[i] == kNoTime && c.recv_time[i] == kNoTime) {
      return Status::InvalidArgument("message {} has neither send nor receive time", i);
    }
    if (c.truth_parent[i].valid() && c.truth_parent[i].value() >= n) {
      return Status::InvalidArgument("message {} has parent row {} that does not exist", i,
                                     c.truth_parent[i].value());
    }
  }
  // Checked here, not only in FromParts: the reordering below indexes by these rows.
  for (const Attribute& a : attributes_) {
    if (a.message.value() >= n) {
      return Status::InvalidArgument("attribute of row {}, which does not exist",
                                     a.message.value());
    }
  }
  auto sort_time = [&](uint32_t i) {
    return c.send_time[i] != kNoTime ? c.send_time[i] : c.recv_time[i];
  };
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  if (!std::is_sorted(order.begin(), order.end(),
                      [&](uint32_t a, uint32_t b) { return sort_time(a) < sort_time(b); })) {
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return sort_time(a) < sort_time(b); });
    std::vector<uint32_t> new_index(n);
    for (uint32_t i = 0; i < n; ++i) new_index[order[i]] = i;
    Permute(c.send_time, order);
    Permute(c.recv_time, order);
    Permute(c.sender, order);
    Permute(c.receiver, order);
    Permute(c.kind, order);
    Permute(c.call_id, order);
    Permute(c.bytes, order);
    Permute(c.sender_thread, order);
    Permute(c.receiver_thread, order);
    Permute(c.sender_endpoint, order);
    Permute(c.receiver_endpoint, order);
    Permute(c.truth_path, order);
    Permute(c.truth_parent, order);
    Permute(c.connect_time, order);
    Permute(c.accept_time, order);
    Permute(c.first_read_time, order);
    for (MessageId& p : c.truth_parent) {
      if (p.valid()) p = MessageId(new_index[p.value()]);
    }
    for (Attribute& a : attributes_) a.message = MessageId(new_index[a.message.value()]);
    for (ProcessLink& l : process_links_) {
      for (MessageId* m : {&l.from_message, &l.to_message}) {
        if (m->valid() && m->value() < n) *m = MessageId(new_index[m->value()]);
      }
    }
  }
  std::stable_sort(attributes_.begin(), attributes_.end(),
                   [](const Attribute& a, const Attribute& b) { return a.message < b.message; });
  std::stable_sort(process_links_.begin(), process_links_.end(),
                   [](const ProcessLink& a, const ProcessLink& b) { return a.time < b.time; });
  return Trace::FromParts(std::move(nodes_), std::move(strings_), std::move(columns_),
                          std::move(attributes_), std::move(process_links_));
}

}  // namespace weft
