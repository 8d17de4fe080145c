// Hand-built capture files for the pcap import's tests and fuzz seeds: a classic pcap
// header, then one frame per call, of any link type the import reads.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace weft::import::testing {

struct Endpoint {
  bool ipv6 = false;
  std::array<uint8_t, 16> ip{};
  uint16_t port = 0;
};
inline Endpoint V4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint16_t port) {
  Endpoint e;
  e.ip = {a, b, c, d};
  e.port = port;
  return e;
}
inline Endpoint V6(uint8_t last, uint16_t port) {  // fd00::<last>
  Endpoint e;
  e.ipv6 = true;
  e.ip[0] = 0xfd;
  e.ip[15] = last;
  e.port = port;
  return e;
}

// LINKTYPE_ values as written in a file's header.
inline constexpr uint32_t kEthernet = 1, kNull = 0, kLoop = 108, kRaw = 101, kSll = 113,
                          kSll2 = 276;
inline constexpr uint8_t kFin = 0x01, kSyn = 0x02, kRst = 0x04, kPsh = 0x08, kAck = 0x10;

class PcapWriter {
 public:
  // `swapped_null`: DLT_NULL's family in the other byte order (a big-endian capturer's).
  explicit PcapWriter(uint32_t link_type, bool swapped_null = false)
      : link_(link_type), swapped_null_(swapped_null) {
    Put32(0xa1b2c3d4);
    Put16(2);
    Put16(4);
    Put32(0);
    Put32(0);
    Put32(262144);
    Put32(link_type);
  }

  void Tcp(const Endpoint& src, const Endpoint& dst, uint32_t seq, uint32_t ack, uint8_t flags,
           std::string_view payload, int64_t time_us) {
    std::string t;
    Add16(t, src.port);
    Add16(t, dst.port);
    Add32(t, seq);
    Add32(t, ack);
    t.push_back(char(5 << 4));
    t.push_back(char(flags));
    Add16(t, 65535);
    Add16(t, 0);
    Add16(t, 0);
    t.append(payload);
    Frame(src, dst, 6, t, time_us);
  }
  void Udp(const Endpoint& src, const Endpoint& dst, std::string_view payload, int64_t time_us) {
    std::string u;
    Add16(u, src.port);
    Add16(u, dst.port);
    Add16(u, uint16_t(8 + payload.size()));
    Add16(u, 0);
    u.append(payload);
    Frame(src, dst, 17, u, time_us);
  }
  // A record holding `frame` as it is.
  void Record(std::string_view frame, int64_t time_us) {
    Put32(uint32_t(time_us / 1000000));
    Put32(uint32_t(time_us % 1000000));
    Put32(uint32_t(frame.size()));
    Put32(uint32_t(frame.size()));
    out_.append(frame);
  }
  // The IP packet (header and `transport`) that Tcp and Udp wrap in the link header.
  static std::string IpPacket(const Endpoint& src, const Endpoint& dst, uint8_t protocol,
                              std::string_view transport) {
    std::string ip;
    if (src.ipv6) {
      Add32(ip, 0x60000000);
      Add16(ip, uint16_t(transport.size()));
      ip.push_back(char(protocol));
      ip.push_back(64);
      ip.append(reinterpret_cast<const char*>(src.ip.data()), 16);
      ip.append(reinterpret_cast<const char*>(dst.ip.data()), 16);
    } else {
      ip.push_back(0x45);
      ip.push_back(0);
      Add16(ip, uint16_t(20 + transport.size()));
      Add32(ip, 0x40000000);  // id 0, don't fragment
      ip.push_back(64);
      ip.push_back(char(protocol));
      Add16(ip, 0);
      ip.append(reinterpret_cast<const char*>(src.ip.data()), 4);
      ip.append(reinterpret_cast<const char*>(dst.ip.data()), 4);
    }
    ip.append(transport);
    return ip;
  }
  std::string LinkHeader(bool ipv6) const {
    std::string h;
    uint16_t ether = ipv6 ? 0x86dd : 0x0800;
    switch (link_) {
      case kEthernet:
        h.assign(12, '\x02');
        Add16(h, ether);
        break;
      case kSll:
        Add16(h, 0);  // packet type: to us
        Add16(h, 1);
        Add16(h, 6);
        h.append(8, '\x02');
        Add16(h, ether);
        break;
      case kSll2:
        Add16(h, ether);
        Add16(h, 0);
        Add32(h, 1);  // interface index
        Add16(h, 1);
        h.push_back(0);
        h.push_back(6);
        h.append(8, '\x02');
        break;
      case kNull: {
        uint32_t family = ipv6 ? 10 : 2;
        if (swapped_null_) {
          Add32(h, family);
        } else {  // little-endian, as an x86 host writes it
          for (int i = 0; i < 4; ++i) h.push_back(char(family >> (8 * i)));
        }
        break;
      }
      case kLoop:
        Add32(h, ipv6 ? 24 : 2);
        break;
      default:
        break;
    }
    return h;
  }
  const std::string& bytes() const { return out_; }

 private:
  void Frame(const Endpoint& src, const Endpoint& dst, uint8_t protocol, std::string_view transport,
             int64_t time_us) {
    Record(LinkHeader(src.ipv6) + IpPacket(src, dst, protocol, transport), time_us);
  }
  static void Add16(std::string& s, uint16_t v) {
    s.push_back(char(v >> 8));
    s.push_back(char(v));
  }
  static void Add32(std::string& s, uint32_t v) {
    Add16(s, uint16_t(v >> 16));
    Add16(s, uint16_t(v));
  }
  void Put16(uint16_t v) {  // the file's own fields: little-endian
    out_.push_back(char(v));
    out_.push_back(char(v >> 8));
  }
  void Put32(uint32_t v) {
    Put16(uint16_t(v));
    Put16(uint16_t(v >> 16));
  }

  uint32_t link_;
  bool swapped_null_;
  std::string out_;
};

// A client and a server talking over TCP: tracks both sides' sequence numbers.
class TcpConversation {
 public:
  TcpConversation(PcapWriter* w, Endpoint client, Endpoint server)
      : w_(w), client_(client), server_(server) {}
  void Handshake(int64_t time_us) {
    w_->Tcp(client_, server_, client_seq_ - 1, 0, kSyn, "", time_us);
    w_->Tcp(server_, client_, server_seq_ - 1, client_seq_, kSyn | kAck, "", time_us + 1);
    w_->Tcp(client_, server_, client_seq_, server_seq_, kAck, "", time_us + 2);
  }
  // Sends `payload` in one segment from the client (`from_client`) or the server.
  void Send(bool from_client, std::string_view payload, int64_t time_us) {
    uint32_t& seq = from_client ? client_seq_ : server_seq_;
    uint32_t ack = from_client ? server_seq_ : client_seq_;
    w_->Tcp(from_client ? client_ : server_, from_client ? server_ : client_, seq, ack, kAck | kPsh,
            payload, time_us);
    seq += uint32_t(payload.size());
  }
  void Close(int64_t time_us) {
    w_->Tcp(client_, server_, client_seq_, server_seq_, kFin | kAck, "", time_us);
    w_->Tcp(server_, client_, server_seq_, client_seq_ + 1, kFin | kAck, "", time_us + 1);
    w_->Tcp(client_, server_, client_seq_ + 1, server_seq_ + 1, kAck, "", time_us + 2);
  }
  uint32_t client_seq() const { return client_seq_; }
  uint32_t server_seq() const { return server_seq_; }
  void Advance(bool client, uint32_t n) { (client ? client_seq_ : server_seq_) += n; }

 private:
  PcapWriter* w_;
  Endpoint client_, server_;
  // Near the top of the sequence space, so that every conversation wraps.
  uint32_t client_seq_ = 0xfffffff0u, server_seq_ = 0x7ffffff0u;
};

}  // namespace weft::import::testing
