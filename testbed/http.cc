#include "testbed/http.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string_view>

#include "core/text.h"
#include "pivot/baggage.h"
#include "pivot/w3c_baggage.h"

namespace weft::testbed {
namespace {

constexpr size_t kMaxChunkLine = 1024;  // a chunk size and its extensions

std::string_view TrimWhitespace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// RFC 9110 §5.6.2: a header name is a token.
bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

int HexDigit(char c) {
  c = AsciiLower(c);
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// 1 to `max_digits` digits in `base` (10 or 16), nothing else: no sign, prefix or space.
std::optional<uint64_t> ParseNumber(std::string_view s, int base, size_t max_digits) {
  if (s.empty() || s.size() > max_digits) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d = HexDigit(c);
    if (d < 0 || d >= base) return std::nullopt;
    v = v * uint64_t(base) + uint64_t(d);
  }
  return v;
}

// "<type> <request type> <request id> <call id> <parent call>": decimal, then hex ids.
std::optional<Frame> ParseIds(std::string_view s) {
  std::string_view part[5];
  for (int i = 0; i < 5; ++i) {
    size_t space = i < 4 ? s.find(' ') : s.size();
    if (space == std::string_view::npos) return std::nullopt;
    part[i] = s.substr(0, space);
    s.remove_prefix(std::min(s.size(), space + 1));
  }
  std::optional<uint64_t> type = ParseNumber(part[0], 10, 1);
  std::optional<uint64_t> request_type = ParseNumber(part[1], 10, 5);
  std::optional<uint64_t> request = ParseNumber(part[2], 16, 16);
  std::optional<uint64_t> call = ParseNumber(part[3], 16, 16);
  std::optional<uint64_t> parent = ParseNumber(part[4], 16, 16);
  if (!type || *type < 1 || *type > 3 || !request_type || *request_type > 65535 || !request ||
      !call || *call == 0 || !parent) {
    return std::nullopt;
  }
  Frame f;
  f.type = FrameType(*type);
  f.request_type = uint16_t(*request_type);
  f.request_id = *request;
  f.call_id = *call;
  f.parent_call = *parent;
  return f;
}

bool IsRequestLine(std::string_view line) {
  // method SP request-target SP HTTP/1.1, each part without spaces.
  size_t a = line.find(' ');
  size_t b = a == std::string_view::npos ? a : line.find(' ', a + 1);
  return a != std::string_view::npos && a > 0 && b != std::string_view::npos && b > a + 1 &&
         IsToken(line.substr(0, a)) && line.substr(b + 1) == "HTTP/1.1";
}

bool IsStatusLine(std::string_view line) {
  // HTTP/1.1 SP 3DIGIT SP reason
  return line.size() >= 13 && line.substr(0, 9) == "HTTP/1.1 " && line[9] >= '1' &&
         line[9] <= '5' && line[10] >= '0' && line[10] <= '9' && line[11] >= '0' &&
         line[11] <= '9' && line[12] == ' ';
}

// Where the chunked body starting at `at` ends (just past its last CRLF): nullopt while
// incomplete, an error when malformed. `body` gets the chunk data's total size.
Result<std::optional<size_t>> ChunkedEnd(std::string_view buf, size_t at, uint64_t* body) {
  *body = 0;
  while (true) {
    size_t eol = buf.find("\r\n", at);
    // The limits hold the same whether a message arrives whole or in pieces: a partial
    // line is refused only once it is sure to be too long.
    if (eol == std::string_view::npos) {
      if (buf.size() - at > kMaxChunkLine + 1)
        return Status::Corruption("chunk size line longer than 1024 bytes");
      return std::optional<size_t>();
    }
    // chunk-size [; chunk-ext]: the extension is allowed and ignored (RFC 9112 §7.1.1).
    std::string_view line = buf.substr(at, eol - at);
    if (line.size() > kMaxChunkLine)
      return Status::Corruption("chunk size line longer than 1024 bytes");
    std::string_view digits = TrimWhitespace(line.substr(0, line.find(';')));
    uint64_t size = 0;
    if (digits.empty() || digits.size() > 8) {
      return Status::Corruption("malformed chunk size '{}'", line.substr(0, 32));
    }
    for (char c : digits) {
      int d = HexDigit(c);
      if (d < 0) return Status::Corruption("malformed chunk size '{}'", line.substr(0, 32));
      size = size * 16 + uint64_t(d);
    }
    at = eol + 2;
    if (size == 0) {
      // The trailer section: header lines up to an empty line.
      const size_t trailers = at;
      size_t end = buf.find("\r\n", at);
      while (end != std::string_view::npos && end != at) {
        std::string_view trailer = buf.substr(at, end - at);
        size_t colon = trailer.find(':');
        if (colon == std::string_view::npos || !IsToken(trailer.substr(0, colon))) {
          return Status::Corruption("malformed trailer line '{}'", trailer.substr(0, 32));
        }
        at = end + 2;
        end = buf.find("\r\n", at);
      }
      if (end == std::string_view::npos ? buf.size() - trailers >= kMaxHttpHead
                                        : end + 2 - trailers > kMaxHttpHead) {
        return Status::Corruption("HTTP trailers longer than {} bytes", kMaxHttpHead);
      }
      if (end == std::string_view::npos) return std::optional<size_t>();
      return std::optional<size_t>(end + 2);
    }
    *body += size;
    if (*body > kMaxPayload) {
      return Status::Corruption("chunked body longer than {} bytes", kMaxPayload);
    }
    if (buf.size() < at + size + 2) return std::optional<size_t>();
    if (buf.substr(at + size, 2) != "\r\n")
      return Status::Corruption("chunk data not followed by CRLF");
    at += size + 2;
  }
}

}  // namespace

std::string EncodeHttp(const Frame& f, uint32_t payload_bytes, bool chunked) {
  std::string s = f.type == FrameType::kRequest
                      ? fmt::format("POST /r{} HTTP/1.1\r\nHost: weft-testbed\r\n", f.request_type)
                  : f.type == FrameType::kReply
                      ? std::string("HTTP/1.1 200 OK\r\n")
                      : std::string("HTTP/1.1 500 Internal Server Error\r\n");
  s += fmt::format("X-Weft-Ids: {} {} {:x} {:x} {:x}\r\n", int(f.type), f.request_type,
                   f.request_id, f.call_id, f.parent_call);
  if (f.close) s += "Connection: close\r\n";
  if (!f.baggage.empty()) {
    // Pivot's member of a W3C baggage header; Serialize leaves it out (counted) past the
    // header's limits.
    pivot::Baggage bag;
    pivot::W3cBaggage header;
    if (bag.Deserialize(f.baggage).ok()) header.PutPivot(bag);
    if (std::string value = header.Serialize(); !value.empty()) {
      s += fmt::format("baggage: {}\r\n", value);
    }
  }
  if (!chunked) {
    s += fmt::format("Content-Length: {}\r\n\r\n", payload_bytes);
    s.append(payload_bytes, '.');
    return s;
  }
  s += "Transfer-Encoding: chunked\r\n\r\n";
  for (uint32_t left = payload_bytes; left > 0;) {
    uint32_t n = std::min(left, kHttpChunk);
    s += fmt::format("{:x}\r\n", n);
    s.append(n, '.');
    s += "\r\n";
    left -= n;
  }
  s += "0\r\n\r\n";
  return s;
}

void AddHttpHeader(std::string* message, std::string_view name, std::string_view value) {
  size_t line_end = message->find("\r\n");
  if (line_end == std::string::npos) return;
  message->insert(line_end + 2, fmt::format("{}: {}\r\n", name, value));
}

Result<bool> TakeHttp(std::string& buf, Frame* frame, size_t* wire_bytes) {
  size_t end = buf.find("\r\n\r\n");
  // The same limit whether the head arrives whole or in pieces.
  if (end == std::string::npos ? buf.size() > kMaxHttpHead : end + 4 > kMaxHttpHead) {
    return Status::Corruption("HTTP header longer than {} bytes", kMaxHttpHead);
  }
  if (end == std::string::npos) return false;
  std::string_view head(buf.data(), end + 2);  // every line ends in CRLF
  size_t eol = head.find("\r\n");
  std::string_view start = head.substr(0, eol);
  bool request = IsRequestLine(start);
  if (!request && !IsStatusLine(start)) {
    return Status::Corruption("not an HTTP/1.1 request or response: '{}'", start.substr(0, 40));
  }
  std::optional<std::string_view> ids, length, coding, baggage;
  bool close = false;
  for (size_t at = eol + 2; at < head.size();) {
    size_t next = head.find("\r\n", at);
    std::string_view line = head.substr(at, next - at);
    at = next + 2;
    size_t colon = line.find(':');
    // Obsolete line folding (a line starting with whitespace) is rejected (RFC 9112 §5.2).
    if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
      return Status::Corruption("malformed HTTP header line '{}'", line.substr(0, 40));
    }
    std::string_view name = line.substr(0, colon);
    std::string_view value = TrimWhitespace(line.substr(colon + 1));
    if (EqualsIgnoreCase(name, "x-weft-ids")) {
      ids = value;
    } else if (EqualsIgnoreCase(name, "baggage")) {
      if (!baggage) baggage = value;  // the first; a malformed one is only ignored
    } else if (EqualsIgnoreCase(name, "content-length")) {
      if (length && *length != value) return Status::Corruption("differing Content-Length headers");
      length = value;
    } else if (EqualsIgnoreCase(name, "transfer-encoding")) {
      if (coding) return Status::Corruption("more than one Transfer-Encoding header");
      coding = value;
    } else if (EqualsIgnoreCase(name, "connection")) {
      // A comma-separated list of options (RFC 9110 §7.6.1).
      for (size_t p = 0; p <= value.size();) {
        size_t comma = std::min(value.find(',', p), value.size());
        close |= EqualsIgnoreCase(TrimWhitespace(value.substr(p, comma - p)), "close");
        p = comma + 1;
      }
    }
  }
  if (!ids) return Status::Corruption("HTTP message without X-Weft-Ids");
  std::optional<Frame> fields = ParseIds(*ids);
  if (!fields) return Status::Corruption("malformed X-Weft-Ids '{}'", ids->substr(0, 60));
  if (length && coding) {
    // Either could frame the message: a request smuggling vector (RFC 9112 §6.3).
    return Status::Corruption("both Content-Length and Transfer-Encoding");
  }
  size_t total = 0;
  if (coding) {
    if (!EqualsIgnoreCase(*coding, "chunked")) {
      return Status::Corruption("unsupported Transfer-Encoding '{}'", coding->substr(0, 40));
    }
    uint64_t body = 0;
    WEFT_ASSIGN_OR_RETURN(std::optional<size_t> chunked_end, ChunkedEnd(buf, end + 4, &body));
    if (!chunked_end) return false;
    total = *chunked_end;
  } else if (length) {
    std::optional<uint64_t> n = ParseNumber(*length, 10, 10);
    if (!n || *n > kMaxPayload) {
      return Status::Corruption("bad Content-Length '{}'", length->substr(0, 40));
    }
    total = end + 4 + *n;
  } else if (request) {
    total = end + 4;  // a request without either has no body (RFC 9112 §6.3)
  } else {
    return Status::Corruption("HTTP response without Content-Length or chunked coding");
  }
  if (buf.size() < total) return false;
  *frame = *fields;
  frame->close = close;
  if (baggage) {
    pivot::Baggage bag;
    // Kept serialized: the server deserializes it lazily. A malformed member is counted
    // (pivot::GlobalW3cCounters) and the request goes on without baggage.
    if (pivot::W3cBaggage::Parse(*baggage).GetPivot(bag).ok()) frame->baggage = bag.Serialize();
  }
  *wire_bytes = total;
  buf.erase(0, total);
  return true;
}

}  // namespace weft::testbed
