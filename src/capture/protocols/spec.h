// The `weft capture --protocols SPEC` language, read by the CLI (which reports a mistake)
// and by libweft-preload.so (which gets SPEC as WEFT_PROTOCOLS and skips what it cannot
// use, since a traced program must never be stopped by it). One reader for both, so they
// cannot disagree about what a spec means.
//
//   SPEC  := ITEM ("," ITEM)*
//   ITEM  := "auto" | "none" | PROTO "=" VALUE
//   VALUE := PORT (1..65535) | "/" PATH | "@" NAME (abstract) | "auto" | PROGRAM
//
// PROTO is a name from descriptor.h other than "none". A VALUE that starts with a digit
// is a port, and must be one; a path (with its '/' or '@') has at most kMaxSpecPath bytes.
//
// Like the processors, this is compiled into the preload library: no allocation, no
// exceptions, no C++ library. Items point into the spec; nothing is copied.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "capture/protocols/protocol.h"

namespace weft::capture::protocols {

inline constexpr size_t kMaxSpecPath = 108;  // sizeof(sockaddr_un::sun_path)

enum class SpecItemKind : uint8_t {
  kAuto,     // "auto": the descriptor table's auto ports, and detection of every protocol
  kNone,     // "none": adds nothing
  kPort,     // PROTO=PORT: streams and datagrams to or from the port
  kPath,     // PROTO=/path or PROTO=@name: Unix sockets at the path ('@': abstract)
  kDetect,   // PROTO=auto: Detect may pick PROTO
  kProgram,  // PROTO=PROGRAM: every stream of the program whose executable's basename it is
};

enum class SpecError : uint8_t {
  kOk,
  kNoValue,          // an item that is not auto or none and has no "=VALUE"
  kUnknownProtocol,  // PROTO names no protocol, or names "none"
  kBadPort,          // a VALUE starting with a digit that is not a port in 1..65535
  kPathTooLong,      // a path over kMaxSpecPath bytes
};

// One line for people: "expected auto, none, or PROTOCOL=PORT|/PATH|@NAME|auto|PROGRAM".
const char* SpecErrorText(SpecError error);

struct SpecItem {
  const char* text;  // the item as written (not terminated)
  size_t length;
  SpecItemKind kind;
  Protocol protocol;   // kPort, kPath, kDetect, kProgram
  size_t name_length;  // bytes of text before '=' (the protocol's name), or `length`
  uint16_t port;       // kPort
  const char* value;   // kPath (with its '/' or '@'), kProgram; points into text
  size_t value_length;
};

// Walks the items of a spec in order. The spec must outlive the reader and its items.
class SpecReader {
 public:
  SpecReader(const char* spec, size_t length) : spec_(spec), length_(length) {}

  // Reads the next item into *item: false when there are no more. On a malformed item,
  // *error says what is wrong and item->text, length and name_length still locate it;
  // reading may go on past it. An empty spec has no items; an empty item is kNoValue.
  bool Next(SpecItem* item, SpecError* error);

 private:
  const char* spec_;
  size_t length_;
  size_t offset_ = 0;
  bool done_ = false;
};

}  // namespace weft::capture::protocols
