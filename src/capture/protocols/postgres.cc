// PostgreSQL frontend/backend protocol v3 processor (BorderPatrol §3.3 and Figure 4;
// PostgreSQL 15 documentation, chapter 55 "Frontend/Backend Protocol", §55.2 message flow
// and §55.7 message formats).
//
// Requests (frontend): the first message has no type byte (Int32 length, Int32 code):
// StartupMessage (protocol 3.x), SSLRequest, GSSENCRequest or CancelRequest; each is a
// message of its own, and an SSL or GSS request may be followed by another untyped
// message. Then typed messages (Byte1 type, Int32 length counting itself). A request ends
// at the message after which the client waits for the server:
//   'Q' Query (attribute sql, the query text), 'S' Sync (ends an extended-query batch of
//   Parse/Bind/Describe/Execute/Close/Flush; attribute sql, the text of the batch's first
//   Parse), 'F' FunctionCall, 'p' password and SASL answers (never logged), 'c' CopyDone
//   and 'f' CopyFail (COPY FROM STDIN's data, 'd' messages, is one message up to them),
//   and 'X' Terminate.
// Flush ('H') does not end a request: clients that pipeline with Flush and no Sync get one
// message per Sync.
//
// Responses (backend): before anything else the server may answer an SSL or GSS request
// with one untyped byte: 'N' (refused; plain text continues) is a message; 'S' or 'G'
// (accepted) is a message. After 'S' the processor goes on with typed messages: capture
// feeds it the plaintext of the TLS library's calls (docs/capture.md "TLS"), and stops the
// stream before any ciphertext reaches it when no TLS library call was seen. After 'G'
// (GSSAPI encryption, which capture cannot read) no ends are reported.
// Then typed messages; a response ends at the message after which the server waits for
// the client: 'Z' ReadyForQuery (attribute pg.status: I idle, T in a transaction, E in a
// failed one), 'G' CopyInResponse and 'W' CopyBothResponse, and an 'R' authentication
// request that needs an answer (cleartext, MD5, GSS, SSPI, SASL and SASL continue).
// An ErrorResponse that ends a failed startup is followed by the close, not by 'Z'.
//
// After an SSLRequest the request side expects the startup message again, in plaintext.
#include "capture/protocols/processors.h"

namespace weft::capture::protocols::internal {

namespace {

constexpr uint32_t kMaxStartupLength = 10000;  // the server's MAX_STARTUP_PACKET_LENGTH
constexpr uint32_t kSslRequest = 80877103;
constexpr uint32_t kGssEncRequest = 80877104;
constexpr uint32_t kCancelRequest = 80877102;

enum Phase : uint8_t {
  kUntypedHeader,  // request: the length and code of a startup-phase message
  kFirstByte,      // response: the SSL/GSS answer byte, or the first typed message
  kTypedHeader,
  kBody,
  kEncrypted,  // after an accepted GSS request: nothing more to see
};

// What the untyped message being read is.
enum Untyped : uint8_t { kTyped = 0, kStartup, kEncryptionRequest, kCancel };

// SQL text capture within 'Q' and 'P' bodies.
enum SqlPhase : uint8_t { kSqlNone, kSqlStatementName, kSqlText };

struct PostgresState {
  Phase phase;
  Untyped untyped;
  uint8_t type;  // the typed message being read
  uint8_t have;  // header bytes collected
  uint8_t header[8];
  uint8_t first[4];    // the body's first bytes (ReadyForQuery status, authentication code)
  uint32_t remaining;  // body bytes still to come
  uint32_t body_seen;  // body bytes seen, saturating at 4
  SqlPhase sql_phase;
  bool batch_has_sql;  // the extended-query batch's Parse text is in `sql`
  uint8_t sql_length;
  char sql[kMaxValue];
};

uint32_t BigEndian32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

bool IsFrontendType(uint8_t t) {
  switch (t) {
    case 'B':
    case 'C':
    case 'c':
    case 'd':
    case 'D':
    case 'E':
    case 'f':
    case 'F':
    case 'H':
    case 'p':
    case 'P':
    case 'Q':
    case 'S':
    case 'X':
      return true;
    default:
      return false;
  }
}

bool IsBackendType(uint8_t t) {
  switch (t) {
    case 'R':
    case 'K':
    case '1':
    case '2':
    case '3':
    case 'C':
    case 'c':
    case 'd':
    case 'D':
    case 'E':
    case 'G':
    case 'H':
    case 'I':
    case 'n':
    case 'N':
    case 'A':
    case 's':
    case 'S':
    case 't':
    case 'T':
    case 'V':
    case 'v':
    case 'W':
    case 'Z':
      return true;
    default:
      return false;
  }
}

// The typed message that just ended: true if it ends a request or response, with the
// attributes set.
bool EndsMessage(Parser* parser, PostgresState* s) {
  if (parser->direction == Direction::kRequest) {
    switch (s->type) {
      case 'Q':
        ClearAttributes(parser);
        AddAttribute(parser, "sql", s->sql, s->sql_length);
        s->batch_has_sql = false;
        s->sql_length = 0;
        return true;
      case 'S':
        ClearAttributes(parser);
        if (s->batch_has_sql) AddAttribute(parser, "sql", s->sql, s->sql_length);
        s->batch_has_sql = false;
        s->sql_length = 0;
        return true;
      case 'F':
      case 'p':
      case 'c':
      case 'f':
      case 'X':
        ClearAttributes(parser);
        return true;
      default:
        return false;
    }
  }
  switch (s->type) {
    case 'Z':
      ClearAttributes(parser);
      if (s->body_seen >= 1) AddAttribute(parser, "pg.status", s->first, 1);
      return true;
    case 'G':
    case 'W':
      ClearAttributes(parser);
      return true;
    case 'R': {
      if (s->body_seen < 4) return false;
      switch (BigEndian32(s->first)) {
        case 2:
        case 3:
        case 5:
        case 7:
        case 8:
        case 9:
        case 10:
        case 11:
          ClearAttributes(parser);
          return true;
        default:  // 0 AuthenticationOk, 12 SASLFinal: the server goes on
          return false;
      }
    }
    default:
      return false;
  }
}

// Reads the 8-byte header of an untyped request message; false if it is none.
bool UntypedHeader(PostgresState* s) {
  uint32_t length = BigEndian32(s->header);
  uint32_t code = BigEndian32(s->header + 4);
  if (length < 8 || length > kMaxStartupLength) return false;
  if (code == kSslRequest || code == kGssEncRequest) {
    s->untyped = kEncryptionRequest;
    if (length != 8) return false;
  } else if (code == kCancelRequest) {
    s->untyped = kCancel;
    if (length != 16) return false;
  } else if ((code >> 16) == 3) {
    s->untyped = kStartup;
  } else {
    return false;
  }
  s->remaining = length - 8;
  return true;
}

// Reads the 5-byte header of a typed message; false if it is none.
bool TypedHeader(const Parser* parser, PostgresState* s) {
  s->type = s->header[0];
  bool known =
      parser->direction == Direction::kRequest ? IsFrontendType(s->type) : IsBackendType(s->type);
  uint32_t length = BigEndian32(s->header + 1);
  if (!known || length < 4 || length > 0x7fffffffu) return false;
  s->untyped = kTyped;
  s->remaining = length - 4;
  s->body_seen = 0;
  s->sql_phase = kSqlNone;
  if (s->type == 'Q') {
    s->sql_phase = kSqlText;
    s->sql_length = 0;
  } else if (s->type == 'P' && !s->batch_has_sql) {
    s->sql_phase = kSqlStatementName;
    s->sql_length = 0;
    s->batch_has_sql = true;
  }
  return true;
}

// One body byte the processor looks at: the first four, and the SQL text of 'Q' and 'P'.
void BodyByte(PostgresState* s, uint8_t c) {
  if (s->body_seen < 4) s->first[s->body_seen++] = c;
  if (s->sql_phase == kSqlStatementName) {
    if (c == 0) s->sql_phase = kSqlText;
  } else if (s->sql_phase == kSqlText) {
    if (c == 0 || s->sql_length == kMaxValue) {
      s->sql_phase = kSqlNone;
    } else {
      s->sql[s->sql_length++] = char(c);
    }
  }
}

}  // namespace

void InitPostgres(Parser* parser) {
  PostgresState* s = InitState<PostgresState>(parser);
  s->phase = parser->direction == Direction::kRequest ? kUntypedHeader : kFirstByte;
}

size_t ConsumePostgres(Parser* parser, const uint8_t* data, size_t length, bool* ended) {
  PostgresState* s = StateOf<PostgresState>(parser);
  size_t i = 0;
  while (i < length) {
    switch (s->phase) {
      case kEncrypted:
        return length;

      case kFirstByte: {
        uint8_t c = data[i];
        if (c == 'N' || c == 'S' || c == 'G') {
          // The answer to an SSL or GSS request; 'N' may be followed by another. After
          // 'S' the plaintext of the TLS session follows.
          if (c == 'G') s->phase = kEncrypted;
          if (c == 'S') {
            s->phase = kTypedHeader;
            s->have = 0;
          }
          ClearAttributes(parser);
          *ended = true;
          return i + 1;
        }
        s->phase = kTypedHeader;
        s->have = 0;
        continue;
      }

      case kUntypedHeader:
      case kTypedHeader: {
        uint8_t need = s->phase == kUntypedHeader ? 8 : 5;
        while (s->have < need && i < length) s->header[s->have++] = data[i++];
        if (s->have < need) return length;
        bool ok = s->phase == kUntypedHeader ? UntypedHeader(s) : TypedHeader(parser, s);
        if (!ok) return Fail(parser, length, ended);
        s->have = 0;
        s->phase = kBody;
        break;  // the body may be empty: fall to its end below
      }

      case kBody: {
        // Byte by byte while looking at the body, counted in bulk after.
        while (s->remaining > 0 && i < length && (s->body_seen < 4 || s->sql_phase != kSqlNone)) {
          BodyByte(s, data[i++]);
          --s->remaining;
        }
        size_t take = Min(length - i, s->remaining);
        s->remaining -= uint32_t(take);
        i += take;
        break;
      }
    }
    if (s->phase != kBody || s->remaining > 0) continue;

    // A whole message has been read.
    if (s->untyped != kTyped) {
      s->phase = s->untyped == kEncryptionRequest ? kUntypedHeader : kTypedHeader;
      ClearAttributes(parser);
      *ended = true;
      return i;
    }
    s->phase = kTypedHeader;
    if (EndsMessage(parser, s)) {
      *ended = true;
      return i;
    }
  }
  return length;
}

}  // namespace weft::capture::protocols::internal
