// One captured frame -> the IP, TCP or UDP fields weft reads from it. No allocation, no
// copies: the payload points into the frame, which the caller keeps alive.
//
// Link types: Ethernet (with 802.1Q/802.1ad tags), Linux cooked capture v1 and v2
// (`tcpdump -i any`), BSD loopback (DLT_NULL, host byte order, and DLT_LOOP, network byte
// order), and raw IP. Network: IPv4 and IPv6 (hop-by-hop, routing and destination-options
// extension headers are walked). IP fragments are not reassembled: a fragment is reported
// as such and skipped.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft::import {

// What a frame turned out to be.
enum class PacketClass : uint8_t {
  kTcp,
  kUdp,
  kOther,      // not IP, or IP carrying neither TCP nor UDP (ICMP, ARP, ...)
  kFragment,   // an IP fragment: not reassembled
  kMalformed,  // a header that contradicts itself or the frame; `problem` says which
};

inline constexpr uint8_t kTcpFin = 0x01, kTcpSyn = 0x02, kTcpRst = 0x04, kTcpAck = 0x10;

struct DecodedPacket {
  PacketClass kind = PacketClass::kOther;
  bool ipv6 = false;
  uint8_t src_ip[16] = {}, dst_ip[16] = {};  // IPv4 uses the first 4 bytes
  uint16_t src_port = 0, dst_port = 0;
  uint8_t tcp_flags = 0;
  uint32_t seq = 0, ack = 0;
  const uint8_t* payload = nullptr;
  uint32_t payload_length = 0;       // bytes captured of the TCP or UDP payload
  uint32_t wire_payload_length = 0;  // bytes of it on the wire (per the IP or UDP header)
  // The frame was cut short by the capture's snap length: the segment carried more payload
  // than was captured (`payload_length` is what there is).
  bool payload_truncated = false;
  const char* problem = nullptr;  // kMalformed: "IPv4 header length 3 words", ...
};

// Whether DecodePacket reads frames of this DLT_ link type.
bool LinkTypeSupported(int link_type);

// Decodes `captured` bytes of one frame of `link_type` (a supported one).
void DecodePacket(int link_type, const uint8_t* frame, size_t captured, DecodedPacket* out);

}  // namespace weft::import
