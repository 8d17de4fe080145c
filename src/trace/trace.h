// The message trace: every later stage of weft reads it (docs/architecture.md "The data model").
//
// A Trace is a time-sorted, columnar table of messages plus two name tables (nodes and
// other strings). A message is identified by its MessageId, its index in time order;
// ground-truth parents refer to messages by that id. All columns always have one entry
// per message; a field that was not observed holds its "unknown" value (kNoTime, an
// invalid id, -1 bytes, 0 thread).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/id.h"
#include "core/intern.h"
#include "core/status.h"
#include "core/time.h"

namespace weft {

enum class MessageKind : uint8_t {
  kCall = 0,     // CALL_SENT: the request of an RPC
  kReturn = 1,   // RET_SENT: its reply
  kMessage = 2,  // MSG_SENT: a free-form message
};
inline constexpr int kMessageKindCount = 3;

std::string_view MessageKindOp(MessageKind kind);  // "CALL_SENT", "RET_SENT", "MSG_SENT"

// An attribute of a message that has no column of its own (http.url=..., sql=...).
struct Attribute {
  MessageId message;
  StringId key;
  StringId value;
};

// A process that another started (BorderPatrol §5.5: "causal paths also continue across
// process creation"): thread `from_thread` of node `from` forked a child, one of whose
// threads is `to_thread` of node `to`, or exec'd a program image, one of whose threads is
// `to_thread` of `to`: one link per thread of the new process (image). Or it created the
// thread `to_thread` of its own process (pthread_create), named `to`: one link. `time` is
// the fork, exec or pthread_create call's entry, on the clock of the host both run on.
// Or it handed work to thread `to_thread` of its own process through memory (a HANDOFF:
// a queue guarded by a mutex, a targeted condition-variable wake, a semaphore, an eventfd
// or a timer, found by reconcile from captured synchronisation calls): at `time` the
// producer let go of it, at `to_time` the consumer took it over.
// Not a message: algorithms that read only messages never see links; those that follow
// threads across process creation and hand-offs use them.
enum class ProcessLinkKind : uint8_t { kFork = 0, kExec = 1, kThread = 2, kHandoff = 3 };
inline constexpr int kProcessLinkKindCount = 4;
// "FORK", "EXEC", "THREAD", "HANDOFF"
std::string_view ProcessLinkKindName(ProcessLinkKind kind);

struct ProcessLink {
  TimeNs time = kNoTime;
  NodeId from;
  ThreadId from_thread;
  NodeId to;
  ThreadId to_thread;
  ProcessLinkKind kind = ProcessLinkKind::kFork;
  // HANDOFF: when the consumer took the work over (at or after `time`); kNoTime for the
  // other kinds, whose new thread starts at `time`.
  TimeNs to_time = kNoTime;
  // HANDOFF: the evidence allowed another consumer too (several waiters, a wake-up that
  // covered several hand-overs): the link is reconcile's best guess, and the requests it
  // carries are marked.
  bool ambiguous = false;
  // HANDOFF: the messages the work is known to go with, where capture tied them (gRPC's
  // API records, docs/reconcile.md "gRPC"): `from_message`, a CALL the producer received,
  // is the work handed over; `to_message`, a message the consumer sent, is what it sent
  // for that work. Then the work goes with these messages, not with whatever else the
  // threads did at the same instant (one write may carry several requests' calls).
  // Invalid where not known.
  MessageId from_message;
  MessageId to_message;
  TimeNs TakenAt() const { return to_time == kNoTime ? time : to_time; }
};

// The columns of a trace; entry i of every vector describes message i.
struct TraceColumns {
  std::vector<TimeNs> send_time;  // on the sender's clock; kNoTime if the sender is untraced
  std::vector<TimeNs> recv_time;  // on the receiver's clock; kNoTime if not observed
  std::vector<NodeId> sender;
  std::vector<NodeId> receiver;
  std::vector<MessageKind> kind;
  std::vector<StringId> call_id;            // matches a CALL with its RETURN; invalid if unknown
  std::vector<int64_t> bytes;               // -1 if unknown
  std::vector<ThreadId> sender_thread;      // invalid (0) if unknown
  std::vector<ThreadId> receiver_thread;    // invalid (0) if unknown
  std::vector<StringId> sender_endpoint;    // "10.0.0.1:5432"; invalid if unknown
  std::vector<StringId> receiver_endpoint;  // invalid if unknown
  // For the first CALL sent on a connection that its sender's thread opened with connect:
  // when it connected, on the sender's clock like send_time and no later than it; kNoTime
  // for every other message. BorderPatrol §3 counts a connection's creation as an output
  // of the request being worked on then, which a non-blocking connect's call, written
  // later, no longer shows.
  std::vector<TimeNs> connect_time;
  // For the first CALL read on a connection its receiver's thread accepted: when it
  // accepted, on the receiver's clock like recv_time and no later than it; kNoTime for
  // every other message. A layer-4 proxy (pen, haproxy in tcp mode) connects to its
  // server when a client connects, before the client's request is read: that connection
  // is the accepted connection's, not the request read last (infer/fragment).
  std::vector<TimeNs> accept_time;
  // For a message its receiver read in several calls: the exit of the read that carried
  // its first byte, on the receiver's clock like recv_time and no later than it; kNoTime
  // when one read carried it all, or the receiver was not traced. A server that passes a
  // request on while still reading it (a proxy streaming a body) calls downstream before
  // recv_time; vPath's request boundary is then this time (FirstReadTime).
  std::vector<TimeNs> first_read_time;
  // Ground truth, only in generated or specially captured traces:
  std::vector<PathId> truth_path;       // the path instance the message belongs to
  std::vector<MessageId> truth_parent;  // the message that caused it; invalid for a root

  size_t size() const { return send_time.size(); }
  // When the receiver began taking message i in: its first read's exit, else recv_time.
  TimeNs FirstReadTime(size_t i) const {
    return first_read_time[i] != kNoTime ? first_read_time[i] : recv_time[i];
  }
  void Resize(size_t n);  // grows or shrinks every column, filling with unknown values
};

// One message as a row: how messages are added and read one at a time.
struct MessageRecord {
  TimeNs send_time = kNoTime;
  TimeNs recv_time = kNoTime;
  NodeId sender;
  NodeId receiver;
  MessageKind kind = MessageKind::kMessage;
  StringId call_id;
  int64_t bytes = -1;
  ThreadId sender_thread;
  ThreadId receiver_thread;
  StringId sender_endpoint;
  StringId receiver_endpoint;
  PathId truth_path;
  MessageId truth_parent;
  TimeNs connect_time = kNoTime;
  TimeNs accept_time = kNoTime;
  TimeNs first_read_time = kNoTime;
};

class Trace {
 public:
  Trace() = default;

  // Takes ownership of parts that must already be consistent: columns of equal length,
  // sorted by SortTime, every id in range of its table, parents referring to messages,
  // attributes sorted by message, process links sorted by time with both threads known.
  // Checks all of it in one linear pass.
  static Result<Trace> FromParts(NodeTable nodes, StringTable strings, TraceColumns columns,
                                 std::vector<Attribute> attributes,
                                 std::vector<ProcessLink> process_links = {});

  size_t size() const { return columns_.size(); }
  bool empty() const { return size() == 0; }
  const TraceColumns& columns() const { return columns_; }
  const NodeTable& nodes() const { return nodes_; }
  const StringTable& strings() const { return strings_; }
  std::span<const Attribute> attributes() const { return attributes_; }
  std::span<const Attribute> AttributesOf(MessageId m) const;
  std::span<const ProcessLink> process_links() const { return process_links_; }  // by time

  MessageRecord Row(MessageId m) const;
  std::string_view NodeName(NodeId n) const { return nodes_.Get(n); }

  // The time a message is ordered by: its send time, or its receive time if the send was
  // not observed.
  TimeNs SortTime(MessageId m) const {
    TimeNs s = columns_.send_time[m.value()];
    return s != kNoTime ? s : columns_.recv_time[m.value()];
  }
  TimeNs StartTime() const { return empty() ? 0 : SortTime(MessageId(0)); }
  TimeNs EndTime() const { return empty() ? 0 : SortTime(MessageId(uint32_t(size() - 1))); }

  // True if any message carries a ground-truth path id.
  bool HasTruth() const;

  // Bytes held by the columns, tables and attributes (for "bytes per message in memory").
  size_t MemoryBytes() const;

 private:
  NodeTable nodes_;
  StringTable strings_;
  TraceColumns columns_;
  std::vector<Attribute> attributes_;
  std::vector<ProcessLink> process_links_;
};

// Builds a trace from messages added in any order. Parents are given as the row number
// that Add() returned for the parent message; Finish() sorts by time (stably, so equal
// times keep the order of addition) and rewrites parents as MessageIds.
class TraceBuilder {
 public:
  NodeId Node(std::string_view name) { return nodes_.Intern(name); }
  StringId String(std::string_view s) { return strings_.Intern(s); }
  NodeTable& nodes() { return nodes_; }
  StringTable& strings() { return strings_; }

  // Returns the row number of the message. `record.truth_parent`, if valid, is a row number.
  uint32_t Add(const MessageRecord& record);
  void AddAttribute(uint32_t row, StringId key, StringId value);
  // Sets the ground-truth parent of `row` to the message added as `parent_row`.
  void SetParent(uint32_t row, uint32_t parent_row) {
    columns_.truth_parent[row] = MessageId(parent_row);
  }
  void SetConnectTime(uint32_t row, TimeNs time) { columns_.connect_time[row] = time; }
  void SetAcceptTime(uint32_t row, TimeNs time) { columns_.accept_time[row] = time; }
  void SetFirstReadTime(uint32_t row, TimeNs time) { columns_.first_read_time[row] = time; }
  // Links may be added in any order; Finish() sorts them by time.
  void AddProcessLink(const ProcessLink& link) { process_links_.push_back(link); }
  size_t size() const { return columns_.size(); }

  Result<Trace> Finish() &&;

 private:
  NodeTable nodes_;
  StringTable strings_;
  TraceColumns columns_;
  std::vector<Attribute> attributes_;  // .message holds a row number until Finish()
  std::vector<ProcessLink> process_links_;
};

}  // namespace weft
