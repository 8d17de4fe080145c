// libFuzzer target for the --protocols reader (capture/protocols/spec.h), which reads a
// user's spec in the CLI and WEFT_PROTOCOLS in every traced process. Checks that items tile
// the spec (their texts joined by commas give it back), that every pointer stays inside
// it, and that an item read without error means what its kind says: a port in 1..65535, a
// path starting with '/' or '@' of at most kMaxSpecPath bytes, a protocol other than none.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "capture/protocols/spec.h"

namespace {

namespace p = weft::capture::protocols;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "%s\n", what);
  std::abort();
}

bool Inside(const char* at, size_t length, const char* begin, size_t size) {
  return at >= begin && length <= size && size_t(at - begin) <= size - length;
}

void CheckItem(const p::SpecItem& item, p::SpecError error) {
  if (error != p::SpecError::kOk) return;
  switch (item.kind) {
    case p::SpecItemKind::kAuto:
    case p::SpecItemKind::kNone:
      return;
    case p::SpecItemKind::kPort:
      if (item.port == 0) Fail("port 0 read as a port");
      break;
    case p::SpecItemKind::kPath:
      if (item.value_length == 0 || item.value_length > p::kMaxSpecPath ||
          (item.value[0] != '/' && item.value[0] != '@'))
        Fail("bad path read as a path");
      break;
    case p::SpecItemKind::kDetect:
    case p::SpecItemKind::kProgram:
      if (item.value_length == 0) Fail("empty value read");
      break;
  }
  if (item.protocol == p::kNone || item.protocol >= p::kProtocolCount) Fail("bad protocol");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* spec = reinterpret_cast<const char*>(data);
  p::SpecReader reader(spec, size);
  p::SpecItem item;
  p::SpecError error;
  std::string joined;
  size_t items = 0;
  while (reader.Next(&item, &error)) {
    if (!Inside(item.text, item.length, spec, size)) Fail("item outside the spec");
    if (item.name_length > item.length) Fail("name longer than its item");
    if (error == p::SpecError::kOk && item.value != nullptr &&
        !Inside(item.value, item.value_length, item.text, item.length))
      Fail("value outside its item");
    CheckItem(item, error);
    if (items++ > 0) joined += ',';
    joined.append(item.text, item.length);
    if (items > size + 1) Fail("more items than commas");
  }
  if (joined != std::string(spec, size)) Fail("items do not tile the spec");
  return 0;
}
