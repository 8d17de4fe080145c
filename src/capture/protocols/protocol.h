// Protocol processors (BorderPatrol §3.3 and §5.2, EuroSys'08): they find where messages
// end in a byte stream and pick out what a user asks about (URL, SQL text, Redis
// command), knowing a protocol's envelope and little more. Capture uses them to log
// message boundaries and attributes, and event isolation (weft capture --isolate) to
// stop reads at a boundary.
//
// This code is compiled into libweft-preload.so as well as into weft_capture, so it
// follows the preload library's rules: no allocation, no exceptions, no C++ library, no
// virtual functions. A parser is a fixed-size struct the caller owns; dispatch is a
// switch on its protocol.
//
// BorderPatrol's interface has four functions (init, read, write, shutdown); weft's has
// one that serves both sides: Consume says where the current message ends, whether the
// bytes are being read (isolation shortens the read there) or written (capture logs the
// boundary and goes on). Shutdown has nothing to free.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace weft::capture::protocols {

enum Protocol : uint8_t {
  kNone = 0,       // no processor: messages end where the direction turns (reconcile)
  kHttp = 1,       // HTTP/1.0 and 1.1: pipelining, Content-Length and chunked bodies
  kTestbed = 2,    // the testbed's frames (testbed/wire.h): 4-byte big-endian length
  kPostgres = 3,   // PostgreSQL frontend/backend protocol v3: simple and extended query
  kRedis = 4,      // Redis RESP2/RESP3 and inline commands
  kDns = 5,        // DNS: one message per UDP datagram, 2-byte length prefix over TCP
  kLine = 6,       // any protocol whose messages end with '\n'
  kOneShot = 7,    // one request and one reply per connection: the stream is one message
  kMysql = 8,      // MySQL/MariaDB client/server protocol: text and prepared statements
  kMemcached = 9,  // memcached's text and binary protocols
  kHttp2 = 10,     // HTTP/2 with prior knowledge (h2c): one end per stream frame
  kProtocolCount = 11,
};

// "none", "http", "testbed", "postgres", "redis", "dns", "line", "oneshot", "mysql",
// "memcached", "http2".
const char* ProtocolName(Protocol protocol);
// The protocol named by the `length` bytes at `name`; false if none is.
bool ParseProtocol(const char* name, size_t length, Protocol* protocol);

// Which way bytes go: requests from the side that connected (the client) to the side
// that accepted (the server), responses back. A parser reads one direction of one
// connection.
enum class Direction : uint8_t { kRequest = 0, kResponse = 1 };

// What a processor found out about the message that ended: at most kMaxAttributes
// key=value pairs, each value cut to kMaxValue bytes. Keys are string literals
// ("http.method", "http.url", "http.request_id", "http.traceparent", "http.status", "sql",
// "redis.command", "redis.key", "dns.id", "dns.name", "testbed.request", "mysql.command",
// "mysql.stmt", "mysql.user", "mysql.db", "mysql.status", "mysql.rows", "mysql.server",
// "memcached.command", "memcached.key", "memcached.reply", "memcached.status",
// "memcached.opaque", "http2.stream", "http2.frame", "http2.length", "http2.promised",
// "http2.header_table_size").
inline constexpr int kMaxAttributes = 4;
inline constexpr int kMaxValue = 120;
struct Attribute {
  const char* key;
  uint8_t key_length;  // strlen(key), for the log's writer
  uint8_t length;
  char value[kMaxValue];
};
struct Attributes {
  uint8_t count;
  Attribute items[kMaxAttributes];
};

// The per-protocol part of a parser's state: opaque to callers, large enough for every
// processor (protocols.cc checks with static_assert).
inline constexpr size_t kParserStateBytes = 320;

// One direction of one connection. Zero-initialised memory is not a valid parser: call
// Init first.
struct Parser {
  Protocol protocol;
  Direction direction;
  bool failed;  // the bytes broke the protocol: no more boundaries are reported
  // Set by a caller that reads an HTTP/2 frame's end as numbers (EndedHttp2Frame), as
  // capture's log does: the http2 processor then leaves `attributes` empty at a frame's end
  // rather than writing them as text. Other processors ignore it.
  bool frame_numbers_only;
  uint64_t consumed;      // bytes consumed so far (the stream offset of the next byte)
  uint64_t messages;      // messages that ended so far
  Attributes attributes;  // of the message that ended last (valid after Consume ends one)
  alignas(8) uint8_t state[kParserStateBytes];
};

void Init(Parser* parser, Protocol protocol, Direction direction);

// Copies `from` into `to` as far as anything reads it: the counts, the state, and the
// attributes in use (not the unused room of each value), so that a copy made for every
// read (event isolation's boundary search) touches a third of the memory a whole one does.
void CopyParser(Parser* to, const Parser* from);

// Consumes a prefix of the `length` bytes at `data`. If the current message ends within
// them, consumes up to and including its last byte, sets *ended and fills
// parser->attributes; otherwise consumes them all and clears *ended. Never reads past
// `length`, never fails: bytes that break the protocol set parser->failed, after which
// every call consumes everything and reports no end (reconcile then falls back to
// direction turns). kNone and kOneShot never report an end. Call it again with what is
// left to find further ends. A `length` of 0 consumes nothing.
size_t Consume(Parser* parser, const uint8_t* data, size_t length, bool* ended);

// HTTP/2 leaves header blocks compressed (HPACK's table is decoded offline): of the bytes
// the last Consume took, `*count` bytes from `*begin` (counted from the start of what it was
// given) belong to a header block (HEADERS, PUSH_PROMISE and CONTINUATION payload, without
// padding, priority fields and promised stream id), for the caller to log. True if there
// are any; false, with 0 and 0, for other protocols and after failure. A call holds at
// most one such run: every frame carrying header-block bytes ends the call.
bool HeaderBlockBytes(const Parser* parser, size_t* begin, size_t* count);

// HTTP/2 ends a message at every frame of a stream; the frame whose end the last Consume
// reported, as numbers, for a caller that logs it in binary (the capture log's HTTP/2
// frame record) rather than as the attributes' text. False for other protocols and after
// failure; call it only after a Consume that set *ended.
struct Http2Frame {
  uint8_t type;  // RFC 9113 §6
  uint8_t flags;
  uint32_t stream;
  uint32_t length;  // payload bytes
  uint32_t extra;   // PUSH_PROMISE: the promised stream; SETTINGS: SETTINGS_HEADER_TABLE_SIZE
};
bool EndedHttp2Frame(const Parser* parser, Http2Frame* frame);
// The attributes Consume gives such a frame's end ("http2.stream", "http2.frame" as its
// type and END_STREAM/END_HEADERS words, "http2.length", and "http2.promised" or
// "http2.header_table_size"): one definition for the processor and a log's reader.
void SetHttp2FrameAttributes(const Http2Frame& frame, Attributes* attributes);

// One datagram is one message: fills parser->attributes from it (DNS: id and name).
void ConsumeDatagram(Parser* parser, const uint8_t* data, size_t length);

// Guesses a stream's protocol from the first bytes of its first request, where they are
// unambiguous (an HTTP method and a space, "*<digit>" for RESP, a PostgreSQL startup or
// SSL request, a testbed frame header, a memcached binary request header); kNone otherwise.
Protocol Detect(const uint8_t* data, size_t length);
// Guesses a stream's protocol from the first bytes of its first response, for servers
// that speak first where a protocol allows it: an HTTP/2 server may send its SETTINGS
// frame before the client's preface arrives (RFC 9113 §3.4; gRPC's servers do). kHttp2 for
// a SETTINGS frame header on stream 0 without flags, with a whole number of settings;
// kNone otherwise (fewer than 9 bytes included).
Protocol DetectResponse(const uint8_t* data, size_t length);

}  // namespace weft::capture::protocols
