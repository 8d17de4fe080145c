// Datagrams -> messages (datagram_emitter.h).
#include "reconcile/datagram_emitter.h"

#include <fmt/format.h>

#include <string>

namespace weft::reconcile {

void DatagramEmitter::Emit(const DatagramMessage& m) {
  const Datagram* first = m.send != nullptr ? m.send : m.recv;
  MessageRecord record;
  record.bytes = first->bytes;
  SetEnds(m, record);
  // What the DNS processor read in the datagram, from the sender's log if it has it.
  const Datagram* described = m.send != nullptr && m.send->boundary >= 0 ? m.send : m.recv;
  const capture::Boundary* boundary =
      described != nullptr && described->boundary >= 0
          ? &logs_[described->log].boundaries[size_t(described->boundary)]
          : nullptr;
  SetKindAndCallId(m, boundary, record);
  uint32_t row = builder_.Add(record);
  attributes_.AddPayload(row, first->log, first->payload);
  if (boundary != nullptr) attributes_.AddProtocol(row, boundary->protocol, boundary);
  Count(m, record.bytes);
}

void DatagramEmitter::SetEnds(const DatagramMessage& m, MessageRecord& record) {
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
}

void DatagramEmitter::SetKindAndCallId(const DatagramMessage& m, const capture::Boundary* described,
                                       MessageRecord& record) {
  // Untraced sides are taken to be the opposite of the traced side.
  bool sender_serves =
      m.send != nullptr ? Serves(sockets_[m.send->socket]) : !Serves(sockets_[m.recv->socket]);
  bool receiver_serves = m.recv != nullptr ? Serves(sockets_[m.recv->socket]) : !sender_serves;
  if (sender_serves == receiver_serves) return;  // MSG, no call id
  record.kind = receiver_serves ? MessageKind::kCall : MessageKind::kReturn;
  auto flow_key = receiver_serves
                      ? std::make_pair(record.sender_endpoint, record.receiver_endpoint)
                      : std::make_pair(record.receiver_endpoint, record.sender_endpoint);
  auto [it, inserted] = flows_.try_emplace(flow_key, Flow{uint32_t(flows_.size() + 1), 0, 0});
  uint32_t& count = receiver_serves ? it->second.calls : it->second.returns;
  ++count;
  // A resolver may answer a socket's queries out of order: the id pairs them where the
  // processor read one (as on TCP), else the k-th reply answers the k-th query.
  const std::string* id =
      described != nullptr ? FindWitness(described->protocol, described) : nullptr;
  record.call_id = builder_.String(id != nullptr ? fmt::format("u{}.w{}", it->second.number, *id)
                                                 : fmt::format("u{}.{}", it->second.number, count));
}

void DatagramEmitter::Count(const DatagramMessage& m, int64_t bytes) {
  const Datagram* first = m.send != nullptr ? m.send : m.recv;
  ++summary_.messages;
  bool unix_socket = sockets_[first->socket].unix_socket;
  ++(unix_socket ? summary_.unix_datagrams : summary_.datagrams);
  (unix_socket ? summary_.unix_datagrams_matched : summary_.datagrams_matched) +=
      m.send != nullptr && m.recv != nullptr;
  summary_.bytes += uint64_t(bytes);
}

}  // namespace weft::reconcile
