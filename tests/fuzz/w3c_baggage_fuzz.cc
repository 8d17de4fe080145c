// libFuzzer target for the W3C baggage header: any bytes parse (malformed members skipped),
// serialize to a header within the limits that parses with nothing skipped and serializes
// to itself; when the input was within the limits, no member is lost. Pivot's member, if
// any, either deserializes or is refused with a status.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "pivot/w3c_baggage.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "w3c_baggage_fuzz: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using weft::pivot::W3cBaggage;
  std::string_view header(reinterpret_cast<const char*>(data), size);
  W3cBaggage first = W3cBaggage::Parse(header);
  std::string once = first.Serialize();
  Check(once.size() <= weft::pivot::kW3cMaxBytes, "header over 8192 bytes");
  W3cBaggage second = W3cBaggage::Parse(once);
  Check(second.malformed() == 0, "serialized header has a malformed member");
  Check(second.size() + (second.has_pivot() ? 1 : 0) <= weft::pivot::kW3cMaxMembers,
        "header over 64 members");
  Check(second.Serialize() == once, "serialized header is not stable");
  size_t bytes = 0;
  for (size_t i = 0; i < first.size(); ++i) bytes += first.member(i).size() + 1;
  if (first.size() <= weft::pivot::kW3cMaxMembers && bytes <= weft::pivot::kW3cMaxBytes) {
    Check(second.size() == first.size(), "members lost within the limits");
    for (size_t i = 0; i < first.size(); ++i) {
      Check(second.member(i) == first.member(i), "a member changed");
      Check(second.key(i) == first.key(i) && second.value(i) == first.value(i), "a key changed");
    }
  }
  Check(!second.has_pivot() || first.has_pivot(), "Pivot's member appeared");
  weft::pivot::Baggage b;
  if (first.GetPivot(b).ok()) (void)b.Decode();
  return 0;
}
