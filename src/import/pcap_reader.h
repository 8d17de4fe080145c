// The classic pcap file format (the one tcpdump -w writes), read in place from memory: no
// copy of a packet, no system call per packet. A file in any other format (pcapng) is left
// to libpcap by the caller.
//
// The format (pcap-savefile(5)): a 24-byte header (magic 0xa1b2c3d4 for microsecond
// timestamps, 0xa1b23c4d for nanosecond ones, in the writer's byte order; version; snap
// length; link type), then per packet a 16-byte header (seconds, micro- or nanoseconds,
// captured length, length on the wire) and the captured bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/time.h"

namespace weft::import {

struct PcapPacket {
  TimeNs time = 0;
  const uint8_t* data = nullptr;
  uint32_t captured = 0;
};

class ClassicPcapReader {
 public:
  // True if `bytes` start with a classic pcap header (either byte order, either precision).
  static bool Recognises(std::string_view bytes);

  // `bytes` must outlive the reader and start with a header Recognises accepts.
  explicit ClassicPcapReader(std::string_view bytes);

  // The file's link type as a DLT_ value (pcap/dlt.h), as libpcap reports it.
  int link_type() const { return link_type_; }

  // The next packet; false at the end of the file or at damage, which error() then
  // describes as libpcap would ("truncated dump file; ...").
  bool Next(PcapPacket* packet);
  const std::string& error() const { return error_; }

 private:
  uint32_t Field(size_t at) const;

  std::string_view bytes_;
  size_t offset_ = 24;
  bool swapped_ = false;
  bool nanoseconds_ = false;
  int link_type_ = 0;
  std::string error_;
};

}  // namespace weft::import
