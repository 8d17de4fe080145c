// The records of what the protocol processors found in a stream; see protocol_records.h.
#include "capture/preload/protocol_records.h"

#include <string.h>

#include "capture/event_log_format.h"
#include "capture/preload/runtime.h"

namespace weft_preload {

namespace protocols = weft::capture::protocols;

namespace {

// The direction and message fields every protocol record carries.
uint8_t DirectionOf(bool sent) { return sent ? wire::kBoundarySent : wire::kBoundaryReceived; }
uint8_t MessageOf(bool request) {
  return request ? wire::kBoundaryRequest : wire::kBoundaryResponse;
}

}  // namespace

void LogBoundary(int fd, uint8_t protocol, bool sent, bool request, int64_t entry, int64_t exit,
                 uint64_t offset, const void* attributes) {
  constexpr size_t kMaxKey = 64;
  constexpr size_t kMaxText = protocols::kMaxAttributes * (kMaxKey + 1 + protocols::kMaxValue + 1);
  alignas(8) uint8_t record[sizeof(wire::BoundaryRecord) + kMaxText + 8];
  char* text = reinterpret_cast<char*>(record + sizeof(wire::BoundaryRecord));
  size_t used = 0;
  const auto* a = static_cast<const protocols::Attributes*>(attributes);
  int count = a->count < protocols::kMaxAttributes ? a->count : protocols::kMaxAttributes;
  for (int i = 0; i < count; ++i) {
    const protocols::Attribute& item = a->items[i];
    size_t key_length = item.key_length < kMaxKey ? item.key_length : kMaxKey;
    if (item.key == nullptr || key_length == 0) continue;
    size_t value_length = item.length < protocols::kMaxValue ? item.length : protocols::kMaxValue;
    memcpy(text + used, item.key, key_length);
    used += key_length;
    text[used++] = '=';
    char* value = text + used;
    memcpy(value, item.value, value_length);
    used += value_length;
    // NUL ends an entry: not inside a value.
    char* end = text + used;
    for (char* c = value; c < end; ++c) *c = *c == '\0' ? '?' : *c;
    text[used++] = '\0';
  }
  uint32_t size = wire::RoundUp8(uint32_t(sizeof(wire::BoundaryRecord) + used));
  memset(text + used, 0, size - sizeof(wire::BoundaryRecord) - used);
  wire::BoundaryRecord r{
      wire::kBoundaryRecord, protocol,           uint16_t(size), fd, entry, exit, offset,
      DirectionOf(sent),     MessageOf(request), uint16_t(used), 0};
  memcpy(record, &r, sizeof r);
  AppendRecord(record, size, entry);
}

void LogHeaderBlockPieces(int fd, const protocols::Parser* parser, bool sent, bool request,
                          int64_t entry, uint64_t offset, const uint8_t* bytes) {
  size_t begin = 0, length = 0;
  if (!protocols::HeaderBlockBytes(parser, &begin, &length)) return;
  const uint8_t protocol = uint8_t(parser->protocol);
  offset += begin;
  bytes += begin;
  alignas(8) uint8_t record[sizeof(wire::HeaderBlockRecord) + wire::kMaxHeaderBlockPiece];
  while (length > 0) {
    size_t n = length < wire::kMaxHeaderBlockPiece ? length : wire::kMaxHeaderBlockPiece;
    uint32_t size = wire::RoundUp8(uint32_t(sizeof(wire::HeaderBlockRecord) + n));
    wire::HeaderBlockRecord r{
        wire::kHeaderBlockRecord, protocol,           uint16_t(size), fd, entry, offset,
        DirectionOf(sent),        MessageOf(request), uint16_t(n),    0};
    memcpy(record, &r, sizeof r);
    memcpy(record + sizeof r, bytes, n);
    memset(record + sizeof r + n, 0, size - sizeof r - n);
    AppendRecord(record, size, entry);
    bytes += n;
    offset += n;
    length -= n;
  }
}

void LogEnd(int fd, const protocols::Parser* parser, bool sent, bool request, int64_t entry,
            int64_t exit, uint64_t offset) {
  protocols::Http2Frame frame;
  if (!protocols::EndedHttp2Frame(parser, &frame)) {
    LogBoundary(fd, uint8_t(parser->protocol), sent, request, entry, exit, offset,
                &parser->attributes);
    return;
  }
  wire::Http2FrameRecord r{wire::kHttp2FrameRecord,
                           frame.type,
                           uint16_t(sizeof(wire::Http2FrameRecord)),
                           fd,
                           entry,
                           exit,
                           offset,
                           DirectionOf(sent),
                           MessageOf(request),
                           frame.flags,
                           0,
                           frame.stream,
                           frame.length,
                           frame.extra};
  AppendRecord(&r, sizeof r, entry);
}

}  // namespace weft_preload
