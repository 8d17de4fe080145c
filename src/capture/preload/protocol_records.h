// The records of what the protocol processors found in a program's streams
// (protocol_streams.cc feeds them; docs/formats.md has the records): a message's end as a
// boundary record with the processor's attributes, an HTTP/2 frame's end as 48 bytes of
// numbers, and HTTP/2's header blocks as the compressed bytes. Internal to
// libweft-preload.so.
#pragma once

#include <stdint.h>

#include "capture/protocols/protocol.h"

namespace weft_preload {

// The end of the message `parser` just reported, moved by a call with these times; it
// ends at stream `offset`. `sent`: the program sent it; `request`: it went from the side
// that connected. (LogBoundary, for any attributes, is in runtime.h.)
void LogEnd(int fd, const weft::capture::protocols::Parser* parser, bool sent, bool request,
            int64_t entry, int64_t exit, uint64_t offset);

// The HTTP/2 header-block bytes the parser just took of `bytes` (those of the last Consume,
// the first at stream `offset`), if any, in pieces of at most wire::kMaxHeaderBlockPiece.
void LogHeaderBlockPieces(int fd, const weft::capture::protocols::Parser* parser, bool sent,
                          bool request, int64_t entry, uint64_t offset, const uint8_t* bytes);
// Every feed asks after each Consume; only HTTP/2 has header blocks, so the others pay a
// comparison, not a call.
inline void LogHeaderBlock(int fd, const weft::capture::protocols::Parser* parser, bool sent,
                           bool request, int64_t entry, uint64_t offset, const uint8_t* bytes) {
  if (parser->protocol == weft::capture::protocols::kHttp2)
    LogHeaderBlockPieces(fd, parser, sent, request, entry, offset, bytes);
}

}  // namespace weft_preload
