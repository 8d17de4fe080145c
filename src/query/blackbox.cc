#include "query/blackbox.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "core/progress.h"

namespace weft::query {
namespace {

// The tracepoints in the order BlackBoxTracepoints lists them: a step's tracepoint index.
enum TracepointIndex : uint32_t { kRequest = 0, kCall, kReply, kSend, kReceive };
// Static storage: a Value may point at these long after the run.
constexpr std::string_view kTracepointNames[] = {"Request", "Call", "Reply", "Send", "Receive"};
constexpr std::string_view kTracepointDescriptions[] = {
    "a CALL arriving at a node: its work on it starts (the first is the request entering)",
    "a CALL a node sends",
    "the RETURN a node sends at the end of its work on a CALL",
    "every message, at its sender",
    "every message, at its receiver",
};
constexpr std::string_view kKindNames[] = {"CALL", "RETURN", "MSG"};

// The variables every tracepoint exports, in export id order; attribute keys follow.
enum ExportIndex : uint32_t {
  kHost = 0,
  kProcname,
  kProcid,
  kTracepointName,
  kTimestamp,
  kNode,
  kThread,
  kPeer,
  kKind,
  kBytes,
  kLatency,
  kFixedExports,
};
constexpr std::string_view kExportNames[] = {
    "host",   "procname", "procid", "tracepoint", "timestamp", "node",
    "thread", "peer",     "kind",   "bytes",      "latency",
};
static_assert(std::size(kExportNames) == kFixedExports);

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// An event is one end of one message: its send (0) or its receive (1).
uint32_t SendEvent(MessageId m) { return m.value() * 2; }
uint32_t ReceiveEvent(MessageId m) { return m.value() * 2 + 1; }

// Payload bytes (payload.prefix) are not a protocol attribute: a query has nothing to ask
// of hex, and the path patterns leave them out too.
bool IsPayloadKey(std::string_view key) { return key.starts_with("payload."); }

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "host:program[pid]" or "host:program[pid/tid]" (reconcile --nodes process, thread),
// "host:program" (--nodes host); any other name (a generated "WS1", an untraced
// endpoint "10.0.0.2:80") is its own host and program.
std::pair<std::string_view, std::string_view> SplitProgram(std::string_view name) {
  size_t colon = name.find(':');
  if (colon == std::string_view::npos || colon == 0) return {name, name};
  std::string_view host = name.substr(0, colon), program = name.substr(colon + 1);
  if (program.empty() || AllDigits(program)) return {name, name};
  return {host, program};
}

}  // namespace

std::vector<Tracepoint> BlackBoxTracepoints(const Trace& trace) {
  std::vector<std::string> keys;
  {
    std::vector<uint8_t> seen(trace.strings().size(), 0);
    for (const Attribute& a : trace.attributes()) {
      if (seen[a.key.value()]) continue;
      seen[a.key.value()] = 1;
      std::string_view key = trace.strings().Get(a.key);
      if (!IsPayloadKey(key)) keys.emplace_back(key);
    }
  }
  std::sort(keys.begin(), keys.end());
  std::vector<std::string> exports(std::begin(kExportNames), std::end(kExportNames));
  exports.insert(exports.end(), keys.begin(), keys.end());
  std::vector<Tracepoint> tracepoints;
  for (size_t t = 0; t < std::size(kTracepointNames); ++t) {
    tracepoints.push_back(
        {std::string(kTracepointNames[t]), exports, std::string(kTracepointDescriptions[t])});
  }
  return tracepoints;
}

Result<BlackBoxEvents> BlackBoxEvents::Make(const Trace& trace, const PathSet& paths) {
  if (paths.trace_messages != trace.size() || paths.trace_fingerprint != TraceFingerprint(trace)) {
    return Status::InvalidArgument(
        "the paths ({} messages) were not inferred from this trace ({} messages)",
        paths.trace_messages, trace.size());
  }
  // The replay trusts these: a parent before its child within its instance (pre-order).
  if (paths.instance_begin.size() != paths.instance_count() + 1 ||
      paths.instance_begin.back() != paths.messages.size() ||
      paths.parent.size() != paths.messages.size()) {
    return Status::InvalidArgument("the paths' instance tables disagree in size");
  }
  for (MessageId m : paths.messages) {
    if (m.value() >= trace.size()) {
      return Status::InvalidArgument("the paths name message {}, beyond the trace's {}", m.value(),
                                     trace.size());
    }
  }
  for (size_t i = 0; i < paths.instance_count(); ++i) {
    if (paths.instance_begin[i] > paths.instance_begin[i + 1]) {
      return Status::InvalidArgument("instance {} of the paths ends before it starts", i);
    }
    std::span<const int32_t> parents = paths.InstanceParents(i);
    for (size_t j = 0; j < parents.size(); ++j) {
      if (parents[j] >= int32_t(j) || (parents[j] < 0) != (j == 0)) {
        return Status::InvalidArgument(
            "instance {} of the paths is not a tree in pre-order (message {} has parent {})", i, j,
            parents[j]);
      }
    }
  }
  return BlackBoxEvents(trace, paths);
}

BlackBoxEvents::BlackBoxEvents(const Trace& trace, const PathSet& paths)
    : trace_(&trace), paths_(&paths), tracepoints_(BlackBoxTracepoints(trace)) {
  node_parts_.resize(trace.nodes().size());
  for (uint32_t n = 0; n < trace.nodes().size(); ++n) {
    std::string_view name = trace.NodeName(NodeId(n));
    NodeParts& parts = node_parts_[n];
    std::string_view base = name;
    // "[pid]" or "[pid/tid]" at the end.
    size_t open = name.rfind('[');
    if (name.ends_with(']') && open != std::string_view::npos && open > 0) {
      std::string_view inside = name.substr(open + 1, name.size() - open - 2);
      std::string_view pid = inside.substr(0, inside.find('/'));
      if (AllDigits(pid) && pid.size() < 19) {
        parts.procid = 0;
        for (char c : pid) parts.procid = parts.procid * 10 + (c - '0');
        base = name.substr(0, open);
      }
    }
    auto [host, program] = SplitProgram(base);
    parts.host = host;
    parts.procname = program;
  }

  // Export kFixedExports + k reads attribute key k, in the order of the exports' names.
  const std::vector<std::string>& exports = tracepoints_[0].exports;
  for (size_t e = kFixedExports; e < exports.size(); ++e) {
    attribute_keys_.push_back(trace.strings().Find(exports[e]));
  }
  attribute_begin_.assign(trace.size() + 1, 0);
  {
    std::span<const Attribute> attributes = trace.attributes();
    size_t a = 0;
    for (uint32_t m = 0; m <= trace.size(); ++m) {
      while (a < attributes.size() && attributes[a].message.value() < m) ++a;
      attribute_begin_[m] = uint32_t(a);
    }
  }

  // Where each message is in one instance only, whose RETURN answers a CALL is known now;
  // alternatives (linking) set it per instance in BuildExecution.
  partner_.assign(trace.size(), kNone);
  if (!paths.shared_messages) {
    for (size_t i = 0; i < paths.instance_count(); ++i) SetPartners(i);
  }
}

void BlackBoxEvents::SetPartners(size_t instance) {
  std::span<const MessageId> messages = paths_->InstanceMessages(instance);
  std::span<const int32_t> parents = paths_->InstanceParents(instance);
  const TraceColumns& c = trace_->columns();
  for (MessageId m : messages) partner_[m.value()] = kNone;
  for (size_t j = 0; j < messages.size(); ++j) {
    if (parents[j] < 0) continue;
    MessageId r = messages[j], call = messages[size_t(parents[j])];
    if (c.kind[r.value()] != MessageKind::kReturn || c.kind[call.value()] != MessageKind::kCall) {
      continue;
    }
    // The first RETURN under a CALL answers it (pre-order: earliest in canonical order).
    if (partner_[call.value()] == kNone && partner_[r.value()] == kNone) {
      partner_[call.value()] = r.value();
      partner_[r.value()] = call.value();
    }
  }
}

void BlackBoxEvents::BuildExecution(size_t i, Execution& out, const ReplayNeeds& needs) {
  out.steps.clear();
  out.weight = paths_->probability[i];
  std::span<const MessageId> messages = paths_->InstanceMessages(i);
  std::span<const int32_t> parents = paths_->InstanceParents(i);
  const size_t k = messages.size();
  out.segments = uint32_t(k + 1);
  if (k == 0) return;
  if (paths_->shared_messages) SetPartners(i);

  const TraceColumns& c = trace_->columns();
  auto kind = [&](size_t j) { return c.kind[messages[j].value()]; };
  const uint32_t client = uint32_t(k);  // the client's work: segment 0

  // Works: the client's, and each message's that goes on as its receiver's work (a CALL,
  // a MSG, a RETURN that answers no CALL of the instance). An answer's arrival is in the
  // work its CALL was sent from; every message is sent from the work of its parent.
  answer_.assign(k, 0);
  send_work_.resize(k);
  work_of_.resize(k);
  for (size_t j = 0; j < k; ++j) {
    const int32_t p = parents[j];
    answer_[j] = p >= 0 && kind(j) == MessageKind::kReturn && kind(size_t(p)) == MessageKind::kCall;
    send_work_[j] = p < 0 ? client : work_of_[size_t(p)];
    work_of_[j] = answer_[j] ? send_work_[size_t(p)] : uint32_t(j);
  }

  auto fire = [&](uint32_t segment, uint32_t tracepoint, uint32_t event) {
    if (needs.Wants(tracepoint))
      out.steps.push_back({StepOp::kFire, segment, 0, tracepoint, event});
  };
  if (!needs.causality) {
    // Every firing of the instance, in message order, in one segment.
    out.segments = 1;
    for (size_t j = 0; j < k; ++j) {
      const MessageId m = messages[j];
      if (c.send_time[m.value()] != kNoTime) {
        if (kind(j) == MessageKind::kCall) fire(0, kCall, SendEvent(m));
        if (answer_[j]) fire(0, kReply, SendEvent(m));
        fire(0, kSend, SendEvent(m));
      }
      if (c.recv_time[m.value()] != kNoTime) {
        fire(0, kReceive, ReceiveEvent(m));
        if (!answer_[j] && kind(j) == MessageKind::kCall) fire(0, kRequest, ReceiveEvent(m));
      }
    }
    return;
  }

  // Every work's items in its node's time order: sends at send time, answers at arrival
  // (ties by message id); the RETURN answering a CALL ends the work on it.
  items_.clear();
  auto send_key = [&](size_t j) { return trace_->SortTime(messages[j]); };
  for (size_t j = 0; j < k; ++j) {
    const MessageId m = messages[j];
    const bool last = answer_[j] && partner_[m.value()] == messages[size_t(parents[j])].value();
    items_.push_back({send_work_[j], last, send_key(j), m.value(), false, uint32_t(j)});
    if (answer_[j]) {
      const size_t call = size_t(parents[j]);
      TimeNs key = c.recv_time[m.value()] != kNoTime ? c.recv_time[m.value()] : send_key(j);
      uint32_t tie = m.value();
      // The answer arrives after its CALL was sent, whatever the clocks say: its segment
      // must exist before it joins.
      const TimeNs sent = send_key(call);
      if (key < sent || (key == sent && tie < messages[call].value())) {
        key = sent;
        tie = messages[call].value();
      }
      items_.push_back({work_of_[j], false, key, tie, true, uint32_t(j)});
    }
  }
  std::sort(items_.begin(), items_.end(), [](const WorkItem& a, const WorkItem& b) {
    if (a.work != b.work) return a.work < b.work;
    if (a.last != b.last) return b.last;
    if (a.key != b.key) return a.key < b.key;
    if (a.tie != b.tie) return a.tie < b.tie;
    return a.arrival < b.arrival;
  });
  item_begin_.assign(k + 2, 0);
  for (const WorkItem& item : items_) ++item_begin_[item.work + 1];
  for (size_t w = 0; w <= k; ++w) item_begin_[w + 1] += item_begin_[w];

  // Replays in depth-first order: a message sent is followed at once by everything it
  // caused on its receiver, then the sender's work goes on.
  segment_.assign(k, 0);
  uint32_t next_segment = 1;
  stack_.clear();
  stack_.emplace_back(client, item_begin_[client]);
  while (!stack_.empty()) {
    auto& [work, next] = stack_.back();
    if (next == item_begin_[work + 1]) {
      stack_.pop_back();
      continue;
    }
    const WorkItem& item = items_[next++];
    const uint32_t here = work == client ? 0 : segment_[work];
    const size_t j = item.j;
    const MessageId m = messages[j];
    if (item.arrival) {
      out.steps.push_back({StepOp::kJoin, here, segment_[j], 0, 0});
      if (c.recv_time[m.value()] != kNoTime) fire(here, kReceive, ReceiveEvent(m));
      continue;
    }
    if (c.send_time[m.value()] != kNoTime) {
      if (kind(j) == MessageKind::kCall) fire(here, kCall, SendEvent(m));
      if (answer_[j]) fire(here, kReply, SendEvent(m));
      fire(here, kSend, SendEvent(m));
    }
    const uint32_t segment = next_segment++;
    segment_[j] = segment;
    out.steps.push_back({StepOp::kBranch, here, segment, 0, 0});
    if (answer_[j]) continue;  // in flight until it arrives in its caller's work
    if (c.recv_time[m.value()] != kNoTime) {
      fire(segment, kReceive, ReceiveEvent(m));
      if (kind(j) == MessageKind::kCall) fire(segment, kRequest, ReceiveEvent(m));
    }
    stack_.emplace_back(uint32_t(j), item_begin_[j]);  // invalidates work, next
  }
}

Value BlackBoxEvents::Export(uint32_t tracepoint, uint32_t export_id, uint32_t event) const {
  const TraceColumns& c = trace_->columns();
  const uint32_t m = event >> 1;
  const bool received = event & 1;
  switch (export_id) {
    case kHost:
      return Value::String(node_parts_[(received ? c.receiver : c.sender)[m].value()].host);
    case kProcname:
      return Value::String(node_parts_[(received ? c.receiver : c.sender)[m].value()].procname);
    case kProcid: {
      int64_t pid = node_parts_[(received ? c.receiver : c.sender)[m].value()].procid;
      return pid < 0 ? Value::Null() : Value::Int(pid);
    }
    case kTracepointName:
      return tracepoint < std::size(kTracepointNames) ? Value::String(kTracepointNames[tracepoint])
                                                      : Value::Null();
    case kTimestamp: {
      TimeNs t = received ? c.recv_time[m] : c.send_time[m];
      return t == kNoTime ? Value::Null() : Value::Int(t);
    }
    case kNode:
      return Value::String(trace_->NodeName(received ? c.receiver[m] : c.sender[m]));
    case kThread: {
      ThreadId t = received ? c.receiver_thread[m] : c.sender_thread[m];
      return t.valid() ? Value::Int(t.value()) : Value::Null();
    }
    case kPeer:
      return Value::String(trace_->NodeName(received ? c.sender[m] : c.receiver[m]));
    case kKind:
      return Value::String(kKindNames[size_t(c.kind[m])]);
    case kBytes:
      return c.bytes[m] < 0 ? Value::Null() : Value::Int(c.bytes[m]);
    case kLatency: {
      const uint32_t other = partner_[m];
      if (other == kNone) return Value::Null();
      TimeNs from = kNoTime, to = kNoTime;
      switch (tracepoint) {
        case kRequest:  // the callee's work: from this CALL's arrival to its RETURN's send
          from = c.recv_time[m], to = c.send_time[other];
          break;
        case kReply:  // the same, seen from the RETURN
          from = c.recv_time[other], to = c.send_time[m];
          break;
        case kCall:  // the caller's round trip: from this CALL's send to its RETURN's arrival
          from = c.send_time[m], to = c.recv_time[other];
          break;
        default:
          return Value::Null();
      }
      return from == kNoTime || to == kNoTime ? Value::Null() : Value::Int(to - from);
    }
    default:
      break;
  }
  const size_t key = export_id - kFixedExports;
  if (key >= attribute_keys_.size()) return Value::Null();
  const StringId wanted = attribute_keys_[key];
  std::span<const Attribute> attributes = trace_->attributes();
  for (uint32_t a = attribute_begin_[m], end = attribute_begin_[m + 1]; a < end; ++a) {
    if (attributes[a].key == wanted)
      return Value::String(trace_->strings().Get(attributes[a].value));
  }
  return Value::Null();
}

TimeNs BlackBoxEvents::Time(uint32_t event) const {
  const uint32_t m = event >> 1;
  return event & 1 ? trace_->columns().recv_time[m] : trace_->columns().send_time[m];
}

QueryResult RunOffline(std::shared_ptr<const CompiledQuery> query, BlackBoxEvents& events,
                       const EvaluateOptions& options) {
  const ReplayNeeds needs = NeedsOf(*query);
  Evaluator evaluator(std::move(query), events, options);
  Execution execution;
  Progress progress("query", events.executions(), "requests");
  for (size_t i = 0; i < events.executions(); ++i) {
    events.BuildExecution(i, execution, needs);
    evaluator.Run(execution);
    progress.Update(i + 1);
  }
  return std::move(evaluator).Finish();
}

}  // namespace weft::query
