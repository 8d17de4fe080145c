// libFuzzer target for the event log reader (capture/event_log.h): any input either
// decodes or gives a one-line error, never a crash or an out-of-bounds read.
//
// Checksums would stop the fuzzer at the first block, so each input is decoded twice: as
// it is, and with the header and every block's checksums recomputed where the framing is
// in bounds, which lets mutations reach the records.
#include <xxhash.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "capture/event_log.h"

namespace {

namespace w = weft::capture::wire;

uint32_t Sum32(const uint8_t* p, size_t n) { return static_cast<uint32_t>(XXH3_64bits(p, n)); }

void FixSums(std::vector<uint8_t>& b) {
  if (b.size() < sizeof(w::FileHeader)) return;
  uint32_t header_size;
  std::memcpy(&header_size, b.data() + offsetof(w::FileHeader, header_size), 4);
  if (header_size < sizeof(w::FileHeader) || header_size > b.size()) return;
  std::memset(b.data() + offsetof(w::FileHeader, header_checksum), 0, 4);
  uint32_t sum = Sum32(b.data(), header_size);
  std::memcpy(b.data() + offsetof(w::FileHeader, header_checksum), &sum, 4);
  size_t at = header_size;
  while (at + sizeof(w::BlockHeader) <= b.size()) {
    w::BlockHeader h;
    std::memcpy(&h, b.data() + at, sizeof h);
    h.magic = w::kBlockMagic;
    h.payload_size &= ~7u;
    size_t end = at + sizeof h + h.payload_size;
    if (end <= b.size()) h.payload_checksum = Sum32(b.data() + at + sizeof h, h.payload_size);
    h.header_checksum = Sum32(reinterpret_cast<const uint8_t*>(&h), 28);
    std::memcpy(b.data() + at, &h, sizeof h);
    at = end;
  }
}

void CheckDecode(const std::vector<uint8_t>& b) {
  auto log = weft::capture::DecodeEventLog({b.data(), b.size()}, "fuzz.wev");
  if (!log.ok()) return;
  for (const weft::capture::Event& e : log->events) (void)weft::capture::FormatEvent(*log, e);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  CheckDecode(bytes);
  FixSums(bytes);
  CheckDecode(bytes);
  return 0;
}
