// libFuzzer target for the .weft reader: any input either decodes or gives an error, never
// a crash or an out-of-bounds read; what decodes re-encodes to a file that decodes again.
//
// Checksums would stop the fuzzer at the section table (it cannot forge XXH3), so each
// input is decoded twice: as it is, and with its file size and checksums recomputed, which
// lets mutations reach the string tables, the columns and the trace rules behind them.
#include <xxhash.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "trace/binary_format.h"

namespace {

template <typename T>
T Get(const std::vector<uint8_t>& b, size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

template <typename T>
void Put(std::vector<uint8_t>& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}

// Makes the size and checksum fields of `b` agree with its contents, where the header
// and table entries are in bounds (docs/formats.md has the layout).
void FixSums(std::vector<uint8_t>& b) {
  const size_t size = b.size();
  if (size < 64) return;
  Put<uint64_t>(b, 40, size);
  const uint64_t header_size = Get<uint32_t>(b, 12);
  const uint64_t table_end = header_size + 32 * uint64_t(Get<uint32_t>(b, 32));
  if (header_size < 64 || table_end > size) return;
  for (uint64_t e = header_size; e + 32 <= table_end; e += 32) {
    uint64_t offset = Get<uint64_t>(b, e + 8);
    uint64_t length = Get<uint64_t>(b, e + 16);
    if (offset <= size && length <= size - offset) {
      Put<uint64_t>(b, e + 24, XXH3_64bits(b.data() + offset, length));
    }
  }
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, b.data(), 56);
  XXH3_64bits_update(state, b.data() + 64, table_end - 64);
  Put<uint64_t>(b, 56, XXH3_64bits_digest(state));
  XXH3_freeState(state);
}

void CheckDecode(std::span<const uint8_t> data) {
  auto trace = weft::DecodeBinaryTrace(data, "fuzz.weft");
  if (!trace.ok()) return;
  std::string encoded = weft::EncodeBinaryTrace(*trace);
  auto again = weft::DecodeBinaryTrace(
      {reinterpret_cast<const uint8_t*>(encoded.data()), encoded.size()}, "encoded.weft");
  if (!again.ok()) {
    std::fprintf(stderr, "re-encoded trace does not decode: %s\n",
                 again.status().message().c_str());
    std::abort();
  }
  if (again->size() != trace->size() || weft::EncodeBinaryTrace(*again) != encoded) {
    std::fprintf(stderr, "re-encoding changed the trace\n");
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  CheckDecode({data, size});
  std::vector<uint8_t> fixed(data, data + size);
  FixSums(fixed);
  CheckDecode(fixed);
  return 0;
}
