// Writes a synthetic packet capture for bench/pcap_import: Ethernet, IPv4, many HTTP/1.1
// keep-alive connections at once, each a run of requests (200-700 bytes) and responses
// (1 KB to 64 KB, Content-Length, sent as 1448-byte segments, the MSS of a 1500-byte MTU),
// an ACK for every second segment, connections interleaved packet by packet as a busy
// server's would be. Streamed to the file: a gigabyte never sits in memory.
//   pcap_synth OUT.pcap [--bytes N] [--connections N] [--seed N]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

struct Writer {
  FILE* f;
  std::vector<uint8_t> frame;
  uint64_t written = 0;
  void Put(const void* p, size_t n) {
    std::fwrite(p, 1, n, f);
    written += n;
  }
  void Put32(uint32_t v) { Put(&v, 4); }  // the file's own fields: host (little) endian
};

void Be16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}
void Be32(uint8_t* p, uint32_t v) {
  Be16(p, uint16_t(v >> 16));
  Be16(p + 2, uint16_t(v));
}

struct Conn {
  uint32_t client_ip, server_ip;
  uint16_t client_port, server_port;
  uint32_t cseq, sseq;
  std::string pending_request;  // bytes of the request still to send
  size_t response_left = 0;     // body bytes of the response still to send
  std::string response_head;
  int segments_unacked = 0;
  bool opened = false;
};

void Packet(Writer& w, uint64_t time_ns, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport,
            uint32_t seq, uint32_t ack, uint8_t flags, const char* payload, size_t length) {
  size_t total = 14 + 20 + 20 + length;
  w.frame.assign(total, 0);
  uint8_t* p = w.frame.data();
  std::memset(p, 0x02, 12);
  Be16(p + 12, 0x0800);
  uint8_t* ip = p + 14;
  ip[0] = 0x45;
  Be16(ip + 2, uint16_t(20 + 20 + length));
  Be16(ip + 6, 0x4000);
  ip[8] = 64;
  ip[9] = 6;
  Be32(ip + 12, src);
  Be32(ip + 16, dst);
  uint8_t* tcp = ip + 20;
  Be16(tcp, sport);
  Be16(tcp + 2, dport);
  Be32(tcp + 4, seq);
  Be32(tcp + 8, ack);
  tcp[12] = 5 << 4;
  tcp[13] = flags;
  Be16(tcp + 14, 65535);
  if (length > 0) std::memcpy(tcp + 20, payload, length);
  w.Put32(uint32_t(time_ns / 1000000000));
  w.Put32(uint32_t(time_ns % 1000000000 / 1000));
  w.Put32(uint32_t(total));
  w.Put32(uint32_t(total));
  w.Put(p, total);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: pcap_synth OUT.pcap [--bytes N] [--connections N] [--seed N]\n");
    return 2;
  }
  uint64_t target = 1'000'000'000;
  int connections = 256;
  unsigned seed = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--bytes") == 0) target = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--connections") == 0) connections = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--seed") == 0) seed = unsigned(std::atoi(argv[i + 1]));
  }
  Writer w{std::fopen(argv[1], "wb"), {}};
  if (w.f == nullptr) {
    std::perror(argv[1]);
    return 1;
  }
  static char buffer[1 << 20];
  std::setvbuf(w.f, buffer, _IOFBF, sizeof buffer);
  // Classic pcap header: microsecond timestamps, Ethernet.
  w.Put32(0xa1b2c3d4);
  uint16_t version[2] = {2, 4};
  w.Put(version, 4);
  w.Put32(0);
  w.Put32(0);
  w.Put32(262144);
  w.Put32(1);

  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> request_size(200, 700), response_kb(1, 64);
  std::vector<Conn> conns(static_cast<size_t>(connections));
  for (int i = 0; i < connections; ++i) {
    Conn& c = conns[size_t(i)];
    c.client_ip = 0x0a000001 + uint32_t(i % 200);
    c.server_ip = 0x0a010001 + uint32_t(i % 4);
    c.client_port = uint16_t(32768 + i);
    c.server_port = 80;
    c.cseq = uint32_t(rng());
    c.sseq = uint32_t(rng());
  }
  static const std::string body(65536, 'b');
  uint64_t now = 1'700'000'000'000'000'000ull;
  uint64_t packets = 0;
  while (w.written < target) {
    for (Conn& c : conns) {
      now += 1000;  // 1 µs between packets: about 10 Gbit/s of 1500-byte frames
      ++packets;
      if (!c.opened) {
        Packet(w, now, c.client_ip, c.server_ip, c.client_port, c.server_port, c.cseq - 1, 0, 0x02,
               nullptr, 0);
        Packet(w, now + 10, c.server_ip, c.client_ip, c.server_port, c.client_port, c.sseq - 1,
               c.cseq, 0x12, nullptr, 0);
        c.opened = true;
        continue;
      }
      if (c.response_left == 0 && c.response_head.empty()) {
        // The next request: one segment.
        std::string path(size_t(request_size(rng)) - 60, 'p');
        std::string request = "GET /" + path + " HTTP/1.1\r\nHost: bench\r\nAccept: */*\r\n\r\n";
        Packet(w, now, c.client_ip, c.server_ip, c.client_port, c.server_port, c.cseq, c.sseq, 0x18,
               request.data(), request.size());
        c.cseq += uint32_t(request.size());
        c.response_left = size_t(response_kb(rng)) * 1024;
        c.response_head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                          std::to_string(c.response_left) + "\r\n\r\n";
        continue;
      }
      // The next response segment: the head (first time) and body up to the MSS.
      std::string segment = c.response_head;
      size_t body_bytes = std::min(c.response_left, size_t(1448) - segment.size());
      segment.append(body, 0, body_bytes);
      c.response_head.clear();
      c.response_left -= body_bytes;
      Packet(w, now, c.server_ip, c.client_ip, c.server_port, c.client_port, c.sseq, c.cseq, 0x18,
             segment.data(), segment.size());
      c.sseq += uint32_t(segment.size());
      if (++c.segments_unacked == 2 || c.response_left == 0) {
        Packet(w, now + 5, c.client_ip, c.server_ip, c.client_port, c.server_port, c.cseq, c.sseq,
               0x10, nullptr, 0);
        c.segments_unacked = 0;
      }
    }
  }
  std::fclose(w.f);
  std::fprintf(stderr, "pcap_synth: %s: %llu bytes, %d connections\n", argv[1],
               static_cast<unsigned long long>(w.written), connections);
  return 0;
}
