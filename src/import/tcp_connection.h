// One TCP connection of a packet capture (pcap_import.h): its two directions reassembled
// by sequence number, the protocol processor that reads them (chosen by port, or detected
// from the client's first bytes as the preload library does), and each message cut added
// to the trace with its call id as reconcile gives it.
#pragma once

#include <array>
#include <cstdint>

#include "capture/protocols/protocol.h"
#include "core/id.h"
#include "import/message_cutter.h"
#include "import/pcap_import.h"
#include "import/tcp_reassembly.h"
#include "trace/trace.h"

namespace weft::import {

namespace protocols = capture::protocols;

// Stream detection looks at most this far into a connection's first request, and decides
// once it has this many bytes, as the preload library does (protocol_streams.cc).
inline constexpr size_t kDetectBytes = 64;
inline constexpr size_t kEarlyBytes = 16;

// The names and endpoints of a flow's two sides: [0] the client, [1] the server.
struct FlowEnds {
  std::array<uint8_t, 16> ip[2];
  uint16_t port[2];
  NodeId node[2];
  StringId endpoint[2];
};

// Where the capture's messages go, TCP and UDP alike: the trace being built, with the
// import's summary counting them.
class MessageOutput {
 public:
  // Both outlive it.
  MessageOutput(TraceBuilder* builder, PcapImportSummary* summary);

  TraceBuilder& builder() { return *builder_; }
  // Adds `record` and counts it; with `attributes` (a processor cut the message) also
  // `protocol`'s name and the attributes. Returns its row.
  uint32_t Add(const MessageRecord& record, protocols::Protocol protocol,
               const protocols::Attributes* attributes);
  // `length` bytes are missing from the capture just before message `row`.
  void AddGap(uint32_t row, int64_t length);

 private:
  TraceBuilder* builder_;
  PcapImportSummary* summary_;
  StringId protocol_key_, gap_key_;
};

// The attribute of `protocol`'s witness (descriptor.h) among `attributes`, or null.
const protocols::Attribute* FindWitness(protocols::Protocol protocol,
                                        const protocols::Attributes& attributes);

class TcpConnection : public MessageSink {
 public:
  // `output` outlives the connection.
  TcpConnection(MessageOutput* output, uint32_t number, const FlowEnds& ends, TimeNs syn_time,
                ReassemblyCounters* counters)
      : output_(output),
        number_(number),
        ends_(ends),
        syn_time_(syn_time),
        streams_{TcpReassembler(counters), TcpReassembler(counters)},
        cutters_{MessageCutter(0, this), MessageCutter(1, this)},
        sinks_{Sink(this, 0), Sink(this, 1)} {}

  const FlowEnds& ends() const { return ends_; }
  TcpReassembler& stream(int d) { return streams_[d]; }
  StreamSink& sink(int d) { return sinks_[d]; }

  // A processor chosen by port: it reads both directions from their first byte.
  void StartProtocol(protocols::Protocol protocol) { Activate(protocol); }
  void DetectFromBytes(uint32_t allowed) {
    detect_ = allowed;
    state_ = allowed != 0 ? kDetecting : kOff;
  }

  // Neither SYN nor SYN-ACK was captured: the capture began after the connection did.
  void MarkMidstream() { midstream_ = true; }

  // Delivers what waits, cuts what pends: the connection is over.
  void Close() {
    if (closed_) return;
    closed_ = true;
    streams_[0].Finish(sinks_[0]);
    streams_[1].Finish(sinks_[1]);
    cutters_[0].Finish();
    cutters_[1].Finish();
  }

  void OnMessage(int direction, const CutMessage& m) override;

 private:
  enum State : uint8_t { kDetecting, kActive, kOff };
  class Sink : public StreamSink {
   public:
    Sink(TcpConnection* c, int d) : c_(c), d_(d) {}
    void OnBytes(const uint8_t* data, size_t length, TimeNs time) override {
      c_->OnBytes(d_, data, length, time);
    }
    void OnGap(int64_t length) override { c_->cutters_[d_].OnGap(length); }

   private:
    TcpConnection* c_;
    int d_;
  };

  void OnBytes(int d, const uint8_t* data, size_t length, TimeNs time);
  // `p`'s processor reads both directions from their first byte: the request bytes kept
  // while detecting are fed to it first.
  void Activate(protocols::Protocol p);

  MessageOutput* output_;
  uint32_t number_;
  FlowEnds ends_;
  TimeNs syn_time_;
  TcpReassembler streams_[2];
  MessageCutter cutters_[2];
  Sink sinks_[2];
  State state_ = kOff;
  uint32_t detect_ = 0;
  protocols::Protocol protocol_ = protocols::kNone;
  bool boundary_seen_ = false;  // a processor ended a message: call ids follow its protocol
  uint8_t early_[kEarlyBytes] = {};
  size_t early_length_ = 0;
  int last_direction_ = -1;
  uint32_t runs_[2] = {0, 0};
  uint32_t sequence_[2] = {0, 0};
  bool closed_ = false;
  bool midstream_ = false;  // neither SYN nor SYN-ACK was captured
  bool answers_missed_request_ = false;
};

}  // namespace weft::import
