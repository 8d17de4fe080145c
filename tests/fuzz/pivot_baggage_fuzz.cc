// libFuzzer target for the live baggage's binary form: any bytes are either refused (by
// Deserialize or by the lazy decode, leaving an empty baggage) or decode to a baggage
// whose serialized form is stable: it deserializes again, and serializes to itself. A
// baggage never decoded forwards its bytes unchanged, and a reply (which leaves out what
// the baggage arrived with) decodes. Split and join of what was decoded never crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "pivot/baggage.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "pivot_baggage_fuzz: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  weft::pivot::Baggage b;
  if (!b.Deserialize(bytes).ok()) {
    Check(b.Serialize().empty(), "a refused baggage is not empty");
    return 0;
  }
  Check(b.Serialize() == bytes, "forwarding changed the bytes");
  if (!b.Decode().ok()) {
    Check(b.tuples() == 0 && b.Serialize().empty(),
          "a baggage that failed to decode kept something");
    return 0;
  }
  size_t tuples = b.tuples();
  std::string once = b.Serialize();
  weft::pivot::Baggage again;
  Check(again.Deserialize(once).ok(), "re-serialized form refused");
  Check(again.Decode().ok(), "re-serialized form does not decode");
  Check(again.tuples() == tuples, "tuples changed in a round trip");
  Check(again.Serialize() == once, "serialized form is not stable");

  // A reply leaves out the frozen instances the baggage arrived with: it decodes, and
  // carries no more tuples than the baggage holds.
  weft::pivot::Baggage replied;
  Check(replied.Deserialize(b.SerializeReply()).ok() && replied.Decode().ok(),
        "a reply does not decode");
  Check(replied.tuples() <= tuples, "a reply carries more than the baggage");

  // Split, pack on both sides, join: never a crash, nothing of this side lost. (Crafted
  // bytes can name a frozen instance as a later event will, so the join may dedupe.)
  weft::pivot::Baggage branch = again.Split();
  weft::query::Value v = weft::query::Value::Int(1);
  again.Contents().Active(0, 1, 0).Append(&v, nullptr, 1, 0);
  branch.Contents().Active(0, 1, 0).Append(&v, nullptr, 1, 0);
  weft::pivot::Baggage back;
  (void)back.Deserialize(branch.Serialize());
  again.Join(std::move(back));
  Check(again.tuples() >= tuples + 1 && again.tuples() <= tuples + 2, "split and join miscounted");
  return 0;
}
