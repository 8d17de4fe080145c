// MySQL/MariaDB client/server protocol processor (BorderPatrol §3.3; MariaDB's
// "Client/Server Protocol" reference and MySQL's "Client/Server Protocol" documentation).
//
// Both directions are packets: a 3-byte little-endian payload length and a sequence id,
// then the payload. A payload of 0xFFFFFF bytes continues in the next packet; the packets
// up to the first shorter one are one logical packet, which is what the rules below read.
// A message ends where its sender waits for the other side.
//
// Requests: the client's first packet answers the server's greeting. A short one (32
// bytes) with CLIENT_SSL is an SSLRequest: a message of its own, after which the stream is
// TLS and no more ends are reported (not a failure). Otherwise it is the HandshakeResponse
// (attribute mysql.user), and every later packet with a sequence id other than 0 answers
// the server's authentication (auth switch, more data): each is a message. A packet with
// sequence id 0 is a command, a message of its own (attributes mysql.command, and sql for
// COM_QUERY and COM_STMT_PREPARE, mysql.stmt for the statement commands, mysql.db for
// COM_INIT_DB), except that COM_STMT_CLOSE and COM_STMT_SEND_LONG_DATA get no reply: they
// do not end a message but begin the next command's, so that requests and replies still
// alternate, as pairing by position wants. After COM_QUERY, packets with a non-zero
// sequence id are the file of a LOAD DATA LOCAL INFILE, one message up to its empty
// packet; after COM_CHANGE_USER they answer authentication again.
//
// Responses: the greeting (HandshakeV10, attribute mysql.server) is a message; so is each
// authentication step that waits for the client (OK, ERR, auth switch 0xFE, more data
// 0x01, except caching_sha2's "fast auth done", which the OK follows at once). Then each
// reply to a command: an OK or ERR packet; an EOF packet; a LOCAL INFILE request (0xFB);
// a result set (a column count, as many column definitions unless MariaDB's cached
// metadata says none follow, an EOF unless the client chose CLIENT_DEPRECATE_EOF, rows,
// then an EOF, or with CLIENT_DEPRECATE_EOF an OK with a 0xFE header, or an ERR); the
// reply to COM_STMT_PREPARE (a 12-byte OK with the statement id and the numbers of columns
// and parameters, then that many definitions, each group followed by an EOF unless
// CLIENT_DEPRECATE_EOF); the reply to COM_FIELD_LIST (column definitions up to an EOF);
// and COM_STATISTICS' one-packet string. An OK, EOF or 0xFE OK whose status has
// SERVER_MORE_RESULTS_EXISTS is followed by another result of the same reply. Attributes
// mysql.status ("ok", "error N" with the server's error code, "local infile"), mysql.rows
// for result sets and mysql.stmt for a prepared statement.
//
// The response parser never sees the client's capabilities. Whether the client chose
// CLIENT_DEPRECATE_EOF shows in a result set's packets: after the column definitions an
// EOF is 5 bytes, an OK with a 0xFE header at least 7, and a row starts with anything
// else. A prepare reply's last definition must be recognised as its end before the next
// packet is seen, so there the parser uses what the connection's earlier result sets
// showed and, before any, assumes EOF packets (as libmariadb, the mariadb client's
// library, asks for).
//
// Failure: packets out of sequence within a message, a greeting, handshake response or
// authentication packet of an unknown kind or over kMaxHandshake bytes, an unknown command
// byte, packets too short for their kind.
//
// The greeting answers no request: the descriptor row's server_greets has reconcile count
// the replies from 0, so reply k still answers request k.
//
// Limitations: the compressed protocol (CLIENT_COMPRESS) is not followed: the request
// parser stops at the first compressed command, and the response parser, which cannot see
// the client's choice, stops at a first reply that looks compressed (LooksCompressed).
// COM_STMT_FETCH replies (binary rows of a cursor) start like OK packets and are misread;
// replication streams (COM_BINLOG_DUMP) are not followed.
#include "capture/protocols/processors.h"

namespace weft::capture::protocols::internal {

namespace {

constexpr uint32_t kMaxPacket = 0xFFFFFF;  // a payload this long continues in the next packet
constexpr uint8_t kHeadBytes = 24;         // a logical packet's first bytes kept to read from
constexpr uint32_t kMaxHandshake = 65535 + 1024;  // greeting, handshake and authentication

// Capability flags (HandshakeResponse41).
constexpr uint32_t kClientCompress = 0x20;
constexpr uint32_t kClientProtocol41 = 0x200;
constexpr uint32_t kClientSsl = 0x800;
constexpr uint32_t kClientQueryAttributes = 1u << 27;
constexpr uint32_t kSslRequestLength = 32;  // capabilities, max packet, charset, filler

// Server status flags (OK and EOF packets).
constexpr uint16_t kStatusCursorExists = 0x0040;
constexpr uint16_t kStatusMoreResults = 0x0008;

// Commands whose text or ids are logged, and those with no reply.
constexpr uint8_t kComInitDb = 0x02;
constexpr uint8_t kComQuery = 0x03;
constexpr uint8_t kComChangeUser = 0x11;
constexpr uint8_t kComStmtPrepare = 0x16;
constexpr uint8_t kComStmtExecute = 0x17;
constexpr uint8_t kComStmtSendLongData = 0x18;
constexpr uint8_t kComStmtClose = 0x19;
constexpr uint8_t kComStmtReset = 0x1a;
constexpr uint8_t kComStmtFetch = 0x1c;
constexpr uint8_t kComStmtBulkExecute = 0xfa;  // MariaDB
constexpr uint8_t kComMulti = 0xfe;            // MariaDB

// Commands 0x00..0x1f by number; MariaDB's two others are named in CommandName.
constexpr const char* kCommandNames[] = {
    "Sleep",          "Quit",           "InitDB",      "Query",      "FieldList",
    "CreateDB",       "DropDB",         "Refresh",     "Shutdown",   "Statistics",
    "ProcessInfo",    "Connect",        "ProcessKill", "Debug",      "Ping",
    "Time",           "DelayedInsert",  "ChangeUser",  "BinlogDump", "TableDump",
    "ConnectOut",     "RegisterSlave",  "Prepare",     "Execute",    "LongData",
    "CloseStmt",      "ResetStmt",      "SetOption",   "Fetch",      "Daemon",
    "BinlogDumpGtid", "ResetConnection"};

const char* CommandName(uint8_t command) {
  if (command < sizeof(kCommandNames) / sizeof(kCommandNames[0])) return kCommandNames[command];
  if (command == kComStmtBulkExecute) return "BulkExecute";
  if (command == kComMulti) return "Multi";
  return nullptr;
}

enum Phase : uint8_t {
  // requests
  kHandshakeResponse,  // the client's first packet
  kAuthAnswers,        // after it: authentication answers until the first command
  kCommands,
  // responses
  kGreeting,
  kAuthentication,
  kReply,       // the first packet of a reply, or of a further result in one
  kColumnDefs,  // a result set's column definitions
  kAfterDefs,   // after them: an EOF, the first row or the end
  kRows,
  kFieldList,      // COM_FIELD_LIST's column definitions, up to an EOF
  kPrepareParams,  // the prepare reply's parameter definitions
  kPrepareParamsEof,
  kPrepareColumns,
  kPrepareColumnsEof,
  // both
  kOpaque,  // TLS or compression: nothing more to see
};

// Whether the connection's result sets carry an EOF after their column definitions.
enum EofMode : uint8_t { kEofUnknown, kEofPackets, kEofDeprecated };

// Text copied from a logical packet into `value`.
enum Capture : uint8_t { kCaptureNone, kCaptureToEnd, kCaptureToNul };

struct MysqlState {
  Phase phase;
  EofMode eof_mode;
  uint8_t have;  // header bytes collected
  uint8_t header[4];
  bool in_payload;
  bool continued;    // the logical packet goes on in the next physical packet
  bool long_packet;  // the logical packet has a 0xFFFFFF part
  bool check_seq;    // the next packet must have sequence id next_seq
  uint8_t next_seq;
  uint8_t seq;        // the current physical packet's sequence id
  uint8_t first_seq;  // the logical packet's first sequence id
  uint8_t head_length;
  uint8_t head[kHeadBytes];
  Capture capture;
  uint8_t capture_from;           // payload offset where the captured text starts
  bool capture_check_attributes;  // COM_QUERY with query attributes: only "00 01" is read
  uint8_t value_length;
  uint8_t last_command;   // requests: the last command
  bool compress;          // requests: the client asked for CLIENT_COMPRESS
  bool query_attributes;  // requests: the client asked for CLIENT_QUERY_ATTRIBUTES
  bool has_rows;          // responses: the reply has a result set
  bool first_reply;       // responses: the next packet is the first after authentication
  uint32_t remaining;     // payload bytes of the physical packet still to come
  uint32_t stmt;          // responses: the prepared statement's id
  uint64_t offset;        // payload bytes of the logical packet seen so far
  uint64_t left;          // definitions still to come
  uint64_t columns;       // prepare reply: column definitions after the parameters'
  uint64_t rows;
  char value[kMaxValue];
};

// Marks the stream broken; ConsumeMysql gives up on it (Fail) when the packet is done.
bool Broken(Parser* parser) {
  parser->failed = true;
  return false;
}

uint32_t Little16(const uint8_t* p) { return uint32_t(p[0]) | (uint32_t(p[1]) << 8); }
uint32_t Little24(const uint8_t* p) { return Little16(p) | (uint32_t(p[2]) << 16); }
uint32_t Little32(const uint8_t* p) { return Little24(p) | (uint32_t(p[3]) << 24); }

// The size of the length-encoded integer starting with byte c (0 for 0xFB NULL and 0xFF).
uint8_t LenencSize(uint8_t c) {
  if (c < 0xfb) return 1;
  if (c == 0xfc) return 3;
  if (c == 0xfd) return 4;
  if (c == 0xfe) return 9;
  return 0;
}
uint64_t LenencValue(const uint8_t* p) {
  switch (LenencSize(p[0])) {
    case 1:
      return p[0];
    case 3:
      return Little16(p + 1);
    case 4:
      return Little24(p + 1);
    default: {
      uint64_t v = 0;
      for (int i = 8; i >= 1; --i) v = (v << 8) | p[i];
      return v;
    }
  }
}

// The status flags of an OK packet (either header) in the head: after the affected rows
// and last insert id; 0 if they lie beyond it.
uint16_t OkStatus(const MysqlState* s) {
  size_t at = 1;
  for (int i = 0; i < 2; ++i) {
    if (at >= s->head_length) return 0;
    uint8_t size = LenencSize(s->head[at]);
    if (size == 0) return 0;
    at += size;
  }
  return at + 2 <= s->head_length ? uint16_t(Little16(s->head + at)) : 0;
}

void AddStatus(Parser* parser, const char* status) {
  AddAttribute(parser, "mysql.status", status, strlen(status));
}

// Ends a response message with status "ok" (and the rows of its result sets, if any).
bool EndOk(Parser* parser, MysqlState* s) {
  ClearAttributes(parser);
  AddStatus(parser, "ok");
  if (s->has_rows) AddDecimalAttribute(parser, "mysql.rows", s->rows);
  s->has_rows = false;
  s->rows = 0;
  s->phase = kReply;
  return true;
}

bool EndError(Parser* parser, MysqlState* s) {
  ClearAttributes(parser);
  char text[16] = "error ";
  size_t n = 6;
  if (s->head_length >= 3) {
    uint32_t code = Little16(s->head + 1);
    char digits[5];
    size_t d = 0;
    do {
      digits[d++] = char('0' + code % 10);
      code /= 10;
    } while (code != 0);
    while (d > 0) text[n++] = digits[--d];
  } else {
    n = 5;
  }
  AddAttribute(parser, "mysql.status", text, n);
  if (s->has_rows) AddDecimalAttribute(parser, "mysql.rows", s->rows);
  s->has_rows = false;
  s->rows = 0;
  s->phase = kReply;
  return true;
}

bool EndStatus(Parser* parser, MysqlState* s, const char* status) {
  ClearAttributes(parser);
  AddStatus(parser, status);
  s->has_rows = false;
  s->rows = 0;
  return true;
}

bool EndPrepared(Parser* parser, MysqlState* s) {
  ClearAttributes(parser);
  AddStatus(parser, "ok");
  AddDecimalAttribute(parser, "mysql.stmt", s->stmt);
  s->phase = kReply;
  return true;
}

bool IsEof(const MysqlState* s) {
  return s->head_length >= 1 && s->head[0] == 0xfe && !s->long_packet && s->offset < 7;
}

// An OK, EOF or 0xFE OK packet that ends a result: the reply goes on if more results exist.
bool ResultEnd(Parser* parser, MysqlState* s) {
  uint16_t status = s->offset == 5 ? uint16_t(Little16(s->head + 3)) : OkStatus(s);
  if (s->offset < 5 && s->head[0] == 0xfe) status = 0;  // a pre-4.1 EOF: no status
  if (status & kStatusMoreResults) {
    s->phase = kReply;
    return false;
  }
  return EndOk(parser, s);
}

// --- responses ---------------------------------------------------------------------------

// The first packet of a reply (or of a further result of one).
bool ReplyStart(Parser* parser, MysqlState* s) {
  uint64_t length = s->offset;
  uint8_t c = s->head[0];
  if (c == 0x00) {
    // COM_STMT_PREPARE_OK: 12 bytes (13 with MySQL's metadata flag), a reserved zero at 9.
    // An OK packet of that length would need an info or session-state text that no server
    // sends with a zero there.
    if ((length == 12 || length == 13) && s->head[9] == 0 && !s->long_packet) {
      s->stmt = Little32(s->head + 1);
      s->columns = Little16(s->head + 5);
      uint64_t params = Little16(s->head + 7);
      if (params > 0) {
        s->phase = kPrepareParams;
        s->left = params;
      } else if (s->columns > 0) {
        s->phase = kPrepareColumns;
        s->left = s->columns;
      } else {
        return EndPrepared(parser, s);
      }
      return false;
    }
    if (length < 7) return Broken(parser);
    return ResultEnd(parser, s);
  }
  if (c == 0xff) {
    if (length < 3) return Broken(parser);
    if (Little16(s->head + 1) == 0xffff) {  // MariaDB progress report: the query goes on
      s->check_seq = false;
      return false;
    }
    return EndError(parser, s);
  }
  if (c == 0xfb) return EndStatus(parser, s, "local infile");
  if (c == 0xfe) {
    if (length < 9 && !s->long_packet) return ResultEnd(parser, s);
    // An auth switch request answering COM_CHANGE_USER.
    s->phase = kAuthentication;
    return EndStatus(parser, s, "auth switch");
  }
  if (c == 0x03 && length > 4 && s->head[1] == 'd' && s->head[2] == 'e' && s->head[3] == 'f') {
    s->phase = kFieldList;  // a column definition with no count before it
    return false;
  }
  uint8_t size = LenencSize(c);
  bool count = size != 0 && !s->long_packet &&
               (length == size || (length == size + 1u && s->head[size] <= 1));
  if (!count) return EndStatus(parser, s, "ok");  // COM_STATISTICS' string
  uint64_t columns = LenencValue(s->head);
  if (columns == 0) return Broken(parser);
  s->has_rows = true;
  bool metadata = length == size || s->head[size] == 1;
  s->left = columns;
  s->phase = metadata ? kColumnDefs : kAfterDefs;
  return false;
}

// A packet that should be the EOF after a prepare reply's definitions, assumed before the
// connection showed its mode. If it is not one, the reply ended at the packet before,
// unreported; this packet starts the next reply.
bool PrepareEof(Parser* parser, MysqlState* s, bool then_columns) {
  if (IsEof(s) && s->offset == 5) {
    s->eof_mode = kEofPackets;
    if (!then_columns) return EndPrepared(parser, s);
    s->phase = kPrepareColumns;
    s->left = s->columns;
    return false;
  }
  s->eof_mode = kEofDeprecated;
  if (then_columns) {  // this is the first column definition
    s->left = s->columns - 1;
    if (s->left == 0) return EndPrepared(parser, s);
    s->phase = kPrepareColumns;
    return false;
  }
  s->phase = kReply;
  return ReplyStart(parser, s);
}

// The first reply after authentication, read as a plain packet, when the client chose
// CLIENT_COMPRESS (which only the request parser sees): a compressed packet's header has
// 3 more bytes, the uncompressed length, then either zlib data (0x78 and the FLG byte of
// one of zlib's four levels) or, when that length is 0, the plain packets as they
// are (the first with sequence id 1). A plain reply's first packet does not look so: read
// as an OK, the second case would be one with 256 or more warnings.
bool LooksCompressed(const MysqlState* s) {
  if (s->head_length < 7) return false;
  const uint8_t* h = s->head;
  bool zlib = h[3] == 0x78 && (h[4] == 0x01 || h[4] == 0x5e || h[4] == 0x9c || h[4] == 0xda);
  if (zlib && Little24(h) > 0) return true;
  // The compressed length counts the plain packets, their headers included.
  return h[0] == 0 && h[1] == 0 && h[2] == 0 && h[6] == 1 && 4 + Little24(h + 3) <= s->offset;
}

bool ResponsePacket(Parser* parser, MysqlState* s) {
  if (s->offset == 0) return Broken(parser);  // no response packet is empty
  uint8_t c = s->head[0];
  switch (s->phase) {
    case kGreeting:
      if (c == 0x0a) {
        ClearAttributes(parser);
        AddAttribute(parser, "mysql.server", s->value, s->value_length);
        s->phase = kAuthentication;
        return true;
      }
      if (c == 0xff && s->offset >= 3) return EndError(parser, s);
      return Broken(parser);

    case kAuthentication:
      switch (c) {
        case 0x00:
          if (s->offset < 7) return Broken(parser);
          s->first_reply = true;
          return EndOk(parser, s);
        case 0xff:
          if (s->offset < 3) return Broken(parser);
          return EndError(parser, s);
        case 0xfe:
          return EndStatus(parser, s, "auth switch");
        case 0x01:
          // caching_sha2_password's fast_auth_success: the OK follows without waiting.
          if (s->offset == 2 && s->head[1] == 3) return false;
          return EndStatus(parser, s, "auth more data");
        default:
          return Broken(parser);
      }

    case kReply:
      if (s->first_reply) {
        s->first_reply = false;
        if (LooksCompressed(s)) {
          s->phase = kOpaque;
          return false;
        }
      }
      return ReplyStart(parser, s);

    case kColumnDefs:
      if (c == 0xff) return EndError(parser, s);
      if (--s->left == 0) s->phase = kAfterDefs;
      return false;

    case kAfterDefs:
      if (IsEof(s) && s->offset == 5) {
        s->eof_mode = kEofPackets;
        // A cursor was opened (COM_STMT_EXECUTE): its rows come with COM_STMT_FETCH.
        if (Little16(s->head + 3) & kStatusCursorExists) return EndOk(parser, s);
        s->phase = kRows;
        return false;
      }
      if (c != 0xff) s->eof_mode = kEofDeprecated;
      s->phase = kRows;
      [[fallthrough]];

    case kRows:
      if (c == 0xfe && !s->long_packet) return ResultEnd(parser, s);
      if (c == 0xff) return EndError(parser, s);
      ++s->rows;
      return false;

    case kFieldList:
      if (c == 0xfe && !s->long_packet) return EndOk(parser, s);
      if (c == 0xff) return EndError(parser, s);
      return false;

    case kPrepareParams:
      if (--s->left > 0) return false;
      if (s->eof_mode == kEofDeprecated) {
        if (s->columns == 0) return EndPrepared(parser, s);
        s->phase = kPrepareColumns;
        s->left = s->columns;
        return false;
      }
      s->phase = kPrepareParamsEof;
      s->check_seq = false;  // PrepareEof sorts out a next reply
      return false;

    case kPrepareParamsEof:
      return PrepareEof(parser, s, s->columns > 0);

    case kPrepareColumns:
      if (--s->left > 0) return false;
      if (s->eof_mode == kEofDeprecated) return EndPrepared(parser, s);
      s->phase = kPrepareColumnsEof;
      s->check_seq = false;
      return false;

    case kPrepareColumnsEof:
      return PrepareEof(parser, s, false);

    default:
      return Broken(parser);
  }
}

// --- requests ----------------------------------------------------------------------------

bool RequestPacket(Parser* parser, MysqlState* s) {
  if (s->phase == kHandshakeResponse) {
    if (s->offset < 4) return Broken(parser);
    uint32_t caps = s->head_length >= 4 ? Little32(s->head) : Little16(s->head);
    bool protocol41 = (caps & kClientProtocol41) != 0;
    ClearAttributes(parser);
    if (protocol41 && s->offset == kSslRequestLength && (caps & kClientSsl)) {
      AddAttribute(parser, "mysql.command", "SSLRequest", 10);
      s->phase = kOpaque;
      return true;
    }
    if (protocol41 && s->offset <= kSslRequestLength) return Broken(parser);
    s->compress = (caps & kClientCompress) != 0;
    s->query_attributes = protocol41 && (caps & kClientQueryAttributes) != 0;
    AddAttribute(parser, "mysql.command", "Handshake", 9);
    if (protocol41) AddAttribute(parser, "mysql.user", s->value, s->value_length);
    s->phase = kAuthAnswers;
    return true;
  }
  if (s->first_seq != 0) {
    if (s->phase == kAuthAnswers || s->last_command == kComChangeUser) {
      ClearAttributes(parser);
      AddAttribute(parser, "mysql.command", "Auth", 4);
      return true;
    }
    // The file of LOAD DATA LOCAL INFILE, up to its empty packet.
    if (s->offset > 0) {
      s->check_seq = true;
      s->next_seq = uint8_t(s->seq + 1);
      return false;
    }
    ClearAttributes(parser);
    AddAttribute(parser, "mysql.command", "InfileData", 10);
    return true;
  }
  s->phase = kCommands;
  if (s->offset == 0) return Broken(parser);
  uint8_t command = s->head[0];
  const char* name = CommandName(command);
  if (name == nullptr) return Broken(parser);
  s->last_command = command;
  // No reply comes: the bytes belong to the next command's message.
  if (command == kComStmtClose || command == kComStmtSendLongData) return false;
  ClearAttributes(parser);
  AddAttribute(parser, "mysql.command", name, strlen(name));
  switch (command) {
    case kComQuery:
    case kComStmtPrepare:
      if (s->capture_from > 0) AddAttribute(parser, "sql", s->value, s->value_length);
      break;
    case kComInitDb:
      AddAttribute(parser, "mysql.db", s->value, s->value_length);
      break;
    case kComStmtExecute:
    case kComStmtReset:
    case kComStmtFetch:
    case kComStmtBulkExecute:
      if (s->head_length >= 5) AddDecimalAttribute(parser, "mysql.stmt", Little32(s->head + 1));
      break;
    default:
      break;
  }
  return true;
}

// The logical packet's first byte c has arrived: what text of it to keep.
void StartCapture(const Parser* parser, MysqlState* s, uint8_t c) {
  s->capture = kCaptureNone;
  s->capture_from = 0;
  s->capture_check_attributes = false;
  if (parser->direction == Direction::kRequest) {
    if (s->phase == kHandshakeResponse) {
      s->capture = kCaptureToNul;  // the user name, after the 32 bytes of fixed fields
      s->capture_from = 32;
    } else if (s->first_seq == 0 && (c == kComQuery || c == kComStmtPrepare || c == kComInitDb)) {
      s->capture = kCaptureToEnd;
      s->capture_from = 1;
      if (c == kComQuery && s->query_attributes) {
        // MySQL 8's query attributes precede the text: "00 01" when there are none.
        s->capture_from = 3;
        s->capture_check_attributes = true;
      }
    }
  } else if (s->phase == kGreeting && c == 0x0a) {
    s->capture = kCaptureToNul;  // the server version
    s->capture_from = 1;
  }
  s->value_length = 0;
}

// One payload byte the parser looks at.
void PayloadByte(const Parser* parser, MysqlState* s, uint8_t c) {
  if (s->offset == 0) StartCapture(parser, s, c);
  if (s->head_length < kHeadBytes) s->head[s->head_length++] = c;
  if (s->capture != kCaptureNone && s->offset >= s->capture_from) {
    if (s->capture_check_attributes && s->offset == s->capture_from &&
        !(s->head[1] == 0 && s->head[2] == 1)) {
      s->capture = kCaptureNone;
      s->capture_from = 0;  // no sql attribute at all
    } else if ((s->capture == kCaptureToNul && c == 0) || s->value_length == kMaxValue) {
      s->capture = kCaptureNone;
    } else {
      s->value[s->value_length++] = char(c);
    }
  }
  ++s->offset;
}

// A packet header has been read; false if the stream stops being readable here.
bool PacketHeader(Parser* parser, MysqlState* s) {
  uint32_t length = Little24(s->header);
  s->seq = s->header[3];
  if (!s->continued) {
    // After an SSLRequest the server's next bytes are a TLS record (type 22, version 3.x),
    // whose header read as a packet would claim over 64 KiB, more than any authentication
    // packet.
    if (parser->direction == Direction::kResponse && s->phase == kAuthentication &&
        s->header[0] == 0x16 && s->header[1] == 0x03 && s->header[2] <= 0x04) {
      s->phase = kOpaque;
      return false;
    }
    if (parser->direction == Direction::kRequest && s->compress && s->seq == 0 &&
        s->phase == kAuthAnswers) {
      s->phase = kOpaque;
      return false;
    }
  }
  // A greeting is about a hundred bytes, authentication packets a few hundred (an RSA key)
  // and a handshake response's connection attributes at most 64 KiB: a longer one is not
  // this protocol (an HTTP start line read as a header claims megabytes).
  if (!s->continued && length > kMaxHandshake &&
      (s->phase == kGreeting || s->phase == kAuthentication || s->phase == kHandshakeResponse)) {
    parser->failed = true;
    return false;
  }
  if (s->check_seq && s->seq != s->next_seq) {
    parser->failed = true;
    return false;
  }
  s->check_seq = false;
  if (!s->continued) {
    s->first_seq = s->seq;
    s->offset = 0;
    s->head_length = 0;
    s->long_packet = false;
    s->capture = kCaptureNone;
    s->capture_from = 0;
  }
  s->remaining = length;
  return true;
}

}  // namespace

void InitMysql(Parser* parser) {
  MysqlState* s = InitState<MysqlState>(parser);
  s->phase = parser->direction == Direction::kRequest ? kHandshakeResponse : kGreeting;
}

size_t ConsumeMysql(Parser* parser, const uint8_t* data, size_t length, bool* ended) {
  MysqlState* s = StateOf<MysqlState>(parser);
  size_t i = 0;
  while (i < length) {
    if (s->phase == kOpaque) return length;
    if (!s->in_payload) {
      while (s->have < 4 && i < length) s->header[s->have++] = data[i++];
      if (s->have < 4) return length;
      s->have = 0;
      if (!PacketHeader(parser, s)) {
        if (parser->failed) return Fail(parser, length, ended);
        return length;  // opaque from here
      }
      s->in_payload = true;
    }
    // Byte by byte while keeping the head or text, counted in bulk after.
    while (s->remaining > 0 && i < length &&
           (s->head_length < kHeadBytes || s->capture != kCaptureNone)) {
      PayloadByte(parser, s, data[i++]);
      --s->remaining;
    }
    size_t take = Min(length - i, s->remaining);
    s->remaining -= uint32_t(take);
    s->offset += take;
    i += take;
    if (s->remaining > 0) continue;

    // A physical packet has been read.
    s->in_payload = false;
    if (Little24(s->header) == kMaxPacket) {
      s->continued = true;
      s->long_packet = true;
      s->check_seq = true;
      s->next_seq = uint8_t(s->seq + 1);
      continue;
    }
    s->continued = false;
    bool end = parser->direction == Direction::kRequest ? RequestPacket(parser, s)
                                                        : ResponsePacket(parser, s);
    if (parser->failed) return Fail(parser, length, ended);
    if (end) {
      s->check_seq = false;
      *ended = true;
      return i;
    }
    if (parser->direction == Direction::kResponse && s->phase != kPrepareParamsEof &&
        s->phase != kPrepareColumnsEof && !(s->head[0] == 0xff && s->phase == kReply)) {
      s->check_seq = true;
      s->next_seq = uint8_t(s->seq + 1);
    }
  }
  return length;
}

}  // namespace weft::capture::protocols::internal
