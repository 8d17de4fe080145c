// memcached processor (BorderPatrol §3.3), text and binary protocols as memcached 1.6's
// doc/protocol.txt and doc/binary-protocol (protocol_binary.h) define them. A direction
// speaks one of the two, chosen by its first byte: the binary magic (0x80 for requests,
// 0x81 for responses) or text.
//
// Text requests: one command line ended by '\n' (memcached strips a CR before it), words
// separated by spaces. The storage commands (set, add, replace, append, prepend, cas) and
// the meta set (ms) are followed by a data block of the line's <bytes> and CRLF; every
// other command is its line. Attributes memcached.command (the first word, lower-cased),
// memcached.key (the first key: word 1, or word 2 for gat and gats, whose word 1 is the
// expiry), memcached.reply: "none" where the server will not answer (the noreply word,
// quit) and "quiet" for a meta command with the q flag (answered only on some outcomes),
// and memcached.opaque: a meta command's O(token) flag, which its reply echoes.
//
// Text replies: one message per reply: VALUE blocks (a line and its data block) up to
// END, STAT, ITEM or PREFIX lines up to END, a meta VA line and its data block, or one
// line (STORED, NOT_FOUND, a number, ERROR, HD, EN, ...). Attribute memcached.status (the
// reply's first word), memcached.key (the first VALUE's key) and memcached.opaque (a meta
// reply's O flag).
//
// Binary: a 24-byte header (magic, opcode, key length, extras length, data type,
// vbucket or status, total body length, opaque, CAS) and its body (extras, key, value).
// A message is a header and its body, except that a successful stat reply is all its
// packets up to the one without a key. Attributes memcached.command (the opcode's name),
// memcached.key, memcached.opaque (decimal, where not 0) and on replies memcached.status
// (decimal).
#include "capture/protocols/processors.h"

namespace weft::capture::protocols::internal {

namespace {

constexpr uint8_t kRequestMagic = 0x80;
constexpr uint8_t kResponseMagic = 0x81;
constexpr uint32_t kMaxLine = 1 << 20;         // a line longer than this is not memcached
constexpr uint64_t kMaxData = 0x7fffffff - 2;  // memcached refuses a larger <bytes> (INT_MAX - 2)
constexpr int kMaxWord = 16;                   // of a command or status word
constexpr int kHeaderBytes = 24;
constexpr uint8_t kStatOpcode = 0x10;
constexpr int kMaxOpaque = 32;  // a meta command's O(token): memcached takes up to 32 bytes

// The binary protocol's opcodes (protocol_binary.h), lower-cased; gaps are unnamed.
constexpr const char* kOpcodes[] = {
    "get",       "set",       "add",
    "replace",   "delete",    "incr",
    "decr",      "quit",      "flush",
    "getq",      "noop",      "version",
    "getk",      "getkq",     "append",
    "prepend",   "stat",      "setq",
    "addq",      "replaceq",  "deleteq",
    "incrq",     "decrq",     "quitq",
    "flushq",    "appendq",   "prependq",
    "verbosity", "touch",     "gat",
    "gatq",      nullptr,     "sasl_list_mechs",
    "sasl_auth", "sasl_step", "gatk",
    "gatkq",
};
constexpr int kOpcodeCount = sizeof(kOpcodes) / sizeof(kOpcodes[0]);

// What the words of a text request line mean, by command (protocol.txt).
struct TextCommand {
  const char* name;
  uint8_t key_word;   // the word holding the first key; 0: none
  uint8_t data_word;  // the word holding <bytes> of a data block; 0: none
  bool noreply;       // a last word "noreply" silences the reply
  bool meta;          // flags follow the key; "q" is quiet mode
};
constexpr TextCommand kTextCommands[] = {
    {"get", 1, 0, false, false},      {"gets", 1, 0, false, false},
    {"gat", 2, 0, false, false},      {"gats", 2, 0, false, false},
    {"set", 1, 4, true, false},       {"add", 1, 4, true, false},
    {"replace", 1, 4, true, false},   {"append", 1, 4, true, false},
    {"prepend", 1, 4, true, false},   {"cas", 1, 4, true, false},
    {"delete", 1, 0, true, false},    {"incr", 1, 0, true, false},
    {"decr", 1, 0, true, false},      {"touch", 1, 0, true, false},
    {"mg", 1, 0, false, true},        {"ms", 1, 2, false, true},
    {"md", 1, 0, false, true},        {"ma", 1, 0, false, true},
    {"me", 1, 0, false, false},       {"verbosity", 0, 0, true, false},
    {"flush_all", 0, 0, true, false},
};

enum Mode : uint8_t { kUndecided, kText, kBinary };

enum Phase : uint8_t {
  kLine,    // text: a line
  kData,    // text: a data block's bytes
  kDataCr,  // text: the CR after them
  kDataLf,  // text: the LF
  kHeader,  // binary: the 24-byte header
  kBody,    // binary: extras, key and value
};

// Where a text reply stands between lines.
enum Reply : uint8_t {
  kFirstLine,  // the reply's first line
  kListing,    // after a VALUE, STAT, ITEM or PREFIX line: more of them, up to END
};

struct State {
  Mode mode;
  Phase phase;
  Reply reply;
  // The line being read.
  uint8_t word;  // words begun so far (the current word is word - 1)
  bool in_word;
  uint8_t word_length;  // bytes of the current word, up to 255
  uint8_t first_length;
  uint8_t key_word;  // as in TextCommand, for the line being read
  uint8_t data_word;
  bool noreply_allowed;
  bool meta;
  uint8_t flags_from;  // the first word of a meta command's or reply's flags; 0: none
  bool noreply_word;   // the last word so far is "noreply"
  uint8_t word_first;  // the current word's first byte
  bool quiet;          // a meta flag "q" went by
  bool quit;
  bool number_ok;  // the data word is a number no larger than kMaxData
  uint8_t key_length;
  uint32_t line_bytes;
  uint64_t number;
  uint64_t remaining;  // data block or binary body bytes still to come
  // The message's attributes, kept until it ends.
  uint8_t status_length;
  char status[kMaxWord];
  char first[kMaxWord];  // the current line's first word
  char key[kMaxValue];
  uint8_t opaque_length;  // a meta O(token) flag's token
  char opaque[kMaxOpaque];
  // Binary.
  uint8_t header_length;
  uint8_t header[kHeaderBytes];
  uint32_t body_offset;  // bytes of the body read so far
};

const TextCommand* FindTextCommand(const char* word, size_t length) {
  if (length == 0) return nullptr;
  for (const TextCommand& c : kTextCommands) {
    if (c.name[0] == word[0] && strlen(c.name) == length && memcmp(c.name, word, length) == 0)
      return &c;
  }
  return nullptr;
}

// Whether the line's first word is `word` (a literal).
template <size_t N>
bool WordIs(const State* s, const char (&word)[N]) {
  return s->first_length == N - 1 && memcmp(s->first, word, N - 1) == 0;
}

size_t End(Parser* parser, size_t consumed, bool* ended) {
  *ended = true;
  Mode mode = StateOf<State>(parser)->mode;
  State* s = InitState<State>(parser);
  s->mode = mode;
  s->phase = mode == kBinary ? kHeader : kLine;
  return consumed;
}

void AddLowerCase(Parser* parser, const char* key, const char* value, size_t length) {
  char lower[kMaxWord];
  for (size_t i = 0; i < length; ++i) lower[i] = char(ToLower(uint8_t(value[i])));
  AddAttribute(parser, key, lower, length);
}

// --- text ---

// The first word of a line is complete: what the rest of the line means.
void FirstWordDone(Parser* parser, State* s) {
  if (parser->direction == Direction::kRequest) {
    const TextCommand* c = FindTextCommand(s->first, s->first_length);
    if (c != nullptr) {
      s->key_word = c->key_word;
      s->data_word = c->data_word;
      s->noreply_allowed = c->noreply;
      s->meta = c->meta;
      if (c->meta)
        s->flags_from = uint8_t((c->data_word > c->key_word ? c->data_word : c->key_word) + 1);
    }
    s->quit = WordIs(s, "quit");
    return;
  }
  if (s->reply == kFirstLine) {
    s->status_length = s->first_length;
    memcpy(s->status, s->first, s->first_length);
  }
  if (WordIs(s, "VALUE")) {
    if (s->reply == kFirstLine) s->key_word = 1;
    s->data_word = 3;
  } else if (s->reply == kFirstLine && WordIs(s, "VA")) {
    s->data_word = 1;
    s->flags_from = 2;
  } else if (s->reply == kFirstLine && (WordIs(s, "HD") || WordIs(s, "EN") || WordIs(s, "NF") ||
                                        WordIs(s, "NS") || WordIs(s, "EX"))) {
    s->flags_from = 1;
  }
}

void WordDone(Parser* parser, State* s) {
  s->in_word = false;
  uint8_t index = uint8_t(s->word - 1);
  if (index == 0) FirstWordDone(parser, s);
  s->noreply_word = s->noreply_word && s->word_length == 7;
  // A meta flag is a word whose first letter names it (memcached reads no further for
  // q): q is quiet mode.
  if (s->flags_from != 0 && index >= s->flags_from && s->word_first == 'q') s->quiet = true;
}

// The `n` bytes at `p` continue the current word (none of them ends it). The words a
// line's command gives a meaning are kept or read; of the others only whether the word
// is "noreply" matters.
void WordBytes(State* s, const uint8_t* p, size_t n) {
  static constexpr char kNoreply[] = "noreply";
  uint8_t index = uint8_t(s->word - 1);
  size_t at = s->word_length;
  if (at == 0) s->word_first = p[0];
  if (at < 7) {
    size_t k = n < 7 - at ? n : 7 - at;
    s->noreply_word = (at == 0 || s->noreply_word) && memcmp(p, kNoreply + at, k) == 0;
  }
  if (at + n > 7) s->noreply_word = false;
  s->word_length = uint8_t(at + n < 255 ? at + n : 255);
  if (s->flags_from != 0 && index >= s->flags_from && s->word_first == 'O') {
    // O(token): the token comes back in the reply, a witness of the exchange. A later O
    // flag replaces an earlier one.
    if (at == 0) {
      s->opaque_length = 0;
      ++p;
      --n;
    }
    size_t keep = Min(n, uint64_t(kMaxOpaque - s->opaque_length));
    memcpy(s->opaque + s->opaque_length, p, keep);
    s->opaque_length = uint8_t(s->opaque_length + keep);
    return;
  }
  if (index == 0) {
    size_t keep = Min(n, uint64_t(kMaxWord - s->first_length));
    memcpy(s->first + s->first_length, p, keep);
    s->first_length = uint8_t(s->first_length + keep);
    return;
  }
  if (index == s->key_word) {
    size_t keep = Min(n, uint64_t(kMaxValue - s->key_length));
    memcpy(s->key + s->key_length, p, keep);
    s->key_length = uint8_t(s->key_length + keep);
  }
  if (index == s->data_word) {
    if (at == 0) s->number_ok = true;
    for (size_t k = 0; k < n && s->number_ok; ++k) {
      if (!IsDigit(p[k])) {
        s->number_ok = false;
      } else {
        s->number = s->number * 10 + (p[k] - '0');
        if (s->number > kMaxData) s->number_ok = false;
      }
    }
  }
}

// The request line ended: the message ends here, or its data block follows.
size_t TextRequestLineDone(Parser* parser, State* s, size_t consumed, bool* ended) {
  if (s->data_word != 0 && s->word > s->data_word && s->number_ok) {
    s->remaining = s->number;
    s->phase = s->remaining > 0 ? kData : kDataCr;
    return 0;
  }
  ClearAttributes(parser);
  if (s->first_length > 0) AddLowerCase(parser, "memcached.command", s->first, s->first_length);
  if (s->key_word != 0 && s->word > s->key_word) {
    AddAttribute(parser, "memcached.key", s->key, s->key_length);
  }
  if (s->quit || (s->noreply_allowed && s->noreply_word)) {
    AddAttribute(parser, "memcached.reply", "none", 4);
  } else if (s->quiet) {
    AddAttribute(parser, "memcached.reply", "quiet", 5);
  }
  if (s->opaque_length > 0) AddAttribute(parser, "memcached.opaque", s->opaque, s->opaque_length);
  return End(parser, consumed, ended);
}

void TextReplyAttributes(Parser* parser, State* s) {
  ClearAttributes(parser);
  if (s->status_length > 0) AddAttribute(parser, "memcached.status", s->status, s->status_length);
  if (s->key_length > 0) AddAttribute(parser, "memcached.key", s->key, s->key_length);
  if (s->opaque_length > 0) AddAttribute(parser, "memcached.opaque", s->opaque, s->opaque_length);
}

// What a reply line leaves to do.
enum class LineResult { kMore, kEnded, kBad };

// A reply line ended: the reply ends, goes on with more lines, or a data block follows.
LineResult TextReplyLineDone(Parser* parser, State* s) {
  bool value = WordIs(s, "VALUE"), va = s->reply == kFirstLine && WordIs(s, "VA");
  if (value || va) {
    if (!s->number_ok) return LineResult::kBad;
    s->remaining = s->number;
    s->phase = s->remaining > 0 ? kData : kDataCr;
    if (value) s->reply = kListing;
    return LineResult::kMore;
  }
  if (WordIs(s, "STAT") || WordIs(s, "ITEM") || WordIs(s, "PREFIX")) {
    s->reply = kListing;
    return LineResult::kMore;
  }
  // END closes a listing; any other line is a reply of its own, or the error that cuts a
  // listing short.
  TextReplyAttributes(parser, s);
  return LineResult::kEnded;
}

// Starts the next line of the same message.
void NextLine(State* s) {
  s->word = 0;
  s->in_word = false;
  s->word_length = 0;
  s->first_length = 0;
  s->key_word = 0;
  s->data_word = 0;
  s->flags_from = 0;
  s->number = 0;
  s->number_ok = false;
  s->line_bytes = 0;
  s->phase = kLine;
}

size_t ConsumeText(Parser* parser, State* s, const uint8_t* data, size_t length, bool* ended) {
  size_t i = 0;
  while (i < length) {
    switch (s->phase) {
      case kLine: {
        uint8_t c = data[i++];
        if (++s->line_bytes > kMaxLine) return Fail(parser, length, ended);
        if (c == '\n') {
          if (s->in_word) WordDone(parser, s);
          if (parser->direction == Direction::kRequest) {
            if (TextRequestLineDone(parser, s, i, ended) != 0) return i;
          } else {
            switch (TextReplyLineDone(parser, s)) {
              case LineResult::kBad:
                return Fail(parser, length, ended);
              case LineResult::kEnded:
                return End(parser, i, ended);
              case LineResult::kMore:
                if (s->phase == kLine) NextLine(s);
                break;
            }
          }
          break;
        }
        if (c == ' ' || c == '\r') {
          if (s->in_word) WordDone(parser, s);
          break;
        }
        if (!s->in_word) {
          s->in_word = true;
          s->word_length = 0;
          if (s->word < 255) ++s->word;
        }
        // The rest of the word in these bytes, at once.
        size_t n = 1;
        while (i - 1 + n < length && data[i - 1 + n] != ' ' && data[i - 1 + n] != '\r' &&
               data[i - 1 + n] != '\n') {
          ++n;
        }
        s->line_bytes += uint32_t(n - 1);
        if (s->line_bytes > kMaxLine) return Fail(parser, length, ended);
        WordBytes(s, data + i - 1, n);
        i += n - 1;
        break;
      }
      case kData: {
        size_t take = Min(length - i, s->remaining);
        s->remaining -= take;
        i += take;
        if (s->remaining == 0) s->phase = kDataCr;
        break;
      }
      case kDataCr:
        if (data[i++] != '\r') return Fail(parser, length, ended);
        s->phase = kDataLf;
        break;
      case kDataLf:
        if (data[i++] != '\n') return Fail(parser, length, ended);
        if (parser->direction == Direction::kRequest) {
          s->data_word = 0;  // the line's data block is read: end the message
          TextRequestLineDone(parser, s, i, ended);
          return i;
        }
        if (s->reply == kListing) {
          NextLine(s);
          break;
        }
        TextReplyAttributes(parser, s);  // VA and its data
        return End(parser, i, ended);
      case kHeader:
      case kBody:
        return Fail(parser, length, ended);
    }
  }
  return length;
}

// --- binary ---

uint32_t Header16(const State* s, int at) {
  return (uint32_t(s->header[at]) << 8) | s->header[at + 1];
}
uint32_t Header32(const State* s, int at) { return (Header16(s, at) << 16) | Header16(s, at + 2); }

size_t BinaryEnd(Parser* parser, State* s, size_t consumed, bool* ended) {
  uint8_t opcode = s->header[1];
  uint32_t status = Header16(s, 6);
  if (parser->direction == Direction::kResponse && opcode == kStatOpcode && status == 0 &&
      Header16(s, 2) > 0) {
    // One statistic of a stat reply; the reply ends with the packet without a key.
    s->header_length = 0;
    s->key_length = 0;
    s->phase = kHeader;
    return 0;
  }
  ClearAttributes(parser);
  const char* name = opcode < kOpcodeCount ? kOpcodes[opcode] : nullptr;
  if (name != nullptr) {
    AddAttribute(parser, "memcached.command", name, strlen(name));
  } else {
    static constexpr char kHex[] = "0123456789abcdef";
    char code[4] = {'0', 'x', kHex[opcode >> 4], kHex[opcode & 15]};
    AddAttribute(parser, "memcached.command", code, 4);
  }
  if (Header16(s, 2) > 0) AddAttribute(parser, "memcached.key", s->key, s->key_length);
  // An opaque of 0 is what clients that do not pipeline leave: as a witness it would give
  // every exchange of the connection the same call id.
  uint32_t opaque = Header32(s, 12);
  if (opaque != 0) AddDecimalAttribute(parser, "memcached.opaque", opaque);
  if (parser->direction == Direction::kResponse) {
    AddDecimalAttribute(parser, "memcached.status", status);
  }
  return End(parser, consumed, ended);
}

size_t ConsumeBinary(Parser* parser, State* s, const uint8_t* data, size_t length, bool* ended) {
  uint8_t magic = parser->direction == Direction::kRequest ? kRequestMagic : kResponseMagic;
  size_t i = 0;
  while (i < length) {
    if (s->phase == kHeader) {
      size_t take = Min(length - i, uint64_t(kHeaderBytes - s->header_length));
      memcpy(s->header + s->header_length, data + i, take);
      s->header_length = uint8_t(s->header_length + take);
      i += take;
      if (s->header_length < kHeaderBytes) return length;
      if (s->header[0] != magic) return Fail(parser, length, ended);
      uint32_t body = Header32(s, 8);
      if (uint64_t(Header16(s, 2)) + s->header[4] > body) return Fail(parser, length, ended);
      s->remaining = body;
      s->body_offset = 0;
      s->phase = kBody;
      if (body == 0) {
        size_t done = BinaryEnd(parser, s, i, ended);
        if (done != 0) return done;
      }
      continue;
    }
    // The key is kept (its first kMaxValue bytes); extras and value are counted.
    uint32_t key_begin = s->header[4], key_end = key_begin + Header16(s, 2);
    size_t take = Min(length - i, s->remaining);
    if (s->body_offset < key_end) {
      take = Min(take, uint64_t(key_end - s->body_offset));
      if (s->body_offset >= key_begin) {
        size_t keep = Min(take, uint64_t(kMaxValue - s->key_length));
        memcpy(s->key + s->key_length, data + i, keep);
        s->key_length = uint8_t(s->key_length + keep);
      } else {
        take = Min(take, uint64_t(key_begin - s->body_offset));
      }
    }
    s->body_offset += uint32_t(take);
    s->remaining -= take;
    i += take;
    if (s->remaining == 0) {
      size_t done = BinaryEnd(parser, s, i, ended);
      if (done != 0) return done;
    }
  }
  return length;
}

}  // namespace

void InitMemcached(Parser* parser) { InitState<State>(parser); }

size_t ConsumeMemcached(Parser* parser, const uint8_t* data, size_t length, bool* ended) {
  State* s = StateOf<State>(parser);
  if (s->mode == kUndecided) {
    bool binary = data[0] == kRequestMagic || data[0] == kResponseMagic;
    s->mode = binary ? kBinary : kText;
    s->phase = binary ? kHeader : kLine;
  }
  return s->mode == kBinary ? ConsumeBinary(parser, s, data, length, ended)
                            : ConsumeText(parser, s, data, length, ended);
}

}  // namespace weft::capture::protocols::internal
