// The testbed's wire protocol, its blocking socket helpers and the ground-truth log.
//
// A frame is a 4-byte big-endian payload length, then the payload: type (1 byte), request
// type index (2), request id (8), call id (8), parent call id (8), then padding up to the
// message size the topology asks for. A frame may carry the request's Pivot Tracing
// baggage at the start of the padding: the bytes 0x00 'B', a 4-byte big-endian size (at
// most kMaxFrameBaggage), then the baggage (pivot/baggage.h's binary form); the payload
// grows past the asked size only when the baggage does not fit. Padding is '.', so a frame
// without the field (every frame before it existed) reads as one without baggage; a field
// that does not fit its frame, or is over the bound, is ignored. Request and call ids travel inside
// the payload only so that the truth log can record them; inference never reads payloads or truth
// logs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/time.h"

namespace weft::testbed {

enum class FrameType : uint8_t { kRequest = 1, kReply = 2, kError = 3 };

struct Frame {
  FrameType type = FrameType::kRequest;
  uint16_t request_type = 0;
  uint64_t request_id = 0;
  uint64_t call_id = 0;      // a CALL and its RETURN carry the same call id
  uint64_t parent_call = 0;  // the call into the sender this call is nested in; 0 for roots
  // HTTP only ("Connection: close"): the sender closes the connection after this message.
  // A reply copies it from its request, so a server answers a closing request and closes.
  bool close = false;
  // The request's serialized Pivot baggage (a call: a branch of the caller's; a reply: the
  // callee's, for the caller to join); empty: none. HTTP carries it in a W3C `baggage`
  // header, as Pivot's member.
  std::string baggage;
};

inline constexpr size_t kPayloadHeader = 27;
inline constexpr size_t kFrameBaggageHeader = 6;
inline constexpr uint32_t kMaxFrameBaggage = 64 << 10;
inline constexpr uint32_t kMaxPayload = 1 << 20;

// The whole frame on the wire, padded to `payload_bytes` (at least the header).
std::string EncodeFrame(const Frame& frame, uint32_t payload_bytes);

// The frame, or the same fields as an HTTP/1.1 message (testbed/http.h), for tiers with
// protocol = "http"; `chunked` sends an HTTP body in chunks.
std::string EncodeMessage(const Frame& frame, uint32_t payload_bytes, bool http,
                          bool chunked = false);
// Takes one whole message (a frame, or an HTTP message) from the front of `buf`: true when
// one was taken, false when `buf` holds only part of one, an error when it is malformed.
Result<bool> TakeMessage(std::string& buf, bool http, Frame* frame, size_t* wire_bytes);
Result<Frame> DecodePayload(std::string_view payload);

// A connected socket and its two endpoints as "127.0.0.1:port". Closes on destruction.
struct Conn {
  explicit Conn(int fd_in);
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  int fd;
  std::string local, peer;
  std::mutex write_mu;    // replies from several threads on one connection
  bool datagram = false;  // a connected UDP socket: one frame per datagram
  bool http = false;      // HTTP/1.1 messages instead of frames
  // Bytes read past the last whole message: HTTP reads, and every non-blocking reader
  // (the pool dispatcher, the event loop) keeps a partial message here between reads.
  std::string rbuf;
  // HTTP/1.1 answers pipelined requests in the order they came (RFC 9112 §9.3.2): the one
  // reader of a connection numbers each request it takes (next_request, the reader's
  // own), and ReleaseReply holds a reply finished early until every earlier one is out.
  uint64_t next_request = 0;
  uint64_t next_reply = 0;                                 // guarded by write_mu
  std::map<uint64_t, std::pair<Frame, std::string>> held;  // guarded by write_mu
};

// The replies to write now on `conn`, in order, once the reply to request number `seq`
// is ready: none while an earlier reply is still pending (this one is then held), else
// this one and every held reply that follows it. Framed connections carry call ids and
// never hold a reply. Call with conn.write_mu held.
std::vector<std::pair<Frame, std::string>> ReleaseReply(Conn& conn, uint64_t seq, Frame reply,
                                                        std::string wire);

// Connects to 127.0.0.1:port (TCP, or a connected UDP socket) with send and receive
// timeouts of `timeout`.
Result<std::unique_ptr<Conn>> ConnectLoopback(uint16_t port, TimeNs timeout, bool datagram = false);
Status SetTimeouts(int fd, TimeNs timeout);

// Reads one frame. nullopt on a clean end of stream before the frame; an error on a
// timeout, a reset, a short frame or a malformed payload. `wire_bytes` gets the size.
Result<std::optional<Frame>> ReadFrame(int fd, size_t* wire_bytes);
// ReadFrame for a stream, one datagram for a UDP socket, one HTTP message for HTTP.
Result<std::optional<Frame>> ReadConnFrame(Conn& conn, size_t* wire_bytes);
// Appends what the socket holds now to conn.rbuf without blocking (one read, at most
// 64 KiB: a readiness loop calls it again while epoll reports the socket readable). true
// while the stream is open (also when nothing was there), false at its end; an error on a
// reset or another read failure.
Result<bool> ReadAvailable(Conn& conn);
// A whole frame received as one datagram.
Result<Frame> DecodeDatagram(std::string_view datagram);
Status WriteAll(int fd, std::string_view data);

uint32_t CurrentThreadId();
TimeNs WallNow();
// Sleeps for a service time (the testbed simulates work by waiting, not spinning, so that
// many requests fit on two cores).
void Serve(TimeNs d);

// One process's ground truth: a line per message sent or received (docs/testbed.md). Each
// line is one write(2) to an O_APPEND file, so a killed process loses nothing it logged.
class TruthLog {
 public:
  static Result<std::unique_ptr<TruthLog>> Open(const std::string& dir, const std::string& node);
  ~TruthLog();
  enum class Direction : char { kSend = 'S', kRecv = 'R' };
  // `request_name` is the request type's name for calls, "-" for replies.
  void Record(Direction dir, const Frame& frame, const Conn& conn, size_t bytes,
              std::string_view request_name, TimeNs when);

 private:
  explicit TruthLog(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace weft::testbed
