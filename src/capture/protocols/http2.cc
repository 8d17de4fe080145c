// HTTP/2 processor (RFC 9113), prior knowledge: the request direction starts with the
// 24-byte client connection preface, both directions then carry frames, the first of them a
// SETTINGS frame (§3.4). Frames of many streams interleave on one connection, so a message
// (one stream's HEADERS, CONTINUATION and DATA frames up to END_STREAM in one direction) is
// not a contiguous run of bytes, and a processor that can only cut a stream into
// consecutive messages cannot name it. This one reports an end at the last byte of every
// frame that belongs to a stream message (DATA, HEADERS, CONTINUATION, RST_STREAM) and of
// every PUSH_PROMISE, with the frame's stream, type, flags and length (and a
// PUSH_PROMISE's promised stream); reconcile assembles the messages from them
// (docs/reconcile.md). Of the control frames only a SETTINGS frame that sets
// SETTINGS_HEADER_TABLE_SIZE is reported (with the value: the largest HPACK table the peer
// may use from then on, which reconcile's decoder must allow); PING, PRIORITY,
// WINDOW_UPDATE, GOAWAY, SETTINGS acknowledgements and unknown types report nothing.
//
// Header blocks are HPACK-compressed (RFC 7541) against a dynamic table that lives as long
// as the connection; decoding them here would cost every traced program that table.
// They are left compressed: HeaderBlockBytes tells the caller which bytes of a call are
// header-block bytes, capture logs them, and reconcile decodes them offline. PUSH_PROMISE
// carries a header block that updates the same table, so its frames are reported (the
// caller logs their block bytes) though they belong to no message of their own. Since
// every frame carrying block bytes ends a Consume call, one call's block bytes are one run.
//
// Payloads are counted, never kept; the state is the 9-byte frame header in progress.
#include "capture/protocols/processors.h"

namespace weft::capture::protocols::internal {

namespace {

constexpr uint8_t kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr uint32_t kPrefaceLength = sizeof(kPreface) - 1;  // 24
constexpr uint32_t kFrameHeader = 9;

// Frame types (§6) and flags.
enum FrameType : uint8_t {
  kData = 0,
  kHeaders = 1,
  kPriority = 2,
  kRstStream = 3,
  kSettings = 4,
  kPushPromise = 5,
  kContinuation = 9,
};
constexpr uint8_t kAck = 0x1;  // SETTINGS
constexpr uint8_t kEndStream = 0x1;
constexpr uint16_t kSettingsHeaderTableSize = 0x1;
constexpr uint8_t kEndHeaders = 0x4;
constexpr uint8_t kPadded = 0x8;
constexpr uint8_t kPriorityFlag = 0x20;

enum Phase : uint8_t { kInPreface, kInHeader, kInPadLength, kInPayload };

struct Http2State {
  Phase phase;
  uint8_t have;  // bytes of the preface or of the frame header read so far
  uint8_t header[kFrameHeader];
  uint8_t type;
  uint8_t flags;
  bool seen_settings;    // the first frame was SETTINGS
  bool continuing;       // a header block is open: only CONTINUATION of its stream may follow
  uint32_t length;       // payload bytes of the current frame
  uint32_t stream;       // its stream id
  uint32_t position;     // payload bytes read so far
  uint32_t block_begin;  // the header block's bytes within the payload: [begin, end)
  uint32_t block_end;
  uint32_t open_stream;       // the stream of the open header block
  uint64_t call_block_begin;  // HeaderBlockBytes of the last Consume call
  uint64_t call_block_count;
  // SETTINGS: the setting being read (6 bytes each: a 16-bit id, a 32-bit value) and the
  // last SETTINGS_HEADER_TABLE_SIZE of the frame. PUSH_PROMISE: the promised stream id
  // (its 4 bytes before the header block) in `value`.
  uint16_t setting_id;
  bool table_size_set;
  uint32_t value;
  uint32_t table_size;
};

uint32_t Read24(const uint8_t* p) { return (uint32_t(p[0]) << 16) | (uint32_t(p[1]) << 8) | p[2]; }
uint32_t Read31(const uint8_t* p) {
  return ((uint32_t(p[0]) & 0x7f) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}

bool CarriesBlock(uint8_t type) {
  return type == kHeaders || type == kPushPromise || type == kContinuation;
}
bool StreamFrame(uint8_t type) {
  return type == kData || type == kHeaders || type == kRstStream || type == kPushPromise ||
         type == kContinuation;
}
bool Reported(const Http2State& s) {
  return StreamFrame(s.type) || (s.type == kSettings && s.table_size_set);
}

// One payload byte of a SETTINGS frame, or of a PUSH_PROMISE before its header block.
void PrefixByte(Http2State* s, uint8_t byte) {
  if (s->type == kSettings) {
    uint32_t at = s->position % 6;
    if (at < 2) {
      s->setting_id = uint16_t((s->setting_id << 8) | byte);
    } else {
      s->value = (s->value << 8) | byte;
    }
    if (at == 5) {
      if (s->setting_id == kSettingsHeaderTableSize) {
        s->table_size_set = true;
        s->table_size = s->value;
      }
      s->setting_id = 0;
      s->value = 0;
    }
  } else {
    s->value = (s->value << 8) | byte;  // PUSH_PROMISE: the promised stream id
  }
}

// Checks a complete frame header and sets up its payload; false if it breaks the protocol.
bool StartFrame(Http2State* s) {
  s->length = Read24(s->header);
  s->type = s->header[3];
  s->flags = s->header[4];
  s->stream = Read31(s->header + 5);
  s->position = 0;
  s->block_begin = s->block_end = 0;
  s->setting_id = 0;
  s->value = 0;
  s->table_size_set = false;
  // The length field's 24 bits cannot exceed 2^24 - 1, the largest SETTINGS_MAX_FRAME_SIZE
  // (§4.2), so there is no length to refuse beyond what RST_STREAM fixes below.
  if (!s->seen_settings) {
    if (s->type != kSettings || s->stream != 0) return false;  // §3.4: SETTINGS comes first
    s->seen_settings = true;
  }
  if (s->continuing) {  // §6.10: nothing but the block's CONTINUATION frames
    if (s->type != kContinuation || s->stream != s->open_stream) return false;
  } else if (s->type == kContinuation) {
    return false;
  }
  if (StreamFrame(s->type) && s->stream == 0) return false;
  if (s->type == kRstStream && s->length != 4) return false;
  if (s->type == kSettings) {  // §6.5: stream 0, whole settings, an ACK without any
    if (s->stream != 0 || s->length % 6 != 0 || ((s->flags & kAck) != 0 && s->length != 0))
      return false;
  }
  if (CarriesBlock(s->type)) {
    s->continuing = (s->flags & kEndHeaders) == 0;
    s->open_stream = s->stream;
    s->block_end = s->length;
    if (s->type == kHeaders && (s->flags & kPriorityFlag) != 0) s->block_begin = 5;
    if (s->type == kPushPromise) s->block_begin = 4;
    bool padded = s->type != kContinuation && (s->flags & kPadded) != 0;
    if (padded) {
      s->block_begin += 1;
      if (s->length < s->block_begin) return false;
      s->phase = kInPadLength;
      return true;
    }
    if (s->length < s->block_begin) return false;
  }
  s->phase = kInPayload;
  return true;
}

// The frame that just ended, as numbers.
Http2Frame FrameOf(const Http2State& s) {
  const uint32_t extra = s.type == kPushPromise ? s.value & 0x7fffffff
                         : s.type == kSettings  ? s.table_size
                                                : 0;
  return {s.type, s.flags, s.stream, s.length, extra};
}

}  // namespace

void InitHttp2(Parser* parser) {
  Http2State* s = InitState<Http2State>(parser);
  s->phase = parser->direction == Direction::kRequest ? kInPreface : kInHeader;
}

size_t UpgradeToHttp2(Parser* parser, uint32_t preface_bytes, const uint8_t* data, size_t length,
                      size_t done, bool* ended) {
  parser->protocol = kHttp2;
  InitHttp2(parser);
  Http2State* s = StateOf<Http2State>(parser);
  if (parser->direction == Direction::kRequest) s->have = uint8_t(preface_bytes);
  *ended = false;
  if (done == length) return done;
  size_t n = ConsumeHttp2(parser, data + done, length - done, ended);
  s->call_block_begin += done;  // counted from the start of what this call was given
  return done + n;
}

size_t ConsumeHttp2(Parser* parser, const uint8_t* data, size_t length, bool* ended) {
  Http2State* s = StateOf<Http2State>(parser);
  s->call_block_begin = s->call_block_count = 0;
  size_t i = 0;
  while (i < length) {
    switch (s->phase) {
      case kInPreface:
        if (data[i] != kPreface[s->have]) return Fail(parser, length, ended);
        ++i;
        if (++s->have == kPrefaceLength) {
          s->phase = kInHeader;
          s->have = 0;
        }
        continue;
      case kInHeader: {
        // The header's bytes, as many as are here (a whole header is usually one copy).
        size_t take = Min(length - i, uint64_t(kFrameHeader - s->have));
        memcpy(s->header + s->have, data + i, take);
        s->have = uint8_t(s->have + take);
        i += take;
        if (s->have < kFrameHeader) continue;
        s->have = 0;
        if (!StartFrame(s)) return Fail(parser, length, ended);
        break;  // a frame with an empty payload may end here
      }
      case kInPadLength: {
        uint32_t pad = data[i++];
        s->position = 1;
        if (uint64_t(s->block_begin) + pad > s->length) return Fail(parser, length, ended);
        s->block_end = s->length - pad;
        s->phase = kInPayload;
        break;
      }
      case kInPayload: {
        // A SETTINGS frame's payload, and a PUSH_PROMISE's promised stream id, are read
        // byte by byte (a few bytes a connection); every other payload is only counted.
        if (s->type == kSettings || (s->type == kPushPromise && s->position < s->block_begin)) {
          PrefixByte(s, data[i++]);
          ++s->position;
          break;
        }
        size_t take = Min(length - i, s->length - s->position);
        // This call's bytes of the header block: the payload bytes [position, position +
        // take) that lie in [block_begin, block_end).
        uint32_t from = s->position > s->block_begin ? s->position : s->block_begin;
        uint64_t to = uint64_t(s->position) + take;
        if (to > s->block_end) to = s->block_end;
        if (to > from) {
          s->call_block_begin = i + (from - s->position);
          s->call_block_count = to - from;
        }
        s->position += uint32_t(take);
        i += take;
        break;
      }
    }
    if (s->phase == kInPayload && s->position == s->length) {
      s->phase = kInHeader;
      if (Reported(*s)) {
        if (parser->frame_numbers_only) {
          ClearAttributes(parser);
        } else {
          SetHttp2FrameAttributes(FrameOf(*s), &parser->attributes);
        }
        *ended = true;
        return i;
      }
    }
  }
  return i;
}

}  // namespace weft::capture::protocols::internal

namespace weft::capture::protocols {

bool EndedHttp2Frame(const Parser* parser, Http2Frame* frame) {
  if (parser->protocol != kHttp2 || parser->failed) return false;
  *frame = internal::FrameOf(
      *std::launder(reinterpret_cast<const internal::Http2State*>(parser->state)));
  return true;
}

void SetHttp2FrameAttributes(const Http2Frame& frame, Attributes* attributes) {
  using namespace internal;
  attributes->count = 0;
  AddDecimalAttribute(*attributes, "http2.stream", frame.stream);
  const char* name = frame.type == kData          ? "DATA"
                     : frame.type == kHeaders     ? "HEADERS"
                     : frame.type == kRstStream   ? "RST_STREAM"
                     : frame.type == kPushPromise ? "PUSH_PROMISE"
                     : frame.type == kSettings    ? "SETTINGS"
                                                  : "CONTINUATION";
  char words[48];
  size_t n = strlen(name);
  memcpy(words, name, n);
  auto append = [&](const char* word) {
    size_t w = strlen(word);
    words[n++] = ' ';
    memcpy(words + n, word, w);
    n += w;
  };
  if ((frame.type == kData || frame.type == kHeaders) && (frame.flags & kEndStream) != 0)
    append("END_STREAM");
  if (CarriesBlock(frame.type) && (frame.flags & kEndHeaders) != 0) append("END_HEADERS");
  AddAttribute(*attributes, "http2.frame", words, n);
  AddDecimalAttribute(*attributes, "http2.length", frame.length);
  if (frame.type == kPushPromise) AddDecimalAttribute(*attributes, "http2.promised", frame.extra);
  if (frame.type == kSettings)
    AddDecimalAttribute(*attributes, "http2.header_table_size", frame.extra);
}

bool HeaderBlockBytes(const Parser* parser, size_t* begin, size_t* count) {
  *begin = *count = 0;
  if (parser->protocol != kHttp2 || parser->failed) return false;
  const auto* s = std::launder(reinterpret_cast<const internal::Http2State*>(parser->state));
  *begin = size_t(s->call_block_begin);
  *count = size_t(s->call_block_count);
  return *count != 0;
}

}  // namespace weft::capture::protocols
