// HTTP/2 header blocks back to header fields (RFC 9113 §4.3, RFC 7541), offline: capture
// logs each HEADERS frame's block as it went by, still compressed, and reconcile decodes a
// direction's blocks here, in the order they were sent. Decoding at capture time would
// put a dynamic table per connection and per direction into every traced program; here
// it costs the traced program nothing.
//
// HPACK is stateful: each block may add to a dynamic table that later blocks refer to, so
// one decoder serves one direction of one connection, fed every block in order. A block
// that does not decode (damaged, or one before it was lost) leaves the table unknown:
// the decoder is broken from then on and refuses every later block, rather than guess
// names from a table that is no longer the sender's.
//
// The decoding is libnghttp2's inflater (Debian's libnghttp2), with bounds of our own on
// what one block may expand to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

struct nghttp2_hd_inflater;

namespace weft::reconcile {

struct HeaderField {
  std::string name, value;
  bool operator==(const HeaderField&) const = default;
};

// Limits on one decoded block, past which it is refused (and the decoder broken): the
// bytes of names and values (SETTINGS_MAX_HEADER_LIST_SIZE's measure, RFC 9113 §6.5.2,
// less the 32 per field) and the number of fields.
inline constexpr size_t kMaxHeaderListBytes = 256 * 1024;
inline constexpr size_t kMaxHeaderFields = 4096;

class Http2HeaderDecoder {
 public:
  Http2HeaderDecoder();
  ~Http2HeaderDecoder();
  Http2HeaderDecoder(Http2HeaderDecoder&& other) noexcept;
  Http2HeaderDecoder& operator=(Http2HeaderDecoder&& other) noexcept;
  Http2HeaderDecoder(const Http2HeaderDecoder&) = delete;
  Http2HeaderDecoder& operator=(const Http2HeaderDecoder&) = delete;

  // The receiver's SETTINGS_HEADER_TABLE_SIZE (default 4,096): the largest dynamic table
  // the sender may use, and so the largest size update a block may ask for.
  Status SetTableSizeLimit(uint32_t bytes);

  // Decodes one whole header block (a HEADERS frame's fragment and its CONTINUATIONs',
  // concatenated) into `fields`, replacing what was there.
  Status Decode(std::string_view block, std::vector<HeaderField>* fields);

  bool broken() const { return inflater_ == nullptr; }

 private:
  Status Break(Status why);
  nghttp2_hd_inflater* inflater_ = nullptr;
};

}  // namespace weft::reconcile
