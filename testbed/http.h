// The testbed's HTTP/1.1 option (protocol = "http"): the same fields as a frame, carried by
// HTTP/1.1 messages so that protocol processors have a real protocol to parse.
//
// A request is "POST /r<type> HTTP/1.1" with Host; a reply "HTTP/1.1 200 OK" (500 for an
// error reply). Both carry "X-Weft-Ids: <type> <request type> <request id> <call id>
// <parent call>" (hex ids) and a body of the configured size, framed by Content-Length or
// by chunked transfer coding; "Connection: close" when the sender will close the
// connection after the message (RFC 9112 §9.6).
//
// The parser follows RFC 9112 as far as the testbed needs: header names are
// case-insensitive, values lose their surrounding whitespace, chunked bodies may carry
// chunk extensions and trailers. It rejects what would make the message's length
// ambiguous (both Content-Length and Transfer-Encoding, differing Content-Lengths, a
// transfer coding other than chunked) and responses framed by the end of the connection,
// which the testbed never sends.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "testbed/wire.h"

namespace weft::testbed {

inline constexpr size_t kMaxHttpHead = 16384;  // start line and headers, or trailers
inline constexpr uint32_t kHttpChunk = 1024;   // the size of chunks the testbed sends

// The message for `frame` with a body of `payload_bytes`; chunked bodies come in chunks of
// at most kHttpChunk bytes. frame.close adds "Connection: close".
std::string EncodeHttp(const Frame& frame, uint32_t payload_bytes, bool chunked = false);

// Adds the header field "name: value" to the HTTP message `message` (after its start line).
void AddHttpHeader(std::string* message, std::string_view name, std::string_view value);

// Takes one whole HTTP/1.1 message from the front of `buf`: true when one was taken (and
// `*wire_bytes` bytes removed), false when `buf` holds only part of one, an error, with
// what is wrong, when it is malformed (`buf` is then left as it was).
Result<bool> TakeHttp(std::string& buf, Frame* frame, size_t* wire_bytes);

}  // namespace weft::testbed
