// libFuzzer: a sequence of HTTP/2 header blocks through one HPACK decoder
// (reconcile/http2_headers.h). The input is blocks, each a 2-byte little-endian length and
// its bytes; the first byte, when there is one, sets the table size limit. Decoding must
// never crash, hang or allocate without bound, and a broken decoder must stay broken.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "reconcile/http2_headers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::reconcile::Http2HeaderDecoder decoder;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (!in.empty()) {
    (void)decoder.SetTableSizeLimit(uint32_t(uint8_t(in[0])) * 64);
    in.remove_prefix(1);
  }
  std::vector<weft::reconcile::HeaderField> fields;
  bool broken = decoder.broken();
  while (in.size() >= 2) {
    size_t n = uint8_t(in[0]) | size_t(uint8_t(in[1])) << 8;
    in.remove_prefix(2);
    if (n > in.size()) n = in.size();
    weft::Status s = decoder.Decode(in.substr(0, n), &fields);
    if (broken && s.ok()) __builtin_trap();  // a broken decoder decoded again
    broken = decoder.broken();
    in.remove_prefix(n);
  }
  return 0;
}
