// HTTP/1.0 and 1.1 processor (BorderPatrol §3.3, Figure 3; message syntax RFC 9112, "HTTP/1.1",
// §2–§7). A request is a request line, header fields up to the empty line, and a body
// framed by Transfer-Encoding: chunked or Content-Length, none otherwise (§6.3). A response
// is a status line, header fields and a body framed the same way, none for 1xx, 204 and
// 304, and to the close of the connection when neither framing is given (such a response
// never ends here). Pipelined messages need nothing special: Consume stops at each end.
//
// Departures, all on the lenient side except where RFC 9112 says to reject: a CR anywhere
// in the head is ignored, so bare LF ends lines (§2.2 allows it); empty lines before a
// start line are skipped (§2.2); obsolete line folding is skipped as a continuation.
// Rejected (parser->failed): a malformed start line, whitespace or a non-token byte in a
// field name, a bad or conflicting Content-Length, a request Transfer-Encoding whose last
// coding is not chunked (§6.3 item 4), a bad chunk size, and a head over kMaxHeadBytes.
//
// HTTP/2 by upgrade (RFC 7540 §3.2, kept as a MAY by RFC 9113 §3.1): a request with
// `Upgrade: h2c`, answered `101 Switching Protocols` with `Upgrade: h2c`, turns the
// connection into HTTP/2, the upgrade request being stream 1's. The response parser
// becomes the http2 processor after such a 101 (the server's SETTINGS come first); the
// request parser after an upgrade request becomes it when the next request starts with
// the connection preface ("PRI " then the rest of it), and stays HTTP/1.1 otherwise (the
// server declined). The 101's own end is still an HTTP/1.1 end.
//
// Limitation: a response to HEAD has a Content-Length but no body, and only the request
// says so; the response direction alone cannot see it and waits for a body that does not
// come. Likewise a 2xx response to CONNECT and another 101 response turn the connection
// into a tunnel: after such a 101 the response parser reports no more ends; a tunnel after
// CONNECT is not recognised (its bytes are likely to fail the parser, which then reports no
// ends).
#include "capture/protocols/processors.h"

namespace weft::capture::protocols::internal {

namespace {

// Real servers refuse heads far smaller (8–64 KiB); past this the stream is not HTTP.
constexpr uint32_t kMaxHeadBytes = 1u << 20;
constexpr int kMaxMethod = 16;
constexpr uint64_t kMaxLength = uint64_t(1) << 62;

enum Phase : uint8_t {
  kStartLine,
  kHeaderLineStart,
  kHeaderName,
  kHeaderValue,
  kSkipLine,  // an obs-fold continuation line, not looked at
  kBody,      // Content-Length bytes still to come
  kChunkSize,
  kChunkExtension,
  kChunkData,
  kChunkDataEnd,  // the CRLF after a chunk's data
  kTrailerLineStart,
  kTrailerLine,
  kUntilClose,  // the rest of the stream belongs to this message (or to a tunnel)
};

// Which of the header fields looked at the name being read can still be: the two that
// frame a body, and the two request ids logged as witnesses (BorderPatrol §3.1: a proxy
// passes them on unchanged, so they name the same request before and after it).
enum HeaderMatch : uint8_t {
  kContentLength = 1,
  kTransferEncoding = 2,
  kRequestId = 4,
  kTraceparent = 8,
  kUpgrade = 16,
};
constexpr int kMatchedHeaders = 5;
// Lower case, in the order of the HeaderMatch bits.
constexpr const char* kHeaderNames[kMatchedHeaders] = {"content-length", "transfer-encoding",
                                                       "x-request-id", "traceparent", "upgrade"};
constexpr uint8_t kHeaderNameLengths[kMatchedHeaders] = {14, 17, 12, 11, 7};
// The names' lengths all differ: a name of length n can only be kNameOfLength[n] (+1 of
// its HeaderMatch bit's index; 0: none).
constexpr int kLongestName = 17;
struct NameOfLength {
  uint8_t plus_one[kLongestName + 1];
};
constexpr NameOfLength MakeNameOfLength() {
  NameOfLength t{};
  for (int h = 0; h < kMatchedHeaders; ++h) t.plus_one[kHeaderNameLengths[h]] = uint8_t(h + 1);
  return t;
}
constexpr NameOfLength kNameOfLength = MakeNameOfLength();
constexpr const char kChunkedName[] = "chunked";
constexpr const char kH2cName[] = "h2c";
// X-Request-Id values are UUIDs or 32 hex digits in practice, a traceparent 55 bytes
// (W3C Trace Context §3.2); longer values are cut.
constexpr int kMaxIdValue = 64;

struct HttpState {
  Phase phase;
  uint8_t part;         // start line: 0, 1, 2 for the three space-separated parts
  uint8_t version_pos;  // bytes of "HTTP/1.x" matched
  uint8_t method_length;
  uint8_t url_length;
  uint8_t status_digits;
  uint16_t status;
  uint8_t name_length;  // of the field name being read, saturating at 255
  uint8_t name_match;   // HeaderMatch bits still possible; after ':' the field's kind
  uint8_t value_state;  // Content-Length: 0 before digits, 1 in them, 2 after them
  uint8_t token_pos;    // Transfer-Encoding: bytes of "chunked" matched in the last coding
  bool token_match;     // the last coding can still be "chunked"
  bool token_done;      // whitespace ended the last coding's name
  bool content_length_seen;
  bool transfer_encoding_seen;
  bool chunked;       // the last transfer coding seen is chunked
  bool chunk_digits;  // a chunk size has at least one digit
  bool chunk_cr;      // the CR after a chunk's data was seen
  uint32_t head_bytes;
  uint64_t value;  // the Content-Length being read, or the chunk size
  uint64_t content_length;
  uint64_t remaining;         // body or chunk bytes still to come
  uint8_t request_id_length;  // the X-Request-Id value kept, without surrounding whitespace
  uint8_t traceparent_length;
  uint8_t id_pending;   // whitespace seen inside the id value, kept if more follows
  bool upgrade_h2c;     // this message's Upgrade field lists h2c
  bool expect_preface;  // request: the last request offered h2c (kept across messages)
  bool to_http2;        // response: a 101 to h2c ended; the next byte is HTTP/2's
  // Bytes, valid up to their lengths above; last, so that a message's fresh state
  // (NextMessage) need not clear them.
  char method[kMaxMethod];
  char url[kMaxValue];
  char request_id[kMaxIdValue];
  char traceparent[kMaxIdValue];
};

// The state for the next message: every field before the byte arrays zeroed, as InitState
// would (the arrays are read only up to their lengths, now 0).
HttpState* NextMessage(HttpState* s) {
  memset(static_cast<void*>(s), 0, offsetof(HttpState, method));
  return s;
}

// The Upgrade value's token being read ended: was it h2c?
void UpgradeTokenEnd(HttpState* s) {
  if (s->token_match && s->token_pos == 3) s->upgrade_h2c = true;
  s->token_pos = 0;
  s->token_match = true;
  s->token_done = false;
}

// RFC 9110 §5.6.2 tchar, as a table: every byte of a field name is looked up.
struct TokenTable {
  bool token[256];
};
constexpr TokenTable MakeTokenTable() {
  TokenTable t{};
  for (int c = 0; c < 256; ++c) {
    t.token[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  }
  for (const char* p = "!#$%&'*+-.^_`|~"; *p != '\0'; ++p) t.token[uint8_t(*p)] = true;
  return t;
}
constexpr TokenTable kTokenTable = MakeTokenTable();
bool IsTokenChar(uint8_t c) { return kTokenTable.token[c]; }

// One byte of a field name (a token byte): drops the looked-at fields it cannot be. Only
// the fields still possible are compared, so most names are given up after a byte or two.
void NameByte(HttpState* s, uint8_t c) {
  uint8_t at = s->name_length;
  if (s->name_length < 255) ++s->name_length;
  if (s->name_match == 0) return;
  uint8_t lower = ToLower(c);
  for (uint8_t still = s->name_match; still != 0; still &= uint8_t(still - 1)) {
    int h = __builtin_ctz(still);
    if (at >= kHeaderNameLengths[h] || lower != uint8_t(kHeaderNames[h][at])) {
      s->name_match &= uint8_t(~(1u << h));
    }
  }
}

// The last `n` bytes of a field name (token bytes; the ':' follows them): what NameByte on
// each would do, comparing each looked-at field only if it has the name's whole length.
void MatchNameEnd(HttpState* s, const uint8_t* rest, size_t n) {
  size_t total = s->name_length + n;
  for (uint8_t still = s->name_match; still != 0; still &= uint8_t(still - 1)) {
    int h = __builtin_ctz(still);
    bool match = total == kHeaderNameLengths[h];
    for (size_t k = 0; match && k < n; ++k) {
      match = ToLower(rest[k]) == uint8_t(kHeaderNames[h][s->name_length + k]);
    }
    if (!match) s->name_match &= uint8_t(~(1u << h));
  }
  s->name_length = uint8_t(Min(255, total));
}

int HexValue(uint8_t c) {
  if (IsDigit(c)) return c - '0';
  c = ToLower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

bool IsResponse(const Parser* parser) { return parser->direction == Direction::kResponse; }

// The fields looked at in this direction: request ids only in requests (a response's
// would name nothing new).
uint8_t LookedAt(const Parser* parser) {
  return IsResponse(parser)
             ? kContentLength | kTransferEncoding | kUpgrade
             : kContentLength | kTransferEncoding | kRequestId | kTraceparent | kUpgrade;
}

// One byte of the start line; false if the line is malformed. A request line is
// method SP target SP HTTP/1.x, a status line HTTP/1.x SP 3DIGIT [SP reason].
bool StartLineByte(const Parser* parser, HttpState* s, uint8_t c) {
  // "HTTP/1." then a digit: the version, first in a status line and last in a request line.
  auto version_byte = [s](uint8_t b) {
    static constexpr char kPrefix[] = "HTTP/1.";
    if (s->version_pos < 7) {
      if (b != uint8_t(kPrefix[s->version_pos])) return false;
    } else if (s->version_pos > 7 || !IsDigit(b)) {
      return false;
    }
    ++s->version_pos;
    return true;
  };
  if (!IsResponse(parser)) {
    switch (s->part) {
      case 0:
        if (c == ' ') {
          if (s->method_length == 0) return false;
          s->part = 1;
          return true;
        }
        if (!IsTokenChar(c)) return false;
        if (s->method_length < kMaxMethod) s->method[s->method_length] = char(c);
        // Counted past kMaxMethod only to know the method is not empty; cut when logged.
        if (s->method_length < 255) ++s->method_length;
        return true;
      case 1:
        if (c == ' ') {
          if (s->url_length == 0) return false;
          s->part = 2;
          return true;
        }
        if (c < 0x21 || c == 0x7f) return false;
        if (s->url_length < kMaxValue) s->url[s->url_length++] = char(c);
        return true;
      default:
        return version_byte(c);
    }
  }
  switch (s->part) {
    case 0:
      if (c == ' ' && s->version_pos == 8) {
        s->part = 1;
        return true;
      }
      return version_byte(c);
    case 1:
      if (c == ' ' && s->status_digits == 3) {
        s->part = 2;
        return true;
      }
      if (!IsDigit(c) || s->status_digits == 3) return false;
      s->status = uint16_t(s->status * 10 + (c - '0'));
      ++s->status_digits;
      return true;
    default:
      return true;  // the reason phrase
  }
}

// The start line's LF: false unless it was complete.
bool StartLineComplete(const Parser* parser, const HttpState* s) {
  if (IsResponse(parser)) return s->version_pos == 8 && s->status_digits == 3;
  return s->part == 2 && s->version_pos == 8;
}

// One byte of an X-Request-Id or traceparent value: leading and trailing whitespace is
// left out (RFC 9110 §5.5), inner whitespace kept.
void IdValueByte(HttpState* s, uint8_t c, bool space) {
  bool traceparent = s->name_match == kTraceparent;
  uint8_t& length = traceparent ? s->traceparent_length : s->request_id_length;
  char* value = traceparent ? s->traceparent : s->request_id;
  if (space) {
    if (length > 0 && s->id_pending < 255) ++s->id_pending;
    return;
  }
  for (; s->id_pending > 0; --s->id_pending) {
    if (length < kMaxIdValue) value[length++] = ' ';
  }
  if (length < kMaxIdValue) value[length++] = char(c);
}

// One byte of a header field value (not CR or LF); false if it breaks the field.
bool ValueByte(HttpState* s, uint8_t c) {
  bool space = c == ' ' || c == '\t';
  if (s->name_match == kRequestId || s->name_match == kTraceparent) {
    IdValueByte(s, c, space);
    return true;
  }
  if (s->name_match == kContentLength) {
    if (space) {
      if (s->value_state == 1) s->value_state = 2;
      return true;
    }
    if (!IsDigit(c) || s->value_state == 2) return false;
    s->value_state = 1;
    s->value = s->value * 10 + (c - '0');
    return s->value <= kMaxLength;
  }
  if (s->name_match == kUpgrade) {  // a list of protocols: h2c anywhere in it
    if (c == ',') {
      UpgradeTokenEnd(s);
    } else if (space) {
      if (s->token_pos > 0) s->token_done = true;
    } else if (s->token_done || s->token_pos >= 3 ||
               ToLower(c) != uint8_t(kH2cName[s->token_pos])) {
      s->token_match = false;
      s->token_pos = 3;
    } else {
      ++s->token_pos;
    }
    return true;
  }
  if (s->name_match == kTransferEncoding) {
    if (c == ',') {
      s->token_pos = 0;
      s->token_match = true;
      s->token_done = false;
    } else if (space) {
      if (s->token_pos > 0) s->token_done = true;
    } else if (s->token_done || s->token_pos >= 7 ||
               ToLower(c) != uint8_t(kChunkedName[s->token_pos])) {
      s->token_match = false;
      s->token_pos = 7;
    } else {
      ++s->token_pos;
    }
  }
  return true;
}

// The ':' after a field name: the value of the field s->name_match names begins.
void StartValue(HttpState* s) {
  // A field that comes again replaces the value kept from before.
  if (s->name_match == kRequestId) s->request_id_length = 0;
  if (s->name_match == kTraceparent) s->traceparent_length = 0;
  s->id_pending = 0;
  s->value_state = 0;
  s->value = 0;
  s->token_pos = 0;
  s->token_match = true;
  s->token_done = false;
}

// The LF that ends a header field line; false if the field is malformed.
bool ValueComplete(HttpState* s) {
  if (s->name_match == kContentLength) {
    if (s->value_state == 0) return false;
    if (s->content_length_seen && s->content_length != s->value) return false;
    s->content_length_seen = true;
    s->content_length = s->value;
  } else if (s->name_match == kUpgrade) {
    UpgradeTokenEnd(s);
  } else if (s->name_match == kTransferEncoding) {
    s->transfer_encoding_seen = true;
    s->chunked = s->token_match && s->token_pos == 7;
  }
  return true;
}

// The empty line after the header fields: where the body begins and how it is framed.
enum class Body { kNone, kLength, kChunked, kUntilClose, kInvalid };
Body Framing(const Parser* parser, const HttpState* s) {
  if (IsResponse(parser)) {
    if ((s->status >= 100 && s->status < 200) || s->status == 204 || s->status == 304) {
      return Body::kNone;
    }
    if (s->transfer_encoding_seen) return s->chunked ? Body::kChunked : Body::kUntilClose;
    if (s->content_length_seen) return s->content_length ? Body::kLength : Body::kNone;
    return Body::kUntilClose;
  }
  if (s->transfer_encoding_seen) return s->chunked ? Body::kChunked : Body::kInvalid;
  if (s->content_length_seen && s->content_length) return Body::kLength;
  return Body::kNone;
}

// The message is complete: its attributes, and a fresh state for the next one.
size_t EndMessage(Parser* parser, HttpState* s, size_t consumed, bool* ended) {
  ClearAttributes(parser);
  if (IsResponse(parser)) {
    AddDecimalAttribute(parser, "http.status", s->status);
  } else {
    AddAttribute(parser, "http.method", s->method,
                 s->method_length < kMaxMethod ? s->method_length : kMaxMethod);
    AddAttribute(parser, "http.url", s->url, s->url_length);
    if (s->request_id_length > 0)
      AddAttribute(parser, "http.request_id", s->request_id, s->request_id_length);
    if (s->traceparent_length > 0)
      AddAttribute(parser, "http.traceparent", s->traceparent, s->traceparent_length);
  }
  // 101 Switching Protocols: what follows is another protocol: HTTP/2 for h2c, else a
  // tunnel to this parser.
  bool switched = IsResponse(parser) && s->status == 101;
  bool h2c = s->upgrade_h2c;
  s = NextMessage(s);
  if (switched) {
    s->phase = kUntilClose;
    s->to_http2 = h2c;
  } else if (!IsResponse(parser)) {
    s->expect_preface = h2c;
  }
  *ended = true;
  return consumed;
}

// Skips to the next LF; true if one was found (i is then just past it).
bool SkipLine(const uint8_t* data, size_t length, size_t* i) {
  const void* lf = memchr(data + *i, '\n', length - *i);
  if (lf == nullptr) {
    *i = length;
    return false;
  }
  *i = size_t(static_cast<const uint8_t*>(lf) - data) + 1;
  return true;
}

// Counts `n` more bytes of the head; false once it is over kMaxHeadBytes.
bool CountHead(HttpState* s, size_t n) {
  if (n > kMaxHeadBytes - s->head_bytes) return false;
  s->head_bytes += uint32_t(n);
  return true;
}

// Skips the rest of a head line that nothing looks at, counting its bytes; false once the
// head is over its limit. At the line's end the next header line begins.
bool SkipHeadLine(HttpState* s, const uint8_t* data, size_t length, size_t* i) {
  const size_t start = *i;
  const bool found = SkipLine(data, length, i);
  if (!CountHead(s, *i - start)) return false;
  if (found) s->phase = kHeaderLineStart;
  return true;
}

// --- whole lines ---------------------------------------------------------------------------
//
// A head line that is all in one call's bytes is taken in one step, as the byte-at-a-time
// machine below would take it, for the lines every message has: the start line and field
// lines. Where a start line has a CR other than the one before its LF (ignored anywhere,
// so "GE\rT" is GET) or may be HTTP/2's preface, and where a line starts with whitespace
// (obs-fold) or is empty, the byte machine takes it. (In a field line a CR fails the
// name, is skipped in a value looked at, and does not matter in one that is not.) The
// protocol fuzzer checks that both ways give the same ends, attributes and failures (a
// stream fed whole and byte by byte).

// The line starting at data[i] when its LF is here: its end, without a CR before the LF
// (*end), and the LF's index (*lf).
bool WholeLine(const uint8_t* data, size_t length, size_t i, size_t* end, size_t* lf) {
  const void* found = memchr(data + i, '\n', length - i);
  if (found == nullptr) return false;
  *lf = size_t(static_cast<const uint8_t*>(found) - data);
  *end = *lf > i && data[*lf - 1] == '\r' ? *lf - 1 : *lf;
  return true;
}

// A start line data[i, end) (LF at lf), with no CR inside, of a message no byte of which
// was read yet; false if it is malformed.
bool WholeStartLine(const Parser* parser, HttpState* s, const uint8_t* data, size_t i, size_t end,
                    size_t lf) {
  auto version = [](const uint8_t* v) { return memcmp(v, "HTTP/1.", 7) == 0 && IsDigit(v[7]); };
  if (!CountHead(s, lf + 1 - i)) return false;
  if (IsResponse(parser)) {  // HTTP/1.x SP 3DIGIT [SP reason]
    if (end - i < 12 || !version(data + i) || data[i + 8] != ' ') return false;
    const uint8_t* digits = data + i + 9;
    if (!IsDigit(digits[0]) || !IsDigit(digits[1]) || !IsDigit(digits[2])) return false;
    if (end - i > 12 && digits[3] != ' ') return false;
    s->status = uint16_t((digits[0] - '0') * 100 + (digits[1] - '0') * 10 + (digits[2] - '0'));
    s->status_digits = 3;
    s->version_pos = 8;
    s->part = end - i > 12 ? 2 : 1;
    return true;
  }
  // method SP target SP HTTP/1.x
  size_t method_end = i;
  while (method_end < end && IsTokenChar(data[method_end])) ++method_end;
  if (method_end == i || method_end == end || data[method_end] != ' ') return false;
  size_t target = method_end + 1, target_end = target;
  while (target_end < end && data[target_end] >= 0x21 && data[target_end] != 0x7f) ++target_end;
  if (target_end == target || end - target_end != 9 || data[target_end] != ' ' ||
      !version(data + target_end + 1)) {
    return false;
  }
  size_t method_length = method_end - i, url_length = target_end - target;
  memcpy(s->method, data + i, Min(kMaxMethod, method_length));
  s->method_length = uint8_t(Min(255, method_length));
  memcpy(s->url, data + target, Min(kMaxValue, url_length));
  s->url_length = uint8_t(Min(kMaxValue, url_length));
  s->version_pos = 8;
  s->part = 2;
  return true;
}

// A field line data[i, end) (LF at lf) that does not start with whitespace; false if it is
// malformed.
bool WholeFieldLine(const Parser* parser, HttpState* s, const uint8_t* data, size_t i, size_t end,
                    size_t lf) {
  size_t colon = i;
  while (colon < end && IsTokenChar(data[colon])) ++colon;
  if (colon == i || colon == end || data[colon] != ':') return false;
  if (!CountHead(s, lf + 1 - i)) return false;
  const size_t n = colon - i;
  const int h = n <= size_t(kLongestName) ? kNameOfLength.plus_one[n] - 1 : -1;
  if (h < 0 || (LookedAt(parser) & (1u << h)) == 0) return true;
  for (size_t k = 0; k < n; ++k) {
    if (ToLower(data[i + k]) != uint8_t(kHeaderNames[h][k])) return true;
  }
  s->name_match = uint8_t(1u << h);
  StartValue(s);
  for (size_t k = colon + 1; k < end; ++k) {
    if (data[k] != '\r' && !ValueByte(s, data[k])) return false;
  }
  return ValueComplete(s);
}

}  // namespace

void InitHttp(Parser* parser) { InitState<HttpState>(parser); }

size_t ConsumeHttp(Parser* parser, const uint8_t* data, size_t length, bool* ended) {
  HttpState* s = StateOf<HttpState>(parser);
  if (s->to_http2) return UpgradeToHttp2(parser, 0, data, length, 0, ended);  // after the 101
  size_t i = 0;
  while (i < length) {
    // Bulk phases first: they take many bytes at a time (bodies, lines no one looks at,
    // the rest of a field name), where the head's bytes would cost a loop turn each.
    switch (s->phase) {
      case kUntilClose:
        return length;
      case kBody: {
        size_t take = Min(length - i, s->remaining);
        s->remaining -= take;
        i += take;
        if (s->remaining == 0) return EndMessage(parser, s, i, ended);
        continue;
      }
      case kChunkData: {
        size_t take = Min(length - i, s->remaining);
        s->remaining -= take;
        i += take;
        if (s->remaining == 0) s->phase = kChunkDataEnd;
        continue;
      }
      case kHeaderName: {
        // The rest of a name up to its ':' (which goes byte by byte, below).
        size_t start = i, end = i;
        while (end < length && data[end] != ':' && IsTokenChar(data[end])) ++end;
        if (end < length && data[end] != ':') return Fail(parser, length, ended);
        if (end < length) {
          // The whole name is here: only a looked-at field of its length can match.
          MatchNameEnd(s, data + i, end - i);
        } else {
          for (; i < end && s->name_match != 0; ++i) NameByte(s, data[i]);
          s->name_length = uint8_t(Min(255, s->name_length + uint64_t(end - i)));
        }
        i = end;
        if (!CountHead(s, i - start)) return Fail(parser, length, ended);
        if (i == length) continue;
        break;
      }
      case kHeaderValue:
        // A field no one looks at: only its line's end matters (a CR is ignored anyway).
        if (s->name_match == 0) {
          if (!SkipHeadLine(s, data, length, &i)) return Fail(parser, length, ended);
          continue;
        }
        break;
      case kHeaderLineStart:
      case kStartLine: {
        const bool fresh = s->phase == kHeaderLineStart
                               ? data[i] != ' ' && data[i] != '\t'
                               : s->part == 0 && s->method_length == 0 && s->version_pos == 0 &&
                                     s->status_digits == 0 && !s->expect_preface;
        size_t end, lf;
        if (fresh && data[i] != '\r' && data[i] != '\n' && WholeLine(data, length, i, &end, &lf) &&
            (s->phase == kHeaderLineStart || memchr(data + i, '\r', end - i) == nullptr)) {
          bool good = s->phase == kStartLine ? WholeStartLine(parser, s, data, i, end, lf)
                                             : WholeFieldLine(parser, s, data, i, end, lf);
          if (!good) return Fail(parser, length, ended);
          s->phase = kHeaderLineStart;
          i = lf + 1;
          continue;
        }
        if (s->phase == kHeaderLineStart) break;
        // The version whole, when all of it is here: what its 8 bytes one by one would do.
        if (s->version_pos == 0 && s->part == (IsResponse(parser) ? 0 : 2) && length - i >= 8 &&
            memcmp(data + i, "HTTP/1.", 7) == 0 && IsDigit(data[i + 7])) {
          if (!CountHead(s, 8)) return Fail(parser, length, ended);
          s->version_pos = 8;
          i += 8;
          continue;
        }
        // A status line's reason phrase: any bytes up to the line's end. The line was
        // complete before it began (StartLineComplete).
        if (IsResponse(parser) && s->part == 2) {
          if (!SkipHeadLine(s, data, length, &i)) return Fail(parser, length, ended);
          continue;
        }
        break;
      }
      case kChunkExtension:
      case kTrailerLine:
      case kSkipLine: {
        size_t start = i;
        bool found = SkipLine(data, length, &i);
        if (s->phase == kSkipLine && !CountHead(s, i - start)) return Fail(parser, length, ended);
        if (!found) continue;
        if (s->phase == kSkipLine) {
          s->phase = kHeaderLineStart;
        } else if (s->phase == kTrailerLine) {
          s->phase = kTrailerLineStart;
        } else if (s->value == 0) {
          s->phase = kTrailerLineStart;  // the last chunk
        } else {
          s->phase = kChunkData;
          s->remaining = s->value;
        }
        continue;
      }
      default:
        break;
    }

    uint8_t c = data[i++];
    switch (s->phase) {
      case kStartLine:
      case kHeaderLineStart:
      case kHeaderName:
      case kHeaderValue:
        if (++s->head_bytes > kMaxHeadBytes) return Fail(parser, length, ended);
        break;
      default:
        break;
    }
    switch (s->phase) {
      case kStartLine:
        if (c == '\r') break;
        if (c == '\n') {
          bool empty = s->part == 0 && s->method_length == 0 && s->version_pos == 0;
          if (empty) break;  // an empty line before the start line
          if (!StartLineComplete(parser, s)) return Fail(parser, length, ended);
          s->phase = kHeaderLineStart;
          break;
        }
        if (!StartLineByte(parser, s, c)) return Fail(parser, length, ended);
        // "PRI " after a request that offered h2c: the connection preface (§3.4), and
        // HTTP/2 from here on; its frames follow the preface's other 20 bytes.
        if (s->expect_preface && s->part == 1 && s->method_length == 3 &&
            memcmp(s->method, "PRI", 3) == 0) {
          return UpgradeToHttp2(parser, 4, data, length, i, ended);
        }
        break;

      case kHeaderLineStart:
        if (c == '\r') break;
        if (c == ' ' || c == '\t') {
          s->phase = kSkipLine;
          break;
        }
        if (c == '\n') {
          switch (Framing(parser, s)) {
            case Body::kNone:
              return EndMessage(parser, s, i, ended);
            case Body::kLength:
              s->phase = kBody;
              s->remaining = s->content_length;
              break;
            case Body::kChunked:
              s->phase = kChunkSize;
              s->value = 0;
              s->chunk_digits = false;
              break;
            case Body::kUntilClose:
              s->phase = kUntilClose;
              break;
            case Body::kInvalid:
              return Fail(parser, length, ended);
          }
          break;
        }
        s->phase = kHeaderName;
        s->name_length = 0;
        s->name_match = LookedAt(parser);
        [[fallthrough]];
      case kHeaderName:
        if (c == ':') {
          if (s->name_length == 0) return Fail(parser, length, ended);
          for (uint8_t still = s->name_match; still != 0; still &= uint8_t(still - 1)) {
            int h = __builtin_ctz(still);
            if (s->name_length != kHeaderNameLengths[h]) s->name_match &= uint8_t(~(1u << h));
          }
          StartValue(s);
          s->phase = kHeaderValue;
          break;
        }
        if (!IsTokenChar(c)) return Fail(parser, length, ended);
        NameByte(s, c);
        break;

      case kHeaderValue:
        if (c == '\r') break;
        if (c == '\n') {
          if (!ValueComplete(s)) return Fail(parser, length, ended);
          s->phase = kHeaderLineStart;
          break;
        }
        if (!ValueByte(s, c)) return Fail(parser, length, ended);
        break;

      case kChunkSize: {
        if (c == '\r') break;
        int hex = HexValue(c);
        if (hex >= 0) {
          if (s->value >= (kMaxLength >> 4)) return Fail(parser, length, ended);
          s->value = s->value * 16 + uint64_t(hex);
          s->chunk_digits = true;
          break;
        }
        if (!s->chunk_digits) return Fail(parser, length, ended);
        if (c == ';' || c == ' ' || c == '\t') {
          s->phase = kChunkExtension;
          break;
        }
        if (c != '\n') return Fail(parser, length, ended);
        if (s->value == 0) {
          s->phase = kTrailerLineStart;
        } else {
          s->phase = kChunkData;
          s->remaining = s->value;
        }
        break;
      }

      case kChunkDataEnd:
        if (c == '\r' && !s->chunk_cr) {
          s->chunk_cr = true;
          break;
        }
        if (c != '\n') return Fail(parser, length, ended);
        s->phase = kChunkSize;
        s->value = 0;
        s->chunk_digits = false;
        s->chunk_cr = false;
        break;

      case kTrailerLineStart:
        if (c == '\r') break;
        if (c == '\n') return EndMessage(parser, s, i, ended);
        s->phase = kTrailerLine;
        break;

      default:
        break;
    }
  }
  return length;
}

}  // namespace weft::capture::protocols::internal
