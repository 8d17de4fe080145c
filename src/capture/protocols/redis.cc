// Redis serialization protocol processor (BorderPatrol §3.3, with Redis in place of X11;
// RESP2 and RESP3 as specified in redis.io/docs/reference/protocol-spec).
//
// Requests: an array of bulk strings (*N, then N times $len and len bytes, each line ended
// by CRLF) or an inline command (one line, words separated by spaces). Each command is a
// message; attributes redis.command (the first word, upper-cased, cut to kMaxCommand) and
// redis.key (the second, if any). Inline commands are split at spaces without RESP's
// quoting rules; an empty array (*0, *-1) is a message without attributes, as is an empty
// inline line.
//
// Responses: one RESP value per message: simple lines (+ - : , # ( _), bulk values ($ !
// =, with $-1 null) and aggregates (* ~ > with N values, % with N pairs, *-1 null) nested
// up to kMaxDepth levels; an attribute (|N pairs) goes with the value after it. A push
// (>) outside a reply is a message of its own. RESP3 streamed strings and aggregates
// ($?, *?) are not followed: the parser fails on them.
//
// Redis's own limits bound what is accepted: 64 KiB inline lines, bulk strings up to
// kMaxBulk, aggregates of up to 2^31 - 1 elements.
#include "capture/protocols/processors.h"

namespace weft::capture::protocols::internal {

namespace {

constexpr uint32_t kMaxInline = 64 * 1024;  // PROTO_INLINE_MAX_SIZE
constexpr int64_t kMaxBulk = int64_t(1) << 40;
constexpr int64_t kMaxElements = 0x7fffffff;
constexpr int kMaxCommand = 24;
constexpr int kMaxDepth = 16;

// "<integer>\r\n" after a type byte, read a byte at a time; a bare LF is taken too.
struct NumberLine {
  int64_t value;
  bool negative;
  bool digits;
  bool cr;
};
enum class Number { kMore, kDone, kBad };
Number NumberByte(NumberLine* n, uint8_t c) {
  if (n->cr && c != '\n') return Number::kBad;
  if (c == '\r') {
    n->cr = true;
    return Number::kMore;
  }
  if (c == '\n') return n->digits ? Number::kDone : Number::kBad;
  if (c == '-' && !n->digits && !n->negative) {
    n->negative = true;
    return Number::kMore;
  }
  if (!IsDigit(c)) return Number::kBad;
  n->digits = true;
  n->value = n->value * 10 + (c - '0');  // at most 10 * kMaxBulk + 9: no overflow
  return n->value > kMaxBulk ? Number::kBad : Number::kMore;
}
int64_t NumberValue(const NumberLine& n) { return n.negative ? -n.value : n.value; }

// --- requests ---

enum RequestPhase : uint8_t {
  kCommandStart,
  kInline,
  kArrayCount,
  kBulkType,  // the '$' of the next element
  kBulkLength,
  kBulkData,
  kBulkCr,
  kBulkLf,
};

struct RequestState {
  RequestPhase phase;
  uint8_t command_length;
  uint8_t key_length;
  bool word_gap;   // inline: spaces since the last word
  uint32_t words;  // inline: words begun so far
  uint32_t inline_bytes;
  uint32_t elements;  // array: elements still to come
  uint32_t element;   // array: index of the element being read
  NumberLine number;
  uint64_t remaining;  // bulk bytes still to come
  char command[kMaxCommand];
  char key[kMaxValue];
};

size_t EndRequest(Parser* parser, RequestState* s, size_t consumed, bool* ended) {
  ClearAttributes(parser);
  if (s->command_length > 0) AddAttribute(parser, "redis.command", s->command, s->command_length);
  if (s->key_length > 0 || s->words > 1 || s->element > 1) {
    AddAttribute(parser, "redis.key", s->key, s->key_length);
  }
  InitState<RequestState>(parser);
  *ended = true;
  return consumed;
}

// Keeps byte `c` of word `word` (0: the command, 1: the key).
void KeepWordByte(RequestState* s, uint32_t word, uint8_t c) {
  if (word == 0 && s->command_length < kMaxCommand) {
    s->command[s->command_length++] = char(ToUpper(c));
  } else if (word == 1 && s->key_length < kMaxValue) {
    s->key[s->key_length++] = char(c);
  }
}

size_t ConsumeRequest(Parser* parser, const uint8_t* data, size_t length, bool* ended) {
  RequestState* s = StateOf<RequestState>(parser);
  size_t i = 0;
  while (i < length) {
    if (s->phase == kBulkData) {
      // Only the first two elements' first bytes are kept; the rest is counted.
      while (s->remaining > 0 && i < length && s->element < 2 &&
             (s->element == 0 ? s->command_length < kMaxCommand : s->key_length < kMaxValue)) {
        KeepWordByte(s, s->element, data[i++]);
        --s->remaining;
      }
      size_t take = Min(length - i, s->remaining);
      s->remaining -= take;
      i += take;
      if (s->remaining == 0) s->phase = kBulkCr;
      continue;
    }
    uint8_t c = data[i++];
    switch (s->phase) {
      case kCommandStart:
        if (c == '*') {
          s->phase = kArrayCount;
          break;
        }
        s->phase = kInline;
        s->word_gap = true;
        [[fallthrough]];
      case kInline:
        if (++s->inline_bytes > kMaxInline) return Fail(parser, length, ended);
        if (c == '\n') return EndRequest(parser, s, i, ended);
        if (c == '\r') break;
        if (c == ' ' || c == '\t') {
          s->word_gap = true;
          break;
        }
        if (s->word_gap) {
          s->word_gap = false;
          if (s->words < 2)
            ++s->words;
          else
            s->words = 3;
        }
        KeepWordByte(s, s->words - 1, c);
        break;
      case kArrayCount:
      case kBulkLength:
        switch (NumberByte(&s->number, c)) {
          case Number::kMore:
            break;
          case Number::kBad:
            return Fail(parser, length, ended);
          case Number::kDone: {
            int64_t value = NumberValue(s->number);
            s->number = NumberLine{};
            if (s->phase == kArrayCount) {
              if (value > kMaxElements) return Fail(parser, length, ended);
              if (value <= 0) return EndRequest(parser, s, i, ended);
              s->elements = uint32_t(value);
              s->element = 0;
              s->phase = kBulkType;
            } else {
              if (value < 0) return Fail(parser, length, ended);
              s->remaining = uint64_t(value);
              s->phase = s->remaining > 0 ? kBulkData : kBulkCr;
            }
            break;
          }
        }
        break;
      case kBulkType:
        if (c != '$') return Fail(parser, length, ended);
        s->phase = kBulkLength;
        break;
      case kBulkCr:
        if (c != '\r') return Fail(parser, length, ended);
        s->phase = kBulkLf;
        break;
      case kBulkLf:
        if (c != '\n') return Fail(parser, length, ended);
        ++s->element;
        if (--s->elements == 0) return EndRequest(parser, s, i, ended);
        s->phase = kBulkType;
        break;
      case kBulkData:
        break;
    }
  }
  return length;
}

// --- responses ---

enum ResponsePhase : uint8_t {
  kValueStart,
  kSimpleLine,  // the rest of a + - : , # ( _ line
  kLengthLine,  // the length of a bulk value
  kCountLine,   // the count of an aggregate
  kValueData,
  kValueCr,
  kValueLf,
};

struct ResponseState {
  ResponsePhase phase;
  uint8_t type;         // the value being read
  uint8_t depth;        // open aggregates
  uint16_t attributes;  // bit d: the aggregate at depth d is an attribute (|)
  NumberLine number;
  uint64_t remaining;        // bulk bytes still to come
  uint32_t left[kMaxDepth];  // values still to come in each open aggregate
};

// A value is complete: true if it completes the message. Aggregates it completes are
// complete values in turn; an attribute is no value, the one after it is.
bool ValueDone(ResponseState* s) {
  s->phase = kValueStart;
  while (s->depth > 0) {
    if (--s->left[s->depth - 1] > 0) return false;
    --s->depth;
    if (s->attributes & (1u << s->depth)) {
      s->attributes = uint16_t(s->attributes & ~(1u << s->depth));
      return false;
    }
  }
  return true;
}

size_t ConsumeResponse(Parser* parser, const uint8_t* data, size_t length, bool* ended) {
  ResponseState* s = StateOf<ResponseState>(parser);
  size_t i = 0;
  bool done = false;
  while (i < length && !done) {
    if (s->phase == kSimpleLine) {
      const void* lf = memchr(data + i, '\n', length - i);
      if (lf == nullptr) return length;
      i = size_t(static_cast<const uint8_t*>(lf) - data) + 1;
      done = ValueDone(s);
      continue;
    }
    if (s->phase == kValueData) {
      size_t take = Min(length - i, s->remaining);
      s->remaining -= take;
      i += take;
      if (s->remaining == 0) s->phase = kValueCr;
      continue;
    }
    uint8_t c = data[i++];
    switch (s->phase) {
      case kValueStart:
        s->type = c;
        switch (c) {
          case '+':
          case '-':
          case ':':
          case ',':
          case '#':
          case '(':
          case '_':
            s->phase = kSimpleLine;
            break;
          case '$':
          case '!':
          case '=':
            s->phase = kLengthLine;
            break;
          case '*':
          case '~':
          case '>':
          case '%':
          case '|':
            s->phase = kCountLine;
            break;
          default:
            return Fail(parser, length, ended);
        }
        break;
      case kLengthLine:
      case kCountLine:
        switch (NumberByte(&s->number, c)) {
          case Number::kMore:
            break;
          case Number::kBad:
            return Fail(parser, length, ended);
          case Number::kDone: {
            int64_t value = NumberValue(s->number);
            s->number = NumberLine{};
            bool null = value == -1 && (s->type == '$' || s->type == '*');
            if (null) {
              done = ValueDone(s);
              break;
            }
            if (value < 0) return Fail(parser, length, ended);
            if (s->phase == kLengthLine) {
              s->remaining = uint64_t(value);
              s->phase = value > 0 ? kValueData : kValueCr;
              break;
            }
            if (value > kMaxElements) return Fail(parser, length, ended);
            uint32_t count = uint32_t(value);
            if (s->type == '%' || s->type == '|') count *= 2;
            if (count == 0) {
              // An empty aggregate is a value; an empty attribute is nothing.
              if (s->type == '|') {
                s->phase = kValueStart;
              } else {
                done = ValueDone(s);
              }
              break;
            }
            if (s->depth == kMaxDepth) return Fail(parser, length, ended);
            if (s->type == '|') s->attributes = uint16_t(s->attributes | (1u << s->depth));
            s->left[s->depth++] = count;
            s->phase = kValueStart;
            break;
          }
        }
        break;
      case kValueCr:
        if (c != '\r') return Fail(parser, length, ended);
        s->phase = kValueLf;
        break;
      case kValueLf:
        if (c != '\n') return Fail(parser, length, ended);
        done = ValueDone(s);
        break;
      case kSimpleLine:
      case kValueData:
        break;
    }
  }
  if (!done) return length;
  ClearAttributes(parser);
  *ended = true;
  return i;
}

}  // namespace

void InitRedis(Parser* parser) {
  if (parser->direction == Direction::kRequest) {
    InitState<RequestState>(parser);
  } else {
    InitState<ResponseState>(parser);
  }
}

size_t ConsumeRedis(Parser* parser, const uint8_t* data, size_t length, bool* ended) {
  return parser->direction == Direction::kRequest ? ConsumeRequest(parser, data, length, ended)
                                                  : ConsumeResponse(parser, data, length, ended);
}

}  // namespace weft::capture::protocols::internal
