// libFuzzer target for the event log reader (capture/event_log.h): any input either
// decodes or gives a one-line error, never a crash or an out-of-bounds read.
//
// Checksums would stop the fuzzer at the first block or chunk, so each input is decoded
// twice: as it is, and with the header's and every block's (version 1) or chunk's
// (version 2) checksums recomputed where the framing is in bounds, which lets mutations
// reach the records.
#include <xxhash.h>

#include <algorithm>
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
  uint32_t version, chunk_size;
  std::memcpy(&version, b.data() + offsetof(w::FileHeader, version), 4);
  std::memcpy(&chunk_size, b.data() + offsetof(w::FileHeader, block_size), 4);
  size_t at = header_size;
  if (version == w::kVersion) {
    if (chunk_size < w::kFirstChunkSize || chunk_size % 8 != 0) return;
    for (uint64_t k = 0; at < b.size(); at += w::ChunkSize(chunk_size, header_size, k++)) {
      size_t end = std::min<uint64_t>(b.size(), at + w::ChunkSize(chunk_size, header_size, k));
      for (size_t segment = at; segment + sizeof(w::SegmentHeader) <= end;) {
        w::SegmentHeader h;
        std::memcpy(&h, b.data() + segment, sizeof h);
        if (h.magic == 0 && h.tid == 0) break;  // not committed: the chunk ends
        h.magic = w::kSegmentMagic;
        h.header_checksum = Sum32(reinterpret_cast<const uint8_t*>(&h), 16);
        h.sealed_size &= ~7u;
        size_t records = segment + sizeof h;
        bool sealed = h.sealed_size != 0 && records + h.sealed_size <= end;
        if (sealed) h.sealed_checksum = Sum32(b.data() + records, h.sealed_size);
        std::memcpy(b.data() + segment, &h, sizeof h);
        if (!sealed) break;
        segment = records + h.sealed_size;
      }
    }
    return;
  }
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
