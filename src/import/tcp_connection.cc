// One TCP connection of a packet capture: tcp_connection.h.
#include "import/tcp_connection.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "capture/protocols/descriptor.h"

namespace weft::import {

void TcpConnection::OnBytes(int d, const uint8_t* data, size_t length, TimeNs time) {
  if (last_direction_ != d) {
    // Mid-connection, the server's bytes came first: they answer a request the capture
    // missed, not the client's next one.
    if (last_direction_ < 0 && d == 1 && midstream_) answers_missed_request_ = true;
    if (last_direction_ >= 0) cutters_[1 - d].OnTurn();
    ++runs_[d];
    last_direction_ = d;
    // The server spoke first, or answered before the request was told apart: the
    // preload library leaves such a stream unparsed, and so does the import.
    if (state_ == kDetecting && d == 1) state_ = kOff;
  }
  uint32_t run = runs_[d] - 1;
  if (state_ == kDetecting) {
    size_t had = early_length_;
    size_t take = std::min(length, kDetectBytes - had);
    uint8_t first[kDetectBytes];
    std::memcpy(first, early_, had);
    std::memcpy(first + had, data, take);
    protocols::Protocol p = protocols::Detect(first, had + take);
    bool allowed = p != protocols::kNone && (detect_ & (1u << p)) != 0;
    if (!allowed && had + take < kEarlyBytes) {
      std::memcpy(early_ + had, data, take);
      early_length_ = had + take;
      cutters_[d].Append(data, length, time, run);
      return;
    }
    state_ = kOff;
    if (allowed) Activate(p);
  }
  cutters_[d].Append(data, length, time, run);
}

void TcpConnection::Activate(protocols::Protocol p) {
  // HTTP/2's messages are assembled per stream from frames (reconcile/http2_messages.h),
  // which the import does not do: its connections are cut at direction turns.
  if (p == protocols::kHttp2) {
    state_ = kOff;
    return;
  }
  state_ = kActive;
  protocol_ = p;
  cutters_[0].StartParser(p, early_, early_length_);
  cutters_[1].StartParser(p, nullptr, 0);
}

MessageOutput::MessageOutput(TraceBuilder* builder, PcapImportSummary* summary)
    : builder_(builder),
      summary_(summary),
      protocol_key_(builder->String("protocol")),
      gap_key_(builder->String(kGapAttribute)) {}

uint32_t MessageOutput::Add(const MessageRecord& record, protocols::Protocol protocol,
                            const protocols::Attributes* attributes) {
  const uint32_t row = builder_->Add(record);
  if (attributes != nullptr) {
    std::string_view name = protocols::Describe(protocol).name;
    builder_->AddAttribute(row, protocol_key_, builder_->String(name));
    ++summary_->protocol_messages[std::string(name)];
    for (int i = 0; i < attributes->count && i < protocols::kMaxAttributes; ++i) {
      const protocols::Attribute& a = attributes->items[i];
      builder_->AddAttribute(row, builder_->String(a.key),
                             builder_->String(std::string_view(a.value, a.length)));
    }
  }
  ++summary_->messages;
  summary_->bytes += uint64_t(record.bytes);
  return row;
}

void MessageOutput::AddGap(uint32_t row, int64_t length) {
  builder_->AddAttribute(row, gap_key_, builder_->String(fmt::format("{}", length)));
}

const protocols::Attribute* FindWitness(protocols::Protocol protocol,
                                        const protocols::Attributes& attributes) {
  const char* key = protocols::Describe(protocol).witness_key;
  const protocols::Attribute* found = nullptr;
  for (int i = 0; i < attributes.count && key != nullptr; ++i) {
    if (std::strcmp(attributes.items[i].key, key) == 0) found = &attributes.items[i];
  }
  return found;
}

void TcpConnection::OnMessage(int d, const CutMessage& m) {
  uint32_t sequence = ++sequence_[d];
  if (m.attributes != nullptr) boundary_seen_ = true;
  const protocols::ProtocolDescriptor& described =
      protocols::Describe(boundary_seen_ ? protocol_ : protocols::kNone);
  // Call ids as reconcile gives them (reconcile/stream_emitter.cc): by position where
  // replies come in order, by the processor's witness, else by run.
  std::string call_id;
  const protocols::Attribute* witness = !described.replies_in_order && m.attributes != nullptr
                                            ? FindWitness(protocol_, *m.attributes)
                                            : nullptr;
  // A connection no processor cut has a message per run (or per part of a run, around a
  // gap): the run pairs a request with its reply.
  if (boundary_seen_ && described.replies_in_order) {
    bool greets = described.server_greets && d == 1;
    call_id = fmt::format("c{}.{}", number_, greets ? sequence - 1 : sequence);
  } else if (witness != nullptr) {
    call_id = fmt::format("c{}.w{}", number_, std::string_view(witness->value, witness->length));
  } else {
    // Reply runs are numbered from 0 when the first one answers a request never captured
    // ("c4.0" pairs with no CALL).
    call_id = fmt::format("c{}.{}", number_, d == 1 && answers_missed_request_ ? m.run : m.run + 1);
  }
  MessageRecord record;
  record.kind = d == 0 ? MessageKind::kCall : MessageKind::kReturn;
  record.send_time = m.time;
  record.sender = ends_.node[d];
  record.receiver = ends_.node[1 - d];
  record.sender_endpoint = ends_.endpoint[d];
  record.receiver_endpoint = ends_.endpoint[1 - d];
  record.bytes = m.end - m.begin;
  record.call_id = output_->builder().String(call_id);
  if (d == 0 && sequence == 1 && syn_time_ != kNoTime && syn_time_ <= m.time) {
    record.connect_time = syn_time_;
  }
  const uint32_t row = output_->Add(record, m.protocol, m.attributes);
  if (m.gap_before > 0) output_->AddGap(row, m.gap_before);
}

}  // namespace weft::import
