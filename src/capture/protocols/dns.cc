// DNS processor (BorderPatrol §3.1 and §3.3: DNS ids are the witnesses that link a query
// through an untraced resolver; RFC 1035 §4.1 message format, §4.1.4 compression, §4.2.2
// TCP framing).
//
// Over UDP a datagram is a message (ConsumeDatagram). Over TCP each message is preceded by
// its 2-byte big-endian length; the first kKeptBytes of each are kept to read the header
// and question from, the rest is counted. Attributes, the same in both directions:
// dns.id (the header's id, decimal) and dns.name (the first question's name, dotted,
// "." for the root, cut to kMaxValue). A name that is truncated, uses a reserved label
// type, or has a compression pointer that does not point backwards is not logged: only
// backward pointers are followed, so a pointer loop cannot form, and at most kMaxLabels
// labels are read.
#include "capture/protocols/processors.h"

namespace weft::capture::protocols::internal {

namespace {

constexpr size_t kHeaderBytes = 12;
constexpr size_t kKeptBytes = 160;
constexpr int kMaxLabels = 128;

struct DnsState {
  uint8_t length_have;  // bytes of the 2-byte length prefix collected
  uint8_t length_bytes[2];
  uint16_t length;  // of the message being read
  uint16_t seen;    // bytes of it seen
  uint8_t kept[kKeptBytes];
};

uint16_t BigEndian16(const uint8_t* p) { return uint16_t((p[0] << 8) | p[1]); }

// The first question's name, dotted, into `name` (kMaxValue bytes); its length, or -1 if
// the name cannot be read.
int ReadName(const uint8_t* data, size_t length, char* name) {
  size_t pos = kHeaderBytes;
  size_t lowest = pos;  // a pointer must go below every label read so far
  int out = 0;
  for (int labels = 0; labels < kMaxLabels; ++labels) {
    if (pos >= length) return -1;
    uint8_t n = data[pos];
    if (n == 0) {
      if (out == 0) name[out++] = '.';
      return out;
    }
    if ((n & 0xc0) == 0xc0) {
      if (pos + 1 >= length) return -1;
      size_t target = (size_t(n & 0x3f) << 8) | data[pos + 1];
      if (target >= lowest) return -1;
      pos = lowest = target;
      continue;
    }
    if ((n & 0xc0) != 0 || pos + 1 + n > length) return -1;
    if (out > 0 && out < kMaxValue) name[out++] = '.';
    for (size_t k = 0; k < n && out < kMaxValue; ++k) name[out++] = char(data[pos + 1 + k]);
    pos += 1 + n;
  }
  return -1;
}

}  // namespace

void SetDnsAttributes(Parser* parser, const uint8_t* data, size_t length) {
  ClearAttributes(parser);
  if (length < kHeaderBytes) return;
  AddDecimalAttribute(parser, "dns.id", BigEndian16(data));
  if (BigEndian16(data + 4) == 0) return;  // no question
  char name[kMaxValue];
  int n = ReadName(data, length, name);
  if (n >= 0) AddAttribute(parser, "dns.name", name, size_t(n));
}

void InitDns(Parser* parser) { InitState<DnsState>(parser); }

size_t ConsumeDns(Parser* parser, const uint8_t* data, size_t length, bool* ended) {
  DnsState* s = StateOf<DnsState>(parser);
  size_t i = 0;
  while (s->length_have < 2) {
    if (i == length) return length;
    s->length_bytes[s->length_have++] = data[i++];
    if (s->length_have == 2) {
      s->length = BigEndian16(s->length_bytes);
      s->seen = 0;
      if (s->length < kHeaderBytes) return Fail(parser, length, ended);
    }
  }
  size_t take = Min(length - i, uint64_t(s->length - s->seen));
  if (s->seen < kKeptBytes) {
    size_t keep = Min(take, uint64_t(kKeptBytes - s->seen));
    memcpy(s->kept + s->seen, data + i, keep);
  }
  s->seen = uint16_t(s->seen + take);
  i += take;
  if (s->seen < s->length) return i;
  SetDnsAttributes(parser, s->kept, Min(kKeptBytes, s->length));
  s->length_have = 0;
  *ended = true;
  return i;
}

}  // namespace weft::capture::protocols::internal
