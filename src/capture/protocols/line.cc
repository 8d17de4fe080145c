// The line-oriented and one-shot processors (BorderPatrol §3.3, Figure 4): generic
// framing for protocols the toolkit has no processor for. Line-oriented: every '\n' ends a
// message (memcached's text protocol, SMTP and POP3 commands, many ad-hoc protocols);
// attribute `line`, the message's first kMaxValue bytes without the line end. One-shot
// needs no code: it never reports an end, so the direction turn or the close of the
// connection is the boundary (protocols.cc).
#include "capture/protocols/processors.h"

namespace weft::capture::protocols::internal {

namespace {

struct LineState {
  uint8_t length;  // bytes of the line kept, at most kMaxValue
  bool cut;        // the line has more bytes than were kept
  char line[kMaxValue];
};

}  // namespace

void InitLine(Parser* parser) { InitState<LineState>(parser); }

size_t ConsumeLine(Parser* parser, const uint8_t* data, size_t length, bool* ended) {
  LineState* s = StateOf<LineState>(parser);
  const void* lf = memchr(data, '\n', length);
  size_t n = lf == nullptr ? length : size_t(static_cast<const uint8_t*>(lf) - data);
  size_t keep = Min(n, uint64_t(kMaxValue - s->length));
  memcpy(s->line + s->length, data, keep);
  s->length = uint8_t(s->length + keep);
  if (keep < n) s->cut = true;
  if (lf == nullptr) return length;
  // The CR of a CRLF is part of the line end, if it was kept.
  size_t kept = s->length;
  if (!s->cut && kept > 0 && s->line[kept - 1] == '\r') --kept;
  ClearAttributes(parser);
  AddAttribute(parser, "line", s->line, kept);
  s->length = 0;
  s->cut = false;
  *ended = true;
  return n + 1;
}

}  // namespace weft::capture::protocols::internal
