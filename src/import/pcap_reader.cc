// Classic pcap read in place (pcap_reader.h).
#include "import/pcap_reader.h"

#include <fmt/format.h>
#include <pcap/dlt.h>

#include <cstring>

namespace weft::import {
namespace {

constexpr uint32_t kMicros = 0xa1b2c3d4, kNanos = 0xa1b23c4d;
// libpcap's largest snap length (MAXIMUM_SNAPLEN): a record claiming more is damage.
constexpr uint32_t kMaxCaptured = 262144;
constexpr uint32_t kLinktypeRaw = 101;  // LINKTYPE_RAW, which libpcap reports as DLT_RAW

uint32_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

bool ClassicPcapReader::Recognises(std::string_view bytes) {
  if (bytes.size() < 4) return false;
  uint32_t magic = Load32(bytes.data());
  return magic == kMicros || magic == kNanos || magic == __builtin_bswap32(kMicros) ||
         magic == __builtin_bswap32(kNanos);
}

ClassicPcapReader::ClassicPcapReader(std::string_view bytes) : bytes_(bytes) {
  uint32_t magic = Load32(bytes.data());
  swapped_ = magic == __builtin_bswap32(kMicros) || magic == __builtin_bswap32(kNanos);
  nanoseconds_ = magic == kNanos || magic == __builtin_bswap32(kNanos);
  if (bytes.size() < 24) {
    error_ = fmt::format("truncated dump file; tried to read 24 file header bytes, only got {}",
                         bytes.size());
    offset_ = bytes.size();
    return;
  }
  // The low 16 bits are the link type; the upper ones say how many FCS bytes frames carry.
  uint32_t link = Field(20) & 0xffff;
  link_type_ = link == kLinktypeRaw ? DLT_RAW : int(link);
}

uint32_t ClassicPcapReader::Field(size_t at) const {
  uint32_t v = Load32(bytes_.data() + at);
  return swapped_ ? __builtin_bswap32(v) : v;
}

bool ClassicPcapReader::Next(PcapPacket* packet) {
  if (!error_.empty() || offset_ >= bytes_.size()) return false;
  size_t left = bytes_.size() - offset_;
  if (left < 16) {
    error_ = fmt::format("truncated dump file; tried to read 16 header bytes, only got {}", left);
    return false;
  }
  uint32_t seconds = Field(offset_), fraction = Field(offset_ + 4), captured = Field(offset_ + 8);
  if (captured > kMaxCaptured) {
    error_ = fmt::format("invalid packet capture length {}, bigger than maximum of {}", captured,
                         kMaxCaptured);
    return false;
  }
  if (left - 16 < captured) {
    error_ = fmt::format("truncated dump file; tried to read {} captured bytes, only got {}",
                         captured, left - 16);
    return false;
  }
  packet->time =
      TimeNs(seconds) * 1'000'000'000 + (nanoseconds_ ? TimeNs(fraction) : TimeNs(fraction) * 1000);
  packet->data = reinterpret_cast<const uint8_t*>(bytes_.data() + offset_ + 16);
  packet->captured = captured;
  offset_ += 16 + captured;
  return true;
}

}  // namespace weft::import
