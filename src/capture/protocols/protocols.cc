// Protocol processors (BorderPatrol §3.3 and §5.2, EuroSys'08): names, dispatch on a
// parser's protocol, and detection from a stream's first bytes. The processors are in
// http.cc, testbed.cc, postgres.cc, redis.cc, dns.cc, line.cc, mysql.cc, memcached.cc and
// http2.cc;
// docs/protocols.md says what each one treats as a message.
//
// BorderPatrol selects a processor by port, Unix path or program name (§5.2) and names
// detection from the data as future work; Detect does it only where the first bytes can
// belong to one protocol alone.
#include "capture/protocols/descriptor.h"
#include "capture/protocols/processors.h"
#include "capture/protocols/protocol.h"

namespace weft::capture::protocols {

namespace {

static_assert(
    [] {
      for (int i = 0; i < kProtocolCount; ++i) {
        if (kProtocolTable[i].protocol != Protocol(i)) return false;
      }
      return true;
    }(),
    "kProtocolTable must be indexed by Protocol");

constexpr ProtocolDescriptor kUnknown = {kNone, "unknown", false, nullptr, 0, false};

uint32_t BigEndian32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

// HTTP/1.x request methods that Detect accepts (RFC 9110 §9 and PATCH, RFC 5789). "PRI" is
// left out: it starts the HTTP/2 preface, which the HTTP/1.x processor cannot follow.
constexpr const char* kHttpMethods[] = {"GET ",     "POST ",  "PUT ",     "HEAD ", "DELETE ",
                                        "OPTIONS ", "PATCH ", "CONNECT ", "TRACE "};

// kHttp if the bytes start with a method and a space.
bool LooksLikeHttp(const uint8_t* data, size_t length) {
  for (const char* method : kHttpMethods) {
    size_t n = strlen(method);
    if (length >= n && memcmp(data, method, n) == 0) return true;
  }
  return false;
}

// A PostgreSQL untyped first message (protocol-message-formats: StartupMessage v3.0,
// SSLRequest, GSSENCRequest, CancelRequest): length and code exactly as sent.
bool LooksLikePostgres(const uint8_t* data, size_t length) {
  if (length < 8) return false;
  uint32_t size = BigEndian32(data);
  uint32_t code = BigEndian32(data + 4);
  switch (code) {
    case 196608:  // StartupMessage, protocol 3.0: parameters, so more than the header
      return size > 8 && size <= 10000;
    case 80877103:  // SSLRequest
    case 80877104:  // GSSENCRequest
      return size == 8;
    case 80877102:  // CancelRequest: process id and secret key
      return size == 16;
    default:
      return false;
  }
}

// A testbed frame header (testbed/wire.h): a payload length from the payload header's 27
// bytes up to kMaxPayload, then a frame type 1..3.
bool LooksLikeTestbed(const uint8_t* data, size_t length) {
  if (length < 5) return false;
  uint32_t size = BigEndian32(data);
  return size >= 27 && size <= (1u << 20) && data[4] >= 1 && data[4] <= 3;
}

// A memcached binary request header (protocol_binary.h): the request magic, an opcode the
// protocol defines, the raw data type, and a key and extras that fit in the body.
bool LooksLikeMemcachedBinary(const uint8_t* data, size_t length) {
  if (length < 12 || data[0] != 0x80 || data[1] > 0x24 || data[5] != 0) return false;
  uint32_t key = (uint32_t(data[2]) << 8) | data[3];
  return key + data[4] <= BigEndian32(data + 8);
}

}  // namespace

void CopyParser(Parser* to, const Parser* from) {
  to->protocol = from->protocol;
  to->direction = from->direction;
  to->failed = from->failed;
  to->frame_numbers_only = from->frame_numbers_only;
  to->consumed = from->consumed;
  to->messages = from->messages;
  uint8_t count = from->attributes.count < kMaxAttributes ? from->attributes.count : kMaxAttributes;
  to->attributes.count = count;
  for (int i = 0; i < count; ++i) {
    const Attribute& item = from->attributes.items[i];
    Attribute& copy = to->attributes.items[i];
    copy.key = item.key;
    copy.key_length = item.key_length;
    copy.length = item.length < kMaxValue ? item.length : uint8_t(kMaxValue);
    memcpy(copy.value, item.value, copy.length);
  }
  memcpy(to->state, from->state, sizeof from->state);
}

const ProtocolDescriptor& Describe(Protocol protocol) {
  return protocol < kProtocolCount ? kProtocolTable[protocol] : kUnknown;
}

const char* ProtocolName(Protocol protocol) { return Describe(protocol).name; }

bool ParseProtocol(const char* name, size_t length, Protocol* protocol) {
  for (int i = 0; i < kProtocolCount; ++i) {
    const char* known = kProtocolTable[i].name;
    if (strlen(known) == length && memcmp(known, name, length) == 0) {
      *protocol = Protocol(i);
      return true;
    }
  }
  return false;
}

void Init(Parser* parser, Protocol protocol, Direction direction) {
  memset(static_cast<void*>(parser), 0, sizeof(*parser));
  parser->protocol = protocol < kProtocolCount ? protocol : kNone;
  parser->direction = direction;
  switch (parser->protocol) {
    case kHttp:
      internal::InitHttp(parser);
      break;
    case kTestbed:
      internal::InitTestbed(parser);
      break;
    case kPostgres:
      internal::InitPostgres(parser);
      break;
    case kRedis:
      internal::InitRedis(parser);
      break;
    case kDns:
      internal::InitDns(parser);
      break;
    case kLine:
      internal::InitLine(parser);
      break;
    case kMysql:
      internal::InitMysql(parser);
      break;
    case kMemcached:
      internal::InitMemcached(parser);
      break;
    case kHttp2:
      internal::InitHttp2(parser);
      break;
    case kNone:
    case kOneShot:
    case kProtocolCount:
      break;
  }
}

size_t Consume(Parser* parser, const uint8_t* data, size_t length, bool* ended) {
  *ended = false;
  if (length == 0) return 0;
  size_t n = length;
  if (!parser->failed) {
    switch (parser->protocol) {
      case kHttp:
        n = internal::ConsumeHttp(parser, data, length, ended);
        break;
      case kTestbed:
        n = internal::ConsumeTestbed(parser, data, length, ended);
        break;
      case kPostgres:
        n = internal::ConsumePostgres(parser, data, length, ended);
        break;
      case kRedis:
        n = internal::ConsumeRedis(parser, data, length, ended);
        break;
      case kDns:
        n = internal::ConsumeDns(parser, data, length, ended);
        break;
      case kLine:
        n = internal::ConsumeLine(parser, data, length, ended);
        break;
      case kMysql:
        n = internal::ConsumeMysql(parser, data, length, ended);
        break;
      case kMemcached:
        n = internal::ConsumeMemcached(parser, data, length, ended);
        break;
      case kHttp2:
        n = internal::ConsumeHttp2(parser, data, length, ended);
        break;
      case kNone:  // the direction turn or the close ends the message, not the bytes
      case kOneShot:
      case kProtocolCount:
        break;
    }
  }
  parser->consumed += n;
  if (*ended) ++parser->messages;
  return n;
}

void ConsumeDatagram(Parser* parser, const uint8_t* data, size_t length) {
  internal::ClearAttributes(parser);
  if (parser->protocol == kDns) {
    internal::SetDnsAttributes(parser, data, length);
  } else if (parser->protocol != kNone && parser->protocol != kOneShot) {
    // A stream protocol carried in datagrams (the testbed's UDP tiers send one frame per
    // datagram): the datagram is read as a stream of its own, and its attributes are
    // those of a message that ends in it.
    Parser one;
    Init(&one, parser->protocol, parser->direction);
    size_t offset = 0;
    if (parser->protocol == kMemcached) {
      // memcached's UDP frame header: request id, sequence number, datagram count,
      // reserved. Only a reply's first datagram (sequence 0) starts a message.
      offset = length < 8 || data[2] != 0 || data[3] != 0 ? length : 8;
    }
    bool ended = false;
    while (offset < length && !ended)
      offset += Consume(&one, data + offset, length - offset, &ended);
    if (ended) parser->attributes = one.attributes;
  }
  parser->consumed += length;
  ++parser->messages;
}

Protocol Detect(const uint8_t* data, size_t length) {
  if (length >= 2 && data[0] == '*' && internal::IsDigit(data[1])) return kRedis;
  if (LooksLikeHttp(data, length)) return kHttp;
  if (LooksLikeMemcachedBinary(data, length)) return kMemcached;
  if (length >= 4 && memcmp(data, "PRI ", 4) == 0) return kHttp2;  // the HTTP/2 preface
  bool postgres = LooksLikePostgres(data, length);
  bool testbed = LooksLikeTestbed(data, length);
  if (postgres != testbed) return postgres ? kPostgres : kTestbed;
  return kNone;
}

Protocol DetectResponse(const uint8_t* data, size_t length) {
  if (length < 9) return kNone;
  uint32_t settings = (uint32_t(data[0]) << 16) | (uint32_t(data[1]) << 8) | data[2];
  bool frame =
      data[3] == 4 && data[4] == 0 && data[5] == 0 && data[6] == 0 && data[7] == 0 && data[8] == 0;
  // Six bytes per setting; a server names a handful (RFC 9113 §6.5.2 defines six).
  return frame && settings % 6 == 0 && settings <= 6 * 32 ? kHttp2 : kNone;
}

}  // namespace weft::capture::protocols
