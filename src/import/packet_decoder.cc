// Frame decoding (packet_decoder.h). Every length is checked against the bytes captured
// before it is used: the frames come from a file anyone may have written.
#include "import/packet_decoder.h"

#include <pcap/dlt.h>

#include <cstring>

namespace weft::import {
namespace {

constexpr uint16_t kEtherIpv4 = 0x0800, kEtherIpv6 = 0x86dd, kEtherVlan = 0x8100,
                   kEtherQinQ = 0x88a8;
constexpr uint8_t kIpTcp = 6, kIpUdp = 17;

uint16_t Be16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
uint32_t Be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

void Malformed(DecodedPacket* out, const char* problem) {
  out->kind = PacketClass::kMalformed;
  out->problem = problem;
}

// The transport header at `p` (`captured` bytes of it present, `length` on the wire per the
// IP header).
void DecodeTransport(uint8_t protocol, const uint8_t* p, size_t captured, size_t length,
                     DecodedPacket* out) {
  if (protocol == kIpTcp) {
    if (captured < 20) {
      if (length >= 20) return Malformed(out, "TCP header cut short by the snap length");
      return Malformed(out, "TCP header longer than the IP payload");
    }
    size_t header = size_t(p[12] >> 4) * 4;
    if (header < 20) return Malformed(out, "TCP data offset below 5 words");
    if (header > length) return Malformed(out, "TCP header longer than the IP payload");
    if (header > captured) return Malformed(out, "TCP options cut short by the snap length");
    out->kind = PacketClass::kTcp;
    out->src_port = Be16(p);
    out->dst_port = Be16(p + 2);
    out->seq = Be32(p + 4);
    out->ack = Be32(p + 8);
    out->tcp_flags = p[13];
    out->payload = p + header;
    out->payload_length = uint32_t(captured - header);
    out->wire_payload_length = uint32_t(length - header);
    out->payload_truncated = captured < length;
    return;
  }
  if (protocol == kIpUdp) {
    if (captured < 8) {
      if (length >= 8) return Malformed(out, "UDP header cut short by the snap length");
      return Malformed(out, "UDP header longer than the IP payload");
    }
    size_t udp_length = Be16(p + 4);
    if (udp_length < 8 || udp_length > length) return Malformed(out, "UDP length out of range");
    out->kind = PacketClass::kUdp;
    out->src_port = Be16(p);
    out->dst_port = Be16(p + 2);
    out->payload = p + 8;
    size_t have = captured < udp_length ? captured : udp_length;
    out->payload_length = uint32_t(have - 8);
    out->wire_payload_length = uint32_t(udp_length - 8);
    out->payload_truncated = have < udp_length;
    return;
  }
  out->kind = PacketClass::kOther;
}

void DecodeIpv4(const uint8_t* p, size_t captured, DecodedPacket* out) {
  if (captured < 20) return Malformed(out, "IPv4 header cut short");
  if ((p[0] >> 4) != 4) return Malformed(out, "IP version is not 4 in an IPv4 frame");
  size_t header = size_t(p[0] & 0xf) * 4;
  size_t total = Be16(p + 2);
  // TCP segmentation offload: a capture on the sending host may show a total length of 0
  // for a super-segment; the frame's own length is all there is to go by.
  if (total == 0) total = captured;
  if (header < 20) return Malformed(out, "IPv4 header length below 5 words");
  if (total < header) return Malformed(out, "IPv4 total length below its header length");
  if (header > captured) return Malformed(out, "IPv4 options cut short");
  size_t on_wire = total;
  uint16_t fragment = Be16(p + 6);
  std::memcpy(out->src_ip, p + 12, 4);
  std::memcpy(out->dst_ip, p + 16, 4);
  if ((fragment & 0x3fff) != 0) {  // more fragments, or an offset
    out->kind = PacketClass::kFragment;
    return;
  }
  size_t have = captured < on_wire ? captured : on_wire;
  DecodeTransport(p[9], p + header, have - header, on_wire - header, out);
}

void DecodeIpv6(const uint8_t* p, size_t captured, DecodedPacket* out) {
  if (captured < 40) return Malformed(out, "IPv6 header cut short");
  if ((p[0] >> 4) != 6) return Malformed(out, "IP version is not 6 in an IPv6 frame");
  out->ipv6 = true;
  std::memcpy(out->src_ip, p + 8, 16);
  std::memcpy(out->dst_ip, p + 24, 16);
  size_t payload = Be16(p + 4);
  if (payload == 0) return Malformed(out, "IPv6 jumbogram (payload length 0)");
  size_t have = captured - 40 < payload ? captured - 40 : payload;
  const uint8_t* q = p + 40;
  uint8_t next = p[6];
  // Extension headers weft can step over; a fragment header means a fragment.
  for (int hops = 0; hops < 16; ++hops) {
    if (next == 0 || next == 43 || next == 60) {
      if (have < 8) return Malformed(out, "IPv6 extension header cut short");
      size_t length = (size_t(q[1]) + 1) * 8;
      if (length > have) return Malformed(out, "IPv6 extension header cut short");
      next = q[0];
      q += length;
      have -= length;
      payload -= length;
      continue;
    }
    if (next == 44) {
      out->kind = PacketClass::kFragment;
      return;
    }
    return DecodeTransport(next, q, have, payload, out);
  }
  out->kind = PacketClass::kOther;
}

// The network layer by EtherType.
void DecodeNetwork(uint16_t ether_type, const uint8_t* p, size_t captured, DecodedPacket* out) {
  if (ether_type == kEtherIpv4) return DecodeIpv4(p, captured, out);
  if (ether_type == kEtherIpv6) return DecodeIpv6(p, captured, out);
  out->kind = PacketClass::kOther;
}

// BSD address families of IPv6: Linux 10, the BSDs 24, 28 and 30 (as libpcap's
// documentation of DLT_NULL lists them).
bool IsInet6Family(uint32_t family) {
  return family == 10 || family == 24 || family == 28 || family == 30;
}

}  // namespace

bool LinkTypeSupported(int link_type) {
  switch (link_type) {
    case DLT_EN10MB:
    case DLT_LINUX_SLL:
    case DLT_LINUX_SLL2:
    case DLT_NULL:
    case DLT_LOOP:
    case DLT_RAW:
    case DLT_IPV4:
    case DLT_IPV6:
      return true;
    default:
      return false;
  }
}

void DecodePacket(int link_type, const uint8_t* frame, size_t captured, DecodedPacket* out) {
  *out = DecodedPacket{};
  switch (link_type) {
    case DLT_EN10MB: {
      if (captured < 14) return Malformed(out, "Ethernet header cut short");
      size_t at = 12;
      uint16_t type = Be16(frame + at);
      for (int tags = 0; (type == kEtherVlan || type == kEtherQinQ) && tags < 4; ++tags) {
        at += 4;
        if (captured < at + 2) return Malformed(out, "VLAN tag cut short");
        type = Be16(frame + at);
      }
      return DecodeNetwork(type, frame + at + 2, captured - at - 2, out);
    }
    case DLT_LINUX_SLL:
      if (captured < 16) return Malformed(out, "Linux cooked header cut short");
      return DecodeNetwork(Be16(frame + 14), frame + 16, captured - 16, out);
    case DLT_LINUX_SLL2:
      if (captured < 20) return Malformed(out, "Linux cooked v2 header cut short");
      return DecodeNetwork(Be16(frame), frame + 20, captured - 20, out);
    case DLT_NULL:
    case DLT_LOOP: {
      if (captured < 4) return Malformed(out, "loopback header cut short");
      uint32_t family = Be32(frame);
      // DLT_NULL is in the byte order of the host that captured: a family is small, so
      // whichever order gives a small number is the right one.
      if (link_type == DLT_NULL && family > 0xffff) {
        family = uint32_t(frame[3]) << 24 | uint32_t(frame[2]) << 16 | uint32_t(frame[1]) << 8 |
                 frame[0];
      }
      if (family == 2) return DecodeIpv4(frame + 4, captured - 4, out);
      if (IsInet6Family(family)) return DecodeIpv6(frame + 4, captured - 4, out);
      out->kind = PacketClass::kOther;
      return;
    }
    case DLT_RAW:
    case DLT_IPV4:
    case DLT_IPV6:
      if (captured < 1) return Malformed(out, "empty raw IP frame");
      if ((frame[0] >> 4) == 4) return DecodeIpv4(frame, captured, out);
      if ((frame[0] >> 4) == 6) return DecodeIpv6(frame, captured, out);
      return Malformed(out, "raw IP frame of neither version 4 nor 6");
    default:
      out->kind = PacketClass::kOther;
  }
}

}  // namespace weft::import
