// Stream connections and pipes -> messages (stream_emitter.h). vPath §3 (ATC'09):
// per-connection send/recv streams, normalised into messages at direction turns (§3.2).
// Two departures from vPath, both because weft's logs hold more:
//   - the two ends are lined up by byte offset, not by event count, so a 10-byte write
//     read as 4 + 6 bytes is still one message with an exact receive time;
//   - a receive completes at its exit time (logged), not at the next system call.
#include "reconcile/stream_emitter.h"

#include <fmt/format.h>

#include <algorithm>

#include "capture/grpc_metadata.h"
#include "capture/protocols/descriptor.h"
#include "reconcile/http2_messages.h"

namespace weft::reconcile {
namespace {

// Whether call ids may pair a connection's messages by position (descriptor.h
// replies_in_order), judged by the protocol of its first boundary. Where no processor
// found any, each message is a direction-turn run, and position and run agree.
const capture::protocols::ProtocolDescriptor* FirstProtocol(const ConnectionPair& pair) {
  for (const ConnectionEnd* end : {pair.client, pair.server}) {
    if (end == nullptr || end->boundaries.empty()) continue;
    return &capture::protocols::Describe(
        capture::protocols::Protocol(end->boundaries.front().protocol));
  }
  return nullptr;
}
bool AnswersInOrder(const ConnectionPair& pair) {
  const capture::protocols::ProtocolDescriptor* d = FirstProtocol(pair);
  return d == nullptr || d->replies_in_order;
}
// Whether the server's first message is a greeting that answers no request (MySQL's
// handshake): its replies are then numbered from 0, so that reply k still answers request k.
bool ServerGreets(const ConnectionPair& pair) {
  const capture::protocols::ProtocolDescriptor* d = FirstProtocol(pair);
  return d != nullptr && d->server_greets;
}

}  // namespace

void StreamEmitter::Emit(const ConnectionPair& pair, uint32_t connection) {
  bool ordered = AnswersInOrder(pair);
  bool greets = ordered && ServerGreets(pair);
  EmitDirection({pair.client, pair.server,
                 pair.symmetric ? MessageKind::kMessage : MessageKind::kCall, connection, ordered,
                 false});
  EmitDirection({pair.server, pair.client,
                 pair.symmetric ? MessageKind::kMessage : MessageKind::kReturn, connection, ordered,
                 greets});
}

void StreamEmitter::EmitDirection(const Direction& d) {
  // Message boundaries come from the sender's own order of sends and receives when it
  // was traced, else from the receiver's; protocol boundaries from the sender's log if
  // it has any for this direction, else from the receiver's (message_splitter.h).
  const ConnectionEnd* definer = d.sender != nullptr ? d.sender : d.receiver;
  std::vector<const StreamBoundary*> boundaries = DirectionBoundaries(d.sender, d.receiver);
  // HTTP/2 from the first byte, or after HTTP/1.1 messages (an upgrade to h2c).
  if (std::any_of(boundaries.begin(), boundaries.end(), [](const StreamBoundary* b) {
        return b->protocol == capture::protocols::kHttp2;
      })) {
    EmitHttp2Direction(d, *definer, boundaries);
    return;
  }
  std::vector<MessageSpan> spans = SplitMessages(*definer, d.sender != nullptr, boundaries);
  StringId sender_endpoint =
      builder_.String(d.sender != nullptr ? d.sender->local : d.receiver->peer);
  StringId receiver_endpoint =
      builder_.String(d.receiver != nullptr ? d.receiver->local : d.sender->peer);
  ReadCursor cursor(d.sender != nullptr ? d.receiver : nullptr);
  uint32_t sequence = 0;
  for (const MessageSpan& span : spans) {
    MessageRecord record;
    record.kind = d.kind;
    record.call_id = builder_.String(CallId(d, ++sequence, span));
    record.bytes = span.end - span.begin;
    record.sender_endpoint = sender_endpoint;
    record.receiver_endpoint = receiver_endpoint;
    // The read that carried the first byte: the receiver's own first read when the sender
    // was not traced (it defined the span), else found before the cursor moves past it.
    const StreamIo* first_read =
        d.sender == nullptr ? &definer->io[span.first] : cursor.ReadHolding(span.begin);
    SetEnds(d, span, cursor, record);
    if (first_read != nullptr && record.recv_time != kNoTime &&
        first_read->exit_ns < record.recv_time) {
      record.first_read_time = first_read->exit_ns;
    }
    if (sequence == 1) SetOpenTimes(d, record);
    uint32_t row = builder_.Add(record);
    // From the sender's sends, or the receiver's reads when the sender was not traced.
    attributes_.AddStreamPayload(row, *definer, d.sender != nullptr, span);
    if (const StreamBoundary* b = span.boundary; b != nullptr) {
      attributes_.AddProtocol(
          row, b->protocol,
          b->boundary >= 0 ? &logs_[b->log].boundaries[size_t(b->boundary)] : nullptr);
    }
    ++summary_.messages;
    summary_.bytes += uint64_t(record.bytes);
  }
  if (d.sender != nullptr && d.receiver != nullptr) {
    int64_t sent = spans.empty() ? 0 : spans.back().end;
    int64_t read = cursor.BytesRead();
    if (sent > read) summary_.unmatched_bytes += uint64_t(sent - read);
  }
}

void StreamEmitter::EmitHttp2Direction(const Direction& d, const ConnectionEnd& definer,
                                       std::span<const StreamBoundary* const> frames) {
  // The header-block pieces logged by the end whose frames these are.
  bool sends = frames.front()->send;
  const ConnectionEnd& logger = sends ? *d.sender : *d.receiver;
  std::vector<const StreamBoundary*> pieces;
  for (const StreamBoundary& b : logger.header_blocks) {
    if (b.send == sends) pieces.push_back(&b);
  }
  BoundaryLookup lookup = [&](const StreamBoundary& b) -> const capture::Boundary* {
    if (b.boundary < 0 || b.log >= logs_.size()) return nullptr;
    const std::vector<capture::Boundary>& all = logs_[b.log].boundaries;
    return size_t(b.boundary) < all.size() ? &all[size_t(b.boundary)] : nullptr;
  };
  // The receiver's SETTINGS (the other direction's frames) bound this sender's HPACK table.
  std::vector<const StreamBoundary*> back = DirectionBoundaries(d.receiver, d.sender);
  std::vector<Http2Message> messages =
      AssembleHttp2Messages(frames, pieces, lookup, PeerHeaderTableSize(back, lookup));
  // HTTP/1.1 messages before an upgrade to h2c (capture/protocols/http.cc): each a message
  // of its own, marked by its boundary's protocol. The last request before the switch is
  // stream 1's (RFC 7540 §3.2), answered in HTTP/2; the 101 that switched answers nothing.
  std::vector<Http2Message> http1;
  for (const StreamBoundary* b : frames) {
    if (b->protocol == capture::protocols::kHttp2) break;
    Http2Message m;
    m.begin = http1.empty() ? 0 : http1.back().end;
    m.end = b->offset;
    m.bytes = m.end - m.begin;
    m.complete = true;
    m.last = b;
    if (m.bytes > 0) http1.push_back(m);
  }
  if (!http1.empty() && d.kind == MessageKind::kCall) http1.back().stream = 1;
  messages.insert(messages.begin(), http1.begin(), http1.end());

  // The definer's calls in this direction with the offset each starts at.
  bool definer_sends = d.sender != nullptr;
  std::vector<std::pair<int64_t, size_t>> calls;  // (first offset, index into io)
  int64_t offset = 0;
  for (size_t i = 0; i < definer.io.size(); ++i) {
    if (definer.io[i].send != definer_sends) continue;
    calls.emplace_back(offset, i);
    offset += definer.io[i].bytes;
  }
  auto holding = [&](int64_t byte) -> const std::pair<int64_t, size_t>* {
    auto it = std::upper_bound(calls.begin(), calls.end(), byte,
                               [](int64_t b, const auto& call) { return b < call.first; });
    return it == calls.begin() ? nullptr : &*(it - 1);
  };
  StringId sender_endpoint =
      builder_.String(d.sender != nullptr ? d.sender->local : d.receiver->peer);
  StringId receiver_endpoint =
      builder_.String(d.receiver != nullptr ? d.receiver->local : d.sender->peer);
  ReadCursor cursor(d.sender != nullptr ? d.receiver : nullptr);
  int64_t first_begin = INT64_MAX;  // the connection's first message in this direction
  for (const Http2Message& m : messages) first_begin = std::min(first_begin, m.begin);
  for (const Http2Message& m : messages) {
    const auto* first = holding(m.begin);
    const auto* last = holding(m.end - 1);
    if (first == nullptr || last == nullptr || m.end > offset) continue;  // bytes never moved
    // A client's frames on a stream the server opened (even, RFC 9113 §5.1.1: a pushed
    // one, which it can only reset) are no request.
    if (d.kind == MessageKind::kCall && m.stream % 2 == 0 &&
        m.last->protocol == capture::protocols::kHttp2)
      continue;
    MessageSpan span;
    span.first = first->second;
    span.first_begin = first->first;
    span.last = last->second;
    span.begin = m.begin;
    span.end = m.end;
    MessageRecord record;
    // A pushed response answers no request on its own stream: a MSG, never paired.
    record.kind = m.pushed_by != 0 ? MessageKind::kMessage : d.kind;
    bool before_upgrade = m.last->protocol != capture::protocols::kHttp2;
    size_t http1_index = size_t(&m - messages.data()) + 1;
    if (before_upgrade && m.stream == 0) {
      const capture::Boundary* logged = lookup(*m.last);
      bool switching = false;
      if (logged != nullptr) {
        for (const auto& [key, value] : logged->attributes)
          switching = switching || (key == "http.status" && value == "101");
      }
      if (switching) record.kind = MessageKind::kMessage;
    }
    record.call_id = builder_.String(before_upgrade && m.stream == 0
                                         ? fmt::format("c{}.h{}", d.connection, http1_index)
                                         : fmt::format("c{}.w{}", d.connection, m.stream));
    record.bytes = m.bytes;
    record.sender_endpoint = sender_endpoint;
    record.receiver_endpoint = receiver_endpoint;
    SetEnds(d, span, cursor, record);
    if (m.begin == first_begin) SetOpenTimes(d, record);
    uint32_t row = builder_.Add(record);
    if ((record.kind == MessageKind::kCall && m.headers_known) ||
        record.kind == MessageKind::kReturn)
      NoteWireCall(d, m, record, row);
    const StreamIo& opening = definer.io[span.first];
    attributes_.AddPayload(row, opening.log, opening.payload, span.begin - span.first_begin);
    if (before_upgrade) {
      attributes_.AddProtocol(row, m.last->protocol, lookup(*m.last));
      if (m.stream != 0)
        builder_.AddAttribute(row, builder_.String("http2.stream"),
                              builder_.String(std::to_string(m.stream)));
    } else {
      attributes_.AddProtocol(row, capture::protocols::kHttp2, nullptr);
      for (const auto& [key, value] : Http2Attributes(m)) {
        builder_.AddAttribute(row, builder_.String(key), builder_.String(value));
      }
    }
    ++summary_.messages;
    summary_.bytes += uint64_t(record.bytes);
  }
  if (d.sender != nullptr && d.receiver != nullptr) {
    int64_t read = cursor.BytesRead();
    if (offset > read) summary_.unmatched_bytes += uint64_t(offset - read);
  }
}

void StreamEmitter::NoteWireCall(const Direction& d, const Http2Message& m,
                                 const MessageRecord& record, uint32_t row) {
  uint64_t hash = 0;
  for (const HeaderField& f : m.headers) {
    hash += capture::GrpcFieldHash(f.name.data(), f.name.size(), f.value.data(), f.value.size());
  }
  if (d.sender != nullptr && record.send_time != kNoTime && record.sender_thread.valid()) {
    grpc_wire_calls_.push_back({.log = d.sender->log,
                                .sent = true,
                                .hash = hash,
                                .tid = int32_t(record.sender_thread.value()),
                                .time = record.send_time,
                                .row = row,
                                .kind = record.kind,
                                .call_id = record.call_id});
  }
  if (d.receiver != nullptr && record.recv_time != kNoTime && record.receiver_thread.valid()) {
    grpc_wire_calls_.push_back({.log = d.receiver->log,
                                .sent = false,
                                .hash = hash,
                                .tid = int32_t(record.receiver_thread.value()),
                                .time = record.recv_time,
                                .row = row,
                                .kind = record.kind,
                                .call_id = record.call_id});
  }
}

// A non-blocking connect's call may be written later, from another fragment; a layer-4
// proxy connects onward when it accepts, before it reads the request (infer/fragment).
void StreamEmitter::SetOpenTimes(const Direction& d, MessageRecord& record) {
  if (d.kind != MessageKind::kCall) return;
  if (const ConnectionEnd* s = d.sender; s != nullptr && s->opener == Opener::kConnect &&
                                         s->open_tid == int32_t(record.sender_thread.value()) &&
                                         s->open_ns <= record.send_time) {
    record.connect_time = s->open_ns;
  }
  const ConnectionEnd* r = d.receiver;
  if (r == nullptr || r->opener != Opener::kAccept || record.recv_time == kNoTime) return;
  // When the reading thread took the connection up: its first read that found nothing,
  // else its accept.
  const int32_t reader = int32_t(record.receiver_thread.value());
  const TimeNs taken = r->taken_tid == reader  ? r->taken_ns  // (a tid is never 0)
                       : r->open_tid == reader ? r->open_ns
                                               : kNoTime;
  if (taken != kNoTime && taken <= record.recv_time) record.accept_time = taken;
}

void StreamEmitter::SetEnds(const Direction& d, const MessageSpan& span, ReadCursor& cursor,
                            MessageRecord& record) {
  if (d.sender == nullptr) {
    const StreamIo& last = d.receiver->io[span.last];
    record.recv_time = last.exit_ns;
    record.receiver_thread = ThreadId(uint32_t(last.tid));
    record.receiver = namer_.Traced(last.log, last.tid);
    record.sender = namer_.Untraced(d.receiver->peer);
    return;
  }
  const StreamIo& first = d.sender->io[span.first];
  record.send_time = first.entry_ns;
  record.sender_thread = ThreadId(uint32_t(first.tid));
  record.sender = namer_.Traced(first.log, first.tid);
  const StreamIo* read = cursor.ReadHolding(span.end - 1);
  if (read != nullptr) {
    record.recv_time = read->exit_ns;
    record.receiver_thread = ThreadId(uint32_t(read->tid));
    record.receiver = namer_.Traced(read->log, read->tid);
  } else if (d.receiver != nullptr) {
    // Traced receiver that never read these bytes: named, but no receive time.
    record.receiver = namer_.Traced(d.receiver->log, 0);
  } else {
    record.receiver = namer_.Untraced(d.sender->peer);
  }
}

// The call id of a message (docs/reconcile.md, 5.): by position where replies come in
// order; else by the processor's witness when it logged one (the DNS id; a request's and
// its reply's are equal: "c3.w4660"); else the direction-turn run's number, which is all
// a run of requests and the run of replies after it are known to share.
std::string StreamEmitter::CallId(const Direction& d, uint32_t sequence,
                                  const MessageSpan& span) const {
  if (d.ordered) return fmt::format("c{}.{}", d.connection, d.greets ? sequence - 1 : sequence);
  if (const StreamBoundary* b = span.boundary; b != nullptr && b->boundary >= 0) {
    const std::string* witness =
        FindWitness(b->protocol, &logs_[b->log].boundaries[size_t(b->boundary)]);
    if (witness != nullptr) return fmt::format("c{}.w{}", d.connection, *witness);
  }
  return fmt::format("c{}.{}", d.connection, span.run + 1);
}

void StreamEmitter::EmitPipe(const ConnectionEnd& pipe, uint32_t number) {
  std::vector<size_t> writes, reads;
  for (size_t i = 0; i < pipe.io.size(); ++i) (pipe.io[i].send ? writes : reads).push_back(i);
  uint32_t sequence = 0;
  if (writes.empty()) {
    for (size_t r : reads) {
      uint32_t row =
          AddPipeMessage(pipe, number, ++sequence, nullptr, &pipe.io[r], pipe.io[r].bytes);
      attributes_.AddPayload(row, pipe.io[r].log, pipe.io[r].payload);
    }
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
    uint32_t row = AddPipeMessage(pipe, number, ++sequence, &pipe.io[first_of_message],
                                  cursor.ReadHolding(written - 1), written - message_start);
    // Its first bytes, as a stream message's: from the writes that made it.
    MessageSpan span{.first = first_of_message,
                     .last = writes[w],
                     .begin = message_start,
                     .end = written,
                     .first_begin = message_start};
    attributes_.AddStreamPayload(row, pipe, true, span);
    message_start = written;
  }
}

// A pipe message: MSG, call id "p<pipe>.<k>", both endpoints the pipe's name. Returns its
// row.
uint32_t StreamEmitter::AddPipeMessage(const ConnectionEnd& pipe, uint32_t number,
                                       uint32_t sequence, const StreamIo* first_write,
                                       const StreamIo* completing_read, int64_t bytes) {
  MessageRecord record;
  record.kind = MessageKind::kMessage;
  record.sender_endpoint = record.receiver_endpoint = builder_.String(pipe.local);
  record.call_id = builder_.String(fmt::format("p{}.{}", number, sequence));
  record.bytes = bytes;
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
  uint32_t row = builder_.Add(record);
  ++summary_.messages;
  summary_.bytes += uint64_t(bytes);
  return row;
}

}  // namespace weft::reconcile
