// Event logs -> message trace (UDP: datagram_matcher.h). vPath §3 (ATC'09): per-connection
// send/recv streams, normalised into messages at direction turns (§3.2) and paired across the two
// ends of a connection by 4-tuple and lifetime (§3.3); WAP5 §4 (WWW'06) calls the result "fat
// messages". Two departures from vPath, both because weft's logs hold more:
//   - the two ends are lined up by byte offset, not by event count, so a 10-byte write
//     read as 4 + 6 bytes is still one message with an exact receive time;
//   - a receive completes at its exit time (logged), not at the next system call.
#include "reconcile/reconcile.h"

#include <absl/container/flat_hash_map.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "capture/protocols/protocol.h"
#include "reconcile/connection_table.h"
#include "reconcile/datagram_matcher.h"
#include "reconcile/message_splitter.h"
#include "reconcile/processes.h"
#include "trace/clock_offsets.h"

namespace weft::reconcile {
namespace {

std::string ProgramName(const capture::EventLog& log) {
  std::string_view exe = log.header.executable;
  size_t slash = exe.rfind('/');
  return std::string(slash == std::string_view::npos ? exe : exe.substr(slash + 1));
}

// A traced process (or thread) as a node name, or the endpoint for an untraced one.
// Also keeps each node's clock: the boot (host) whose monotonic clock its times are on.
class NodeNamer {
 public:
  NodeNamer(std::span<const capture::EventLog> logs, std::span<const ClockId> clock_of_log,
            NodeNaming naming, TraceBuilder& builder)
      : logs_(logs), clock_of_log_(clock_of_log), naming_(naming), builder_(builder) {}

  NodeId Traced(uint32_t log_index, int32_t tid) {
    if (naming_ != NodeNaming::kThread) tid = 0;
    uint64_t key = uint64_t(log_index) << 32 | uint32_t(tid);
    auto [it, inserted] = cache_.try_emplace(key);
    if (inserted) {
      it->second = Name(log_index, tid);
      // A node name shared by two boots (a host that rebooted) keeps the first clock.
      if (!ClockSlot(it->second).valid()) ClockSlot(it->second) = clock_of_log_[log_index];
    }
    return it->second;
  }
  NodeId Untraced(const std::string& endpoint) { return builder_.Node(endpoint); }

  // Per node of the builder, its clock, or an invalid one for an untraced peer.
  std::vector<ClockId> ClockOfNode() {
    clock_of_node_.resize(builder_.nodes().size(), ClockId());
    return clock_of_node_;
  }

 private:
  NodeId Name(uint32_t log_index, int32_t tid) {
    const capture::EventLog& log = logs_[log_index];
    std::string name = log.header.host + ":" + ProgramName(log);
    if (naming_ == NodeNaming::kProcess) name += fmt::format("[{}]", log.header.pid);
    if (naming_ == NodeNaming::kThread) name += fmt::format("[{}/{}]", log.header.pid, tid);
    return builder_.Node(name);
  }

  ClockId& ClockSlot(NodeId node) {
    if (clock_of_node_.size() <= node.value()) clock_of_node_.resize(node.value() + 1, ClockId());
    return clock_of_node_[node.value()];
  }

  std::span<const capture::EventLog> logs_;
  std::span<const ClockId> clock_of_log_;
  NodeNaming naming_;
  TraceBuilder& builder_;
  std::unordered_map<uint64_t, NodeId> cache_;  // (log, tid) -> node
  std::vector<ClockId> clock_of_node_;
};

// The client end decides CALL vs RETURN. A TCP connection whose ends were both named by
// inheritance falls back to ports: the end with the higher local port is taken as the
// (ephemeral) client. A socketpair has no client: its messages are MSG both ways.
enum class Role : uint8_t { kClient, kServer, kNeither };
Role RoleOf(const ConnectionEnd& end, const ConnectionEnd* other) {
  if (end.opener == Opener::kConnect) return Role::kClient;
  if (end.opener == Opener::kAccept) return Role::kServer;
  if (other != nullptr && other->opener == Opener::kConnect) return Role::kServer;
  if (other != nullptr && other->opener == Opener::kAccept) return Role::kClient;
  if (end.unix_socket) return Role::kNeither;
  auto port = [](const std::string& s) { return std::stoi(s.substr(s.rfind(':') + 1)); };
  return port(end.local) > port(end.peer) ? Role::kClient : Role::kServer;
}

struct ConnectionPair {
  const ConnectionEnd* client = nullptr;  // either may be null (untraced), not both
  const ConnectionEnd* server = nullptr;
  bool symmetric = false;  // socketpair: neither end is a client (MSG both ways)
};

// The first bytes of a message as lowercase hex, from the payload prefix logged with the
// call that starts it; "" when none was logged.
// `skip` bytes of the prefix are left out (a message that begins inside the call).
std::string PayloadHex(std::span<const capture::EventLog> logs, uint32_t log, int32_t payload,
                       int64_t skip = 0) {
  if (payload < 0) return "";
  const std::string& all = logs[log].payloads[size_t(payload)];
  if (skip < 0 || uint64_t(skip) >= all.size()) return "";
  std::string_view bytes = std::string_view(all).substr(size_t(skip));
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex(bytes.size() * 2, '0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    hex[2 * i] = kDigits[uint8_t(bytes[i]) >> 4];
    hex[2 * i + 1] = kDigits[uint8_t(bytes[i]) & 0xf];
  }
  return hex;
}

// The attribute that names the same exchange in a request and its reply, for protocols
// that may answer out of order: DNS's id (RFC 1035 §4.1.1), and the testbed frame's call
// id should its processor log one ("testbed.call"); "" for none.
std::string_view WitnessKey(uint8_t protocol) {
  switch (capture::protocols::Protocol(protocol)) {
    case capture::protocols::kDns:
      return "dns.id";
    case capture::protocols::kTestbed:
      return "testbed.call";
    default:
      return "";
  }
}

class MessageEmitter {
 public:
  MessageEmitter(std::span<const capture::EventLog> logs, NodeNamer& namer, TraceBuilder& builder,
                 ReconcileSummary& summary)
      : logs_(logs),
        namer_(namer),
        builder_(builder),
        summary_(summary),
        payload_key_(builder.String(kPayloadAttribute)) {}

  // A pipe flows one way, so it has no direction turns: a message is a run of writes that
  // ends when the reader has drained the pipe (a read completes exactly at the last byte
  // written so far) before the next write. With the reader untraced every write is a
  // message; with the writer untraced every read is.
  void EmitPipe(const ConnectionEnd& pipe, uint32_t number) {
    std::vector<size_t> writes, reads;
    for (size_t i = 0; i < pipe.io.size(); ++i) (pipe.io[i].send ? writes : reads).push_back(i);
    StringId endpoint = builder_.String(pipe.local);
    uint32_t sequence = 0;
    auto add = [&](const StreamIo* first_write, const StreamIo* completing_read, int64_t bytes) {
      MessageRecord record;
      record.kind = MessageKind::kMessage;
      record.call_id = builder_.String(fmt::format("p{}.{}", number, ++sequence));
      record.bytes = bytes;
      record.sender_endpoint = record.receiver_endpoint = endpoint;
      record.sender = first_write != nullptr ? namer_.Traced(first_write->log, first_write->tid)
                                             : namer_.Untraced(pipe.local);
      record.receiver = completing_read != nullptr
                            ? namer_.Traced(completing_read->log, completing_read->tid)
                            : namer_.Untraced(pipe.local);
      if (first_write != nullptr) {
        record.send_time = first_write->entry_ns;
        record.sender_thread = ThreadId(uint32_t(first_write->tid));
      }
      if (completing_read != nullptr) {
        record.recv_time = completing_read->exit_ns;
        record.receiver_thread = ThreadId(uint32_t(completing_read->tid));
      }
      builder_.Add(record);
      ++summary_.messages;
      summary_.bytes += uint64_t(bytes);
    };
    if (writes.empty()) {
      for (size_t r : reads) add(nullptr, &pipe.io[r], pipe.io[r].bytes);
      return;
    }
    ReadCursor cursor(reads.empty() ? nullptr : &pipe);
    int64_t written = 0, message_start = 0;
    size_t first_of_message = writes[0], next_read = 0, read_end = 0;
    for (size_t w = 0; w < writes.size(); ++w) {
      if (written == message_start) first_of_message = writes[w];
      written += pipe.io[writes[w]].bytes;
      // Has the reader drained the pipe before the next write?
      bool drained = reads.empty();
      while (next_read < reads.size() && int64_t(read_end) < written)
        read_end += size_t(pipe.io[reads[next_read++]].bytes);
      if (!reads.empty() && int64_t(read_end) == written && next_read > 0) {
        TimeNs next_write = w + 1 < writes.size() ? pipe.io[writes[w + 1]].entry_ns : INT64_MAX;
        drained = pipe.io[reads[next_read - 1]].exit_ns <= next_write;
      }
      if (!drained && w + 1 < writes.size()) continue;
      add(&pipe.io[first_of_message], cursor.ReadHolding(written - 1), written - message_start);
      message_start = written;
    }
  }

  void Emit(const ConnectionPair& pair, uint32_t connection) {
    bool ordered = AnswersInOrder(pair);
    EmitDirection(pair.client, pair.server,
                  pair.symmetric ? MessageKind::kMessage : MessageKind::kCall, connection, ordered);
    EmitDirection(pair.server, pair.client,
                  pair.symmetric ? MessageKind::kMessage : MessageKind::kReturn, connection,
                  ordered);
  }

 private:
  // Whether the k-th reply on a connection answers its k-th request, so that call ids can
  // pair messages by position: HTTP/1.1 (RFC 9112 §9.3.2), Redis and PostgreSQL answer
  // pipelined requests in order. The testbed's frames (answered by call id, out of order
  // on an event loop), DNS over TCP (RFC 7766 allows any order) and the generic processors
  // promise nothing: their messages keep the call id of their direction-turn run, which
  // is what they had before protocols were split (and all a run of requests and the run
  // of replies after it are known to share).
  static bool AnswersInOrder(const ConnectionPair& pair) {
    for (const ConnectionEnd* end : {pair.client, pair.server}) {
      if (end == nullptr || end->boundaries.empty()) continue;
      auto protocol = capture::protocols::Protocol(end->boundaries.front().protocol);
      return protocol == capture::protocols::kHttp || protocol == capture::protocols::kRedis ||
             protocol == capture::protocols::kPostgres;
    }
    return true;  // no boundaries: one message per run, so position and run agree
  }

  void EmitDirection(const ConnectionEnd* sender, const ConnectionEnd* receiver, MessageKind kind,
                     uint32_t connection, bool ordered) {
    // Message boundaries come from the sender's own order of sends and receives when it
    // was traced, else from the receiver's; protocol boundaries from the sender's log if
    // it has any for this direction, else from the receiver's (message_splitter.h).
    const ConnectionEnd* definer = sender != nullptr ? sender : receiver;
    std::vector<const StreamBoundary*> boundaries = DirectionBoundaries(sender, receiver);
    std::vector<MessageSpan> spans = SplitMessages(*definer, sender != nullptr, boundaries);
    StringId sender_endpoint = builder_.String(sender != nullptr ? sender->local : receiver->peer);
    StringId receiver_endpoint =
        builder_.String(receiver != nullptr ? receiver->local : sender->peer);
    ReadCursor cursor(sender != nullptr ? receiver : nullptr);
    uint32_t sequence = 0;
    for (const MessageSpan& span : spans) {
      // The sender's first send, or the receiver's first read when the sender was not
      // traced; its payload prefix from the message's first byte, if it reaches that far.
      const StreamIo& opening = definer->io[span.first];
      std::string payload =
          PayloadHex(logs_, opening.log, opening.payload, span.begin - span.first_begin);
      MessageRecord record;
      record.kind = kind;
      ++sequence;
      record.call_id = builder_.String(CallId(connection, ordered, sequence, span));
      record.bytes = span.end - span.begin;
      record.sender_endpoint = sender_endpoint;
      record.receiver_endpoint = receiver_endpoint;
      if (sender != nullptr) {
        const StreamIo& first = sender->io[span.first];
        record.send_time = first.entry_ns;
        record.sender_thread = ThreadId(uint32_t(first.tid));
        record.sender = namer_.Traced(first.log, first.tid);
        const StreamIo* read = cursor.ReadHolding(span.end - 1);
        if (read != nullptr) {
          record.recv_time = read->exit_ns;
          record.receiver_thread = ThreadId(uint32_t(read->tid));
          record.receiver = namer_.Traced(read->log, read->tid);
        } else if (receiver != nullptr) {
          // Traced receiver that never read these bytes: named, but no receive time.
          record.receiver = namer_.Traced(receiver->log, 0);
        } else {
          record.receiver = namer_.Untraced(sender->peer);
        }
      } else {
        const StreamIo& last = receiver->io[span.last];
        record.recv_time = last.exit_ns;
        record.receiver_thread = ThreadId(uint32_t(last.tid));
        record.receiver = namer_.Traced(last.log, last.tid);
        record.sender = namer_.Untraced(receiver->peer);
      }
      uint32_t row = builder_.Add(record);
      if (!payload.empty()) builder_.AddAttribute(row, payload_key_, builder_.String(payload));
      if (span.boundary != nullptr) AddProtocolAttributes(row, *span.boundary);
      // The first call on a connection its sender's thread connected: when (a non-blocking
      // connect's call may be written later, from another fragment).
      if (sequence == 1 && kind == MessageKind::kCall && sender != nullptr &&
          sender->opener == Opener::kConnect &&
          sender->open_tid == int32_t(record.sender_thread.value()) &&
          sender->open_ns <= record.send_time) {
        builder_.AddAttribute(row, builder_.String(kConnectedAttribute),
                              builder_.String(fmt::format("{}", sender->open_ns)));
      }
      ++summary_.messages;
      summary_.bytes += uint64_t(record.bytes);
    }
    if (sender != nullptr && receiver != nullptr) {
      int64_t sent = spans.empty() ? 0 : spans.back().end;
      int64_t read = cursor.BytesRead();
      if (sent > read) summary_.unmatched_bytes += uint64_t(sent - read);
    }
  }

  // The call id of a message of connection `connection` (docs/reconcile.md, 5.): by
  // position where replies come in order; else by the processor's witness when it logged
  // one (the DNS id; a request's and its reply's are equal: "c3.w4660"); else the
  // direction-turn run's number.
  std::string CallId(uint32_t connection, bool ordered, uint32_t sequence,
                     const MessageSpan& span) const {
    if (ordered) return fmt::format("c{}.{}", connection, sequence);
    if (span.boundary != nullptr && span.boundary->boundary >= 0) {
      std::string_view witness = WitnessKey(span.boundary->protocol);
      for (const auto& [key, value] :
           logs_[span.boundary->log].boundaries[size_t(span.boundary->boundary)].attributes) {
        if (!witness.empty() && key == witness) return fmt::format("c{}.w{}", connection, value);
      }
    }
    return fmt::format("c{}.{}", connection, span.run + 1);
  }

  // "protocol" and what the processor logged (http.method, http.url, sql, ...) on the
  // message that ended at `b`.
  void AddProtocolAttributes(uint32_t row, const StreamBoundary& b) {
    std::string_view protocol =
        capture::protocols::ProtocolName(capture::protocols::Protocol(b.protocol));
    builder_.AddAttribute(row, protocol_key_, builder_.String(protocol));
    ++summary_.protocol_messages[std::string(protocol)];
    if (b.boundary < 0) return;
    for (const auto& [key, value] : logs_[b.log].boundaries[size_t(b.boundary)].attributes) {
      builder_.AddAttribute(row, builder_.String(key), builder_.String(value));
    }
  }

  std::span<const capture::EventLog> logs_;
  NodeNamer& namer_;
  TraceBuilder& builder_;
  ReconcileSummary& summary_;
  StringId payload_key_;
  StringId protocol_key_ = builder_.String(kProtocolAttribute);
};

// Pairs each end with its other end: for TCP the end whose 4-tuple is its reverse and whose
// lifetime overlaps it, nearest in open time, so a reused port gives one pair per lifetime
// (vPath §3.3); for Unix sockets the end with the inode it names as its peer (exact, however
// many connections join the same two processes on one path).
std::vector<ConnectionPair> PairEnds(const std::vector<ConnectionEnd>& ends) {
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> by_tuple;
  std::map<std::pair<std::array<uint8_t, 16>, uint64_t>, std::vector<size_t>> by_inode;
  for (size_t i = 0; i < ends.size(); ++i) {
    if (ends[i].merged_away || ends[i].pipe) continue;
    if (ends[i].unix_socket) {
      by_inode[{ends[i].boot_id, ends[i].inode}].push_back(i);
    } else {
      by_tuple[{ends[i].local, ends[i].peer}].push_back(i);
    }
  }
  auto overlaps = [](const ConnectionEnd& a, const ConnectionEnd& b) {
    bool a_before_b = a.close_ns != kNoTime && a.close_ns < b.open_ns;
    bool b_before_a = b.close_ns != kNoTime && b.close_ns < a.open_ns;
    return !a_before_b && !b_before_a;
  };
  static const std::vector<size_t> kNoCandidates;
  auto candidates = [&](const ConnectionEnd& end) -> const std::vector<size_t>& {
    if (end.unix_socket) {
      // The connecting end does not know its peer's inode; its peer finds it.
      if (end.peer_inode == 0) return kNoCandidates;
      auto it = by_inode.find({end.boot_id, end.peer_inode});
      return it != by_inode.end() ? it->second : kNoCandidates;
    }
    auto it = by_tuple.find({end.peer, end.local});
    return it != by_tuple.end() ? it->second : kNoCandidates;
  };
  std::vector<int64_t> partner(ends.size(), -1);
  for (size_t i = 0; i < ends.size(); ++i) {
    if (ends[i].merged_away || ends[i].pipe || partner[i] >= 0) continue;
    int64_t best = -1;
    TimeNs best_distance = 0;
    for (size_t j : candidates(ends[i])) {
      if (j == i || partner[j] >= 0 || !overlaps(ends[i], ends[j])) continue;
      if (ends[j].unix_socket && ends[j].peer_inode != 0 && ends[j].peer_inode != ends[i].inode)
        continue;
      TimeNs distance = std::abs(ends[j].open_ns - ends[i].open_ns);
      if (best < 0 || distance < best_distance) {
        best = int64_t(j);
        best_distance = distance;
      }
    }
    if (best >= 0) {
      partner[i] = best;
      partner[size_t(best)] = int64_t(i);
    }
  }
  std::vector<ConnectionPair> pairs;
  for (size_t i = 0; i < ends.size(); ++i) {
    if (ends[i].merged_away || ends[i].pipe) continue;
    const ConnectionEnd* other = partner[i] >= 0 ? &ends[size_t(partner[i])] : nullptr;
    if (other != nullptr && size_t(partner[i]) < i) continue;  // emitted with its partner
    switch (RoleOf(ends[i], other)) {
      case Role::kClient:
        pairs.push_back({&ends[i], other, false});
        break;
      case Role::kServer:
        pairs.push_back({other, &ends[i], false});
        break;
      case Role::kNeither:
        pairs.push_back({&ends[i], other, true});
        break;
    }
  }
  return pairs;
}

// One message per datagram. A socket that was bound explicitly serves a well-known port
// or path: datagrams to it are CALLs, from it RETURNs; between two such (or two unbound)
// sockets they are MSG. A Unix socket that connected is a client even when it bound a
// path to be answered at; a socketpair's ends are both unbound (MSG both ways, as on a
// stream socketpair). Call ids pair the k-th CALL and the k-th RETURN of a (client,
// server) endpoint pair: "u<flow>.<k>"; a DNS query and its answer by their id instead,
// "u<flow>.w<id>", since a resolver may answer one socket's queries in any order.
class DatagramEmitter {
 public:
  DatagramEmitter(std::span<const capture::EventLog> logs, std::span<const DatagramSocket> sockets,
                  NodeNamer& namer, TraceBuilder& builder, ReconcileSummary& summary)
      : logs_(logs),
        sockets_(sockets),
        namer_(namer),
        builder_(builder),
        summary_(summary),
        payload_key_(builder.String(kPayloadAttribute)) {}

  void Emit(const DatagramMessage& m) {
    const Datagram* first = m.send != nullptr ? m.send : m.recv;
    MessageRecord record;
    record.bytes = first->bytes;
    // Endpoints as the receiver saw the source (the real address, never 0.0.0.0).
    const std::string& source = m.recv != nullptr ? m.recv->peer : sockets_[m.send->socket].local;
    const std::string& destination =
        m.send != nullptr ? m.send->peer : sockets_[m.recv->socket].local;
    record.sender_endpoint = builder_.String(source);
    record.receiver_endpoint = builder_.String(destination);
    if (m.send != nullptr) {
      record.send_time = m.send->entry_ns;
      record.sender_thread = ThreadId(uint32_t(m.send->tid));
      record.sender = namer_.Traced(m.send->log, m.send->tid);
    } else {
      record.sender = namer_.Untraced(source);
    }
    if (m.recv != nullptr) {
      record.recv_time = m.recv->exit_ns;
      record.receiver_thread = ThreadId(uint32_t(m.recv->tid));
      record.receiver = namer_.Traced(m.recv->log, m.recv->tid);
    } else {
      record.receiver = namer_.Untraced(destination);
    }
    // Untraced sides are taken to be the opposite of the traced side.
    bool sender_serves =
        m.send != nullptr ? Serves(sockets_[m.send->socket]) : !Serves(sockets_[m.recv->socket]);
    bool receiver_serves = m.recv != nullptr ? Serves(sockets_[m.recv->socket]) : !sender_serves;
    // What the DNS processor read in the datagram, from the sender's log if it has it.
    const Datagram* described = m.send != nullptr && m.send->boundary >= 0 ? m.send : m.recv;
    const capture::Boundary* boundary =
        described != nullptr && described->boundary >= 0
            ? &logs_[described->log].boundaries[size_t(described->boundary)]
            : nullptr;
    if (sender_serves != receiver_serves) {
      record.kind = receiver_serves ? MessageKind::kCall : MessageKind::kReturn;
      auto flow_key = receiver_serves
                          ? std::make_pair(record.sender_endpoint, record.receiver_endpoint)
                          : std::make_pair(record.receiver_endpoint, record.sender_endpoint);
      auto [it, inserted] = flows_.try_emplace(flow_key, Flow{uint32_t(flows_.size() + 1), 0, 0});
      uint32_t& count = receiver_serves ? it->second.calls : it->second.returns;
      ++count;
      // A resolver may answer a socket's queries out of order: the id pairs them where the
      // processor read one (as on TCP), else the k-th reply answers the k-th query.
      std::string_view witness = boundary != nullptr ? WitnessKey(boundary->protocol) : "";
      const std::string* id = nullptr;
      for (size_t a = 0; !witness.empty() && a < boundary->attributes.size(); ++a) {
        if (boundary->attributes[a].first == witness) id = &boundary->attributes[a].second;
      }
      record.call_id =
          builder_.String(id != nullptr ? fmt::format("u{}.w{}", it->second.number, *id)
                                        : fmt::format("u{}.{}", it->second.number, count));
    }
    uint32_t row = builder_.Add(record);
    std::string payload = PayloadHex(logs_, first->log, first->payload);
    if (!payload.empty()) builder_.AddAttribute(row, payload_key_, builder_.String(payload));
    if (boundary != nullptr) {
      const capture::Boundary& b = *boundary;
      std::string_view protocol =
          capture::protocols::ProtocolName(capture::protocols::Protocol(b.protocol));
      builder_.AddAttribute(row, builder_.String(kProtocolAttribute), builder_.String(protocol));
      ++summary_.protocol_messages[std::string(protocol)];
      for (const auto& [key, value] : b.attributes) {
        builder_.AddAttribute(row, builder_.String(key), builder_.String(value));
      }
    }
    ++summary_.messages;
    bool unix_socket = sockets_[first->socket].unix_socket;
    ++(unix_socket ? summary_.unix_datagrams : summary_.datagrams);
    (unix_socket ? summary_.unix_datagrams_matched : summary_.datagrams_matched) +=
        m.send != nullptr && m.recv != nullptr;
    summary_.bytes += uint64_t(record.bytes);
  }

 private:
  static bool Serves(const DatagramSocket& s) { return s.bound && !s.connected; }

  struct Flow {
    uint32_t number, calls, returns;
  };
  std::span<const capture::EventLog> logs_;
  std::span<const DatagramSocket> sockets_;
  NodeNamer& namer_;
  TraceBuilder& builder_;
  ReconcileSummary& summary_;
  StringId payload_key_;
  absl::flat_hash_map<std::pair<StringId, StringId>, Flow> flows_;  // (client, server) endpoints
};

// Turns the reader's reports into lines naming the file and byte offset.
class LossCollector : public capture::Reporter {
 public:
  LossCollector(std::string path, std::vector<std::string>* lines)
      : path_(std::move(path)), lines_(lines) {}
  void Lost(uint64_t offset, uint64_t bytes, std::string_view reason) override {
    if (lines_ != nullptr)
      lines_->push_back(
          fmt::format("{}: byte {}: {} bytes lost: {}", path_, offset, bytes, reason));
  }

 private:
  std::string path_;
  std::vector<std::string>* lines_;
};

}  // namespace

Result<NodeNaming> ParseNodeNaming(std::string_view name) {
  if (name == "host") return NodeNaming::kHost;
  if (name == "process") return NodeNaming::kProcess;
  if (name == "thread") return NodeNaming::kThread;
  return Status::InvalidArgument("node naming '{}': expected host, process or thread", name);
}

std::string ReconcileSummary::OneLine() const {
  return fmt::format(
             "{} events, {} connection ends ({} paired, {} half-traced), {} messages, {} bytes, "
             "{} bytes never read, {} UDP datagrams ({} seen at both ends), {} Unix datagrams ({} "
             "seen "
             "at both ends), {} pipes, {} I/O events on other sockets skipped, {} I/O events on "
             "unnamed "
             "descriptors, {} logs with losses",
             events, connections, matched, half_traced, messages, bytes, unmatched_bytes, datagrams,
             datagrams_matched, unix_datagrams, unix_datagrams_matched, pipes, skipped_io,
             unnamed_io, losses.size()) +
         ProtocolPart() +
         (forks_linked + execs_linked == 0
              ? ""
              : fmt::format(", {} forks and {} execs linked to the processes they started",
                            forks_linked, execs_linked)) +
         (threads_linked == 0 ? ""
                              : fmt::format(", {} threads linked to the threads that created them",
                                            threads_linked)) +
         (isolated_reads + held_reads + split_waits == 0
              ? ""
              : fmt::format(
                    ", event isolation: {} reads cut at a message end, {} served from {} held "
                    "bytes, {} waits held inputs back",
                    isolated_reads, held_reads, held_bytes, split_waits));
}

std::string ReconcileSummary::HostClocks() const {
  std::vector<std::string> parts;
  for (const ClockOffset& h : host_offsets) {
    parts.push_back(
        fmt::format("{} is {}{} ahead of {} ({} messages)", h.b, h.offset >= 0 ? "" : "-",
                    FormatDuration(h.offset >= 0 ? h.offset : -h.offset), h.a, h.messages));
  }
  return parts.empty() ? "" : fmt::format("host clocks: {}", fmt::join(parts, "; "));
}

std::string ReconcileSummary::ProtocolPart() const {
  if (protocol_messages.empty()) return "";
  uint64_t total = 0;
  std::vector<std::string> parts;
  for (const auto& [protocol, count] : protocol_messages) {
    total += count;
    parts.push_back(fmt::format("{} {}", protocol, count));
  }
  return fmt::format(", {} messages ended at protocol boundaries ({})", total,
                     fmt::join(parts, ", "));
}

Result<Trace> Reconcile(std::span<const capture::EventLog> logs, const ReconcileOptions& options,
                        ReconcileSummary* summary) {
  ReconcileSummary local_summary;
  ReconcileSummary& s = summary != nullptr ? *summary : local_summary;
  s = ReconcileSummary{};
  // One epoch mapping per boot: the first log's reference is used for every log of that
  // boot, since they share CLOCK_MONOTONIC exactly.
  BootOffsets boot_offsets;
  std::map<std::array<uint8_t, 16>, uint32_t> boot_number;  // clocks, in order of first log
  std::vector<ClockId> clock_of_log(logs.size());
  std::vector<std::string> host_of_clock;
  std::vector<ConnectionEnd> ends;
  std::vector<DatagramSocket> udp_sockets;
  std::vector<Datagram> datagrams;
  ConnectionTableCounts counts;
  for (uint32_t i = 0; i < logs.size(); ++i) {
    const capture::EventLog& log = logs[i];
    auto [it, inserted] = boot_offsets.try_emplace(
        log.header.boot_id, log.header.clock_realtime_ns - log.header.clock_monotonic_ns);
    auto [number, first] =
        boot_number.try_emplace(log.header.boot_id, uint32_t(host_of_clock.size()));
    if (first) host_of_clock.push_back(log.header.host);
    clock_of_log[i] = ClockId(number->second);
    CollectConnectionEnds(log, i, it->second, ends, udp_sockets, datagrams, counts);
    std::string loss = DescribeLoss(log);
    if (!loss.empty()) s.losses.push_back(std::move(loss));
    s.isolated_reads += log.loss.isolated_reads;
    s.held_reads += log.loss.held_reads;
    s.held_bytes += log.loss.held_bytes;
    s.split_waits += log.loss.split_waits;
  }
  DateInheritedEndsFromFork(logs, boot_offsets, ends);
  MergeInheritedEnds(logs, ends);
  s.events = counts.events;
  s.skipped_io = counts.skipped_io;
  s.unnamed_io = counts.unnamed_io;

  std::vector<ConnectionPair> pairs = PairEnds(ends);
  // Connections are numbered in order of their first end's opening, for stable call ids.
  auto open_time = [](const ConnectionPair& p) {
    TimeNs c = p.client != nullptr ? p.client->open_ns : INT64_MAX;
    TimeNs v = p.server != nullptr ? p.server->open_ns : INT64_MAX;
    return std::min(c, v);
  };
  std::stable_sort(pairs.begin(), pairs.end(),
                   [&](const ConnectionPair& a, const ConnectionPair& b) {
                     return open_time(a) < open_time(b);
                   });
  TraceBuilder builder;
  NodeNamer namer(logs, clock_of_log, options.nodes, builder);
  MessageEmitter emitter(logs, namer, builder, s);
  uint32_t number = 0, pipes = 0;
  for (const ConnectionEnd& end : ends) {
    if (!end.pipe || end.merged_away || end.io.empty()) continue;
    ++s.pipes;
    emitter.EmitPipe(end, ++pipes);
  }
  for (const ConnectionPair& pair : pairs) {
    bool both = pair.client != nullptr && pair.server != nullptr;
    s.connections += both ? 2 : 1;
    if (both) {
      ++s.matched;
    } else {
      ++s.half_traced;
    }
    emitter.Emit(pair, ++number);
  }
  // Datagrams in time order of their first observed side, for stable call ids (at equal
  // times, in the order the logs were read).
  std::vector<DatagramMessage> datagram_messages = MatchDatagrams(udp_sockets, datagrams);
  std::vector<std::tuple<TimeNs, const Datagram*, uint32_t>>
      datagram_order;  // sorted without chasing pointers
  datagram_order.reserve(datagram_messages.size());
  for (uint32_t i = 0; i < datagram_messages.size(); ++i) {
    const DatagramMessage& m = datagram_messages[i];
    const Datagram* d = m.send != nullptr ? m.send : m.recv;
    datagram_order.emplace_back(d->send ? d->entry_ns : d->exit_ns, d, i);
  }
  std::sort(datagram_order.begin(), datagram_order.end());
  DatagramEmitter datagram_emitter(logs, udp_sockets, namer, builder, s);
  for (const auto& [time, first, i] : datagram_order) datagram_emitter.Emit(datagram_messages[i]);
  AddProcessLinks(
      logs, boot_offsets, [&](uint32_t log, int32_t tid) { return namer.Traced(log, tid); },
      builder, s);
  std::vector<ClockId> clock_of_node = namer.ClockOfNode();
  WEFT_ASSIGN_OR_RETURN(Trace trace, std::move(builder).Finish());
  if (host_of_clock.size() > 1) {
    // Hosts: their times are on their own clocks, mapped to the epoch by their realtime
    // clocks; how far those disagree is estimated from the messages between them (WAP5
    // §5.2), reported, and left in the data: times are never shifted.
    s.host_offsets = EstimateClockOffsets(trace, clock_of_node, host_of_clock).pairs;
  }
  return trace;
}

std::string DescribeLoss(const capture::EventLog& log) {
  const capture::EventLogLoss& l = log.loss;
  std::vector<std::string> parts;
  if (!l.has_end_record)
    parts.push_back("no end record (killed or still running: its last buffers are missing)");
  if (l.dropped_events > 0)
    parts.push_back(fmt::format("{} events dropped by the writer", l.dropped_events));
  if (l.truncated_bytes > 0)
    parts.push_back(fmt::format("{} bytes cut off after the last whole record", l.truncated_bytes));
  if (l.corrupt_bytes > 0) {
    parts.push_back(
        fmt::format("{} bytes in {} corrupt blocks skipped", l.corrupt_bytes, l.corrupt_blocks));
  }
  if (l.failed_writes > 0) parts.push_back(fmt::format("{} log writes failed", l.failed_writes));
  if (parts.empty()) return "";
  return fmt::format("{}: {}", log.path, fmt::join(parts, "; "));
}

Result<std::vector<capture::EventLog>> ReadCaptureDirectory(const std::string& dir,
                                                            std::vector<std::string>* losses) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    return Status::NotFound("{}: not a directory", dir);
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> paths, capture::FindEventLogs(dir));
  if (paths.empty()) return Status::NotFound("{}: no event logs (*.wev) under it", dir);
  std::vector<capture::EventLog> logs;
  logs.reserve(paths.size());
  for (const std::string& path : paths) {
    LossCollector collector(path, losses);
    WEFT_ASSIGN_OR_RETURN(capture::EventLog log, capture::ReadEventLog(path, &collector));
    logs.push_back(std::move(log));
  }
  return logs;
}

}  // namespace weft::reconcile
