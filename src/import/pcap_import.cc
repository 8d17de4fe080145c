// Packet capture -> message trace (pcap_import.h).
#include "import/pcap_import.h"

#include <absl/container/flat_hash_map.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <pcap/pcap.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

#include "capture/protocols/descriptor.h"
#include "capture/protocols/spec.h"
#include "import/message_cutter.h"
#include "import/packet_decoder.h"
#include "import/pcap_reader.h"
#include "import/tcp_connection.h"
#include "import/tcp_reassembly.h"

namespace weft::import {
namespace {

// Which processor reads a connection: the --protocols spec, read as capture reads it.
struct ProtocolSelection {
  std::vector<std::pair<uint16_t, protocols::Protocol>> ports;
  uint32_t detect = 0;  // bit p: Detect may pick protocol p

  protocols::Protocol ForPorts(uint16_t server, uint16_t client) const {
    for (const auto& [port, protocol] : ports) {
      if (port == server || port == client) return protocol;
    }
    return protocols::kNone;
  }
};

Result<ProtocolSelection> ParseSelection(const std::string& spec) {
  ProtocolSelection selection;
  protocols::SpecReader reader(spec.data(), spec.size());
  protocols::SpecItem item;
  protocols::SpecError error;
  while (reader.Next(&item, &error)) {
    std::string_view text(item.text, item.length);
    if (error != protocols::SpecError::kOk) {
      return Status::InvalidArgument("--protocols: '{}': {}", text,
                                     protocols::SpecErrorText(error));
    }
    switch (item.kind) {
      case protocols::SpecItemKind::kAuto:
        for (const protocols::ProtocolDescriptor& d : protocols::kProtocolTable) {
          if (d.auto_port != 0) selection.ports.emplace_back(d.auto_port, d.protocol);
        }
        selection.detect = ~0u;
        break;
      case protocols::SpecItemKind::kNone:
        break;
      case protocols::SpecItemKind::kDetect:
        selection.detect |= 1u << item.protocol;
        break;
      case protocols::SpecItemKind::kPort:
        selection.ports.emplace_back(item.port, item.protocol);
        break;
      case protocols::SpecItemKind::kPath:
      case protocols::SpecItemKind::kProgram:
        return Status::InvalidArgument(
            "--protocols: '{}': a capture file has no Unix paths or programs (use PROTO=PORT)",
            text);
    }
  }
  // Ports named explicitly come before auto's, as in capture (later rules only add).
  return selection;
}

// An address and port as text: "10.0.0.1", "10.0.0.1:80", "[::1]:80".
std::string IpText(const uint8_t* ip, bool ipv6) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(ipv6 ? AF_INET6 : AF_INET, ip, text, sizeof text);
  return text;
}
std::string EndpointText(const uint8_t* ip, bool ipv6, uint16_t port) {
  return ipv6 ? fmt::format("[{}]:{}", IpText(ip, ipv6), port)
              : fmt::format("{}:{}", IpText(ip, ipv6), port);
}

// A flow's two endpoints, the lower one first, so that both directions find it.
struct FlowKey {
  std::array<uint8_t, 16> ip_a{}, ip_b{};
  uint16_t port_a = 0, port_b = 0;
  bool ipv6 = false;
  bool operator==(const FlowKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const FlowKey& k) {
    return H::combine(std::move(h), k.ip_a, k.ip_b, k.port_a, k.port_b, k.ipv6);
  }
};

FlowKey KeyOf(const DecodedPacket& p) {
  FlowKey key;
  key.ipv6 = p.ipv6;
  size_t n = p.ipv6 ? 16 : 4;
  std::array<uint8_t, 16> src{}, dst{};
  std::memcpy(src.data(), p.src_ip, n);
  std::memcpy(dst.data(), p.dst_ip, n);
  bool src_first = std::tie(src, p.src_port) < std::tie(dst, p.dst_port);
  key.ip_a = src_first ? src : dst;
  key.ip_b = src_first ? dst : src;
  key.port_a = src_first ? p.src_port : p.dst_port;
  key.port_b = src_first ? p.dst_port : p.src_port;
  return key;
}

class Importer {
 public:
  Importer(std::string_view name, const PcapImportOptions& options,
           const ProtocolSelection& selection, PcapImportSummary* summary)
      : name_(name),
        options_(options),
        selection_(selection),
        summary_(summary),
        output_(&builder_, summary) {}

  // Reads every packet libpcap (pcapng) or the classic reader gives.
  Result<Trace> Run(pcap_t* pcap);
  Result<Trace> Run(ClassicPcapReader& reader);

 private:
  Status CheckLinkType(int link) const;
  void Frame(int link, const uint8_t* data, uint32_t captured, TimeNs time);
  void Damaged(std::string_view what);  // the file is damaged at the next packet
  Result<Trace> Finish();
  void Packet(const DecodedPacket& p, TimeNs time);
  void Tcp(const DecodedPacket& p, TimeNs time);
  void Udp(const DecodedPacket& p, TimeNs time);
  FlowEnds Ends(const DecodedPacket& p, bool sender_is_client);
  TcpConnection* Open(const FlowKey& key, const DecodedPacket& p, bool sender_is_client,
                      TimeNs syn_time);
  // Closes connection `index` and frees it: its flow stays in open_ as ended, so that late
  // packets are not taken for a new connection.
  void End(uint32_t index) {
    connections_[index]->Close();
    connections_[index].reset();
  }

  std::string name_;
  const PcapImportOptions& options_;
  const ProtocolSelection& selection_;
  PcapImportSummary* summary_;
  TraceBuilder builder_;
  MessageOutput output_;  // where every message goes, TCP and UDP
  ReassemblyCounters counters_;
  uint64_t packet_number_ = 0;
  DecodedPacket packet_;
  const char* first_malformed_ = nullptr;
  uint64_t first_malformed_at_ = 0;
  std::vector<std::unique_ptr<TcpConnection>> connections_;
  absl::flat_hash_map<FlowKey, uint32_t> open_;  // flow -> index in connections_
  struct UdpFlow {
    uint32_t number;
    FlowEnds ends;
    protocols::Protocol protocol;
    uint32_t sent[2];
  };
  std::vector<UdpFlow> udp_flows_;
  absl::flat_hash_map<FlowKey, uint32_t> udp_open_;
};

FlowEnds Importer::Ends(const DecodedPacket& p, bool sender_is_client) {
  FlowEnds ends;
  size_t n = p.ipv6 ? 16 : 4;
  int s = sender_is_client ? 0 : 1;
  ends.ip[s] = {};
  ends.ip[1 - s] = {};
  std::memcpy(ends.ip[s].data(), p.src_ip, n);
  std::memcpy(ends.ip[1 - s].data(), p.dst_ip, n);
  ends.port[s] = p.src_port;
  ends.port[1 - s] = p.dst_port;
  for (int i = 0; i < 2; ++i) {
    std::string ip = IpText(ends.ip[i].data(), p.ipv6);
    std::string endpoint = EndpointText(ends.ip[i].data(), p.ipv6, ends.port[i]);
    bool by_port = options_.nodes == NodeNaming::kIpPort && i == 1;
    ends.node[i] = builder_.Node(by_port ? endpoint : ip);
    ends.endpoint[i] = builder_.String(endpoint);
  }
  return ends;
}

TcpConnection* Importer::Open(const FlowKey& key, const DecodedPacket& p, bool sender_is_client,
                              TimeNs syn_time) {
  FlowEnds ends = Ends(p, sender_is_client);
  auto c = std::make_unique<TcpConnection>(&output_, uint32_t(connections_.size() + 1), ends,
                                           syn_time, &counters_);
  protocols::Protocol by_port = selection_.ForPorts(ends.port[1], ends.port[0]);
  if (by_port != protocols::kNone) {
    c->StartProtocol(by_port);
  } else {
    c->DetectFromBytes(selection_.detect);
  }
  ++summary_->connections;
  open_[key] = uint32_t(connections_.size());
  connections_.push_back(std::move(c));
  return connections_.back().get();
}

void Importer::Tcp(const DecodedPacket& p, TimeNs time) {
  ++summary_->tcp_packets;
  FlowKey key = KeyOf(p);
  bool syn = (p.tcp_flags & kTcpSyn) != 0, ack = (p.tcp_flags & kTcpAck) != 0;
  TcpConnection* c = nullptr;
  auto it = open_.find(key);
  bool ended = it != open_.end() && connections_[it->second] == nullptr;
  if (it != open_.end()) c = connections_[it->second].get();
  // A SYN without ACK on a connection already carrying bytes (or over) opens a new one: the
  // port was reused.
  if (syn && !ack &&
      (ended ||
       (c != nullptr && (c->stream(0).next_offset() > 0 || c->stream(1).next_offset() > 0)))) {
    if (c != nullptr) End(it->second);
    c = nullptr;
    ended = false;
  }
  if (ended) return;  // a late packet of a connection that ended (the last ACK, a retransmission)
  if (c == nullptr) {
    if (syn) {
      c = Open(key, p, !ack, !ack ? time : kNoTime);
      if (ack) ++summary_->without_handshake;  // the SYN was missed; the SYN-ACK says who serves
    } else {
      if ((p.tcp_flags & kTcpRst) != 0 && p.payload_length == 0) return;
      // Neither handshake packet was captured: ephemeral ports are the high ones.
      c = Open(key, p, p.src_port > p.dst_port, kNoTime);
      c->MarkMidstream();
      ++summary_->without_handshake;
    }
  }
  const FlowEnds& ends = c->ends();
  size_t n = p.ipv6 ? 16 : 4;
  int d = p.src_port == ends.port[0] && std::memcmp(p.src_ip, ends.ip[0].data(), n) == 0 ? 0 : 1;
  if (syn) c->stream(d).Syn(p.seq);
  if (ack) c->stream(1 - d).PeerAck(p.ack, c->sink(1 - d));
  if (p.payload_truncated) {
    ++summary_->cut_short;
    c->stream(d).Segment(p.seq, nullptr, 0, time, false, c->sink(d));
  } else {
    c->stream(d).Segment(syn ? p.seq + 1 : p.seq, p.payload, p.payload_length, time,
                         (p.tcp_flags & kTcpFin) != 0, c->sink(d));
  }
  if ((p.tcp_flags & kTcpRst) != 0 || (c->stream(0).finished() && c->stream(1).finished())) {
    End(open_[key]);
  }
}

void Importer::Udp(const DecodedPacket& p, TimeNs time) {
  ++summary_->udp_packets;
  FlowKey key = KeyOf(p);
  auto [it, inserted] = udp_open_.try_emplace(key, uint32_t(udp_flows_.size()));
  if (inserted) {
    // The first datagram's sender is the client (it asked; the other side answers).
    FlowEnds ends = Ends(p, true);
    protocols::Protocol protocol = selection_.ForPorts(ends.port[1], ends.port[0]);
    udp_flows_.push_back({uint32_t(udp_flows_.size() + 1), ends, protocol, {0, 0}});
    ++summary_->udp_flows;
  }
  UdpFlow& flow = udp_flows_[it->second];
  size_t n = p.ipv6 ? 16 : 4;
  int d = p.src_port == flow.ends.port[0] && std::memcmp(p.src_ip, flow.ends.ip[0].data(), n) == 0
              ? 0
              : 1;
  uint32_t count = ++flow.sent[d];
  MessageRecord record;
  record.kind = d == 0 ? MessageKind::kCall : MessageKind::kReturn;
  record.send_time = time;
  record.sender = flow.ends.node[d];
  record.receiver = flow.ends.node[1 - d];
  record.sender_endpoint = flow.ends.endpoint[d];
  record.receiver_endpoint = flow.ends.endpoint[1 - d];
  record.bytes = p.wire_payload_length;
  protocols::Parser parser;
  const bool parsed = flow.protocol != protocols::kNone && !p.payload_truncated;
  std::string_view witness;
  if (parsed) {
    protocols::Init(&parser, flow.protocol,
                    d == 0 ? protocols::Direction::kRequest : protocols::Direction::kResponse);
    protocols::ConsumeDatagram(&parser, p.payload, p.payload_length);
    if (const protocols::Attribute* a = FindWitness(flow.protocol, parser.attributes))
      witness = std::string_view(a->value, a->length);
  }
  record.call_id = builder_.String(witness.empty() ? fmt::format("u{}.{}", flow.number, count)
                                                   : fmt::format("u{}.w{}", flow.number, witness));
  output_.Add(record, flow.protocol, parsed ? &parser.attributes : nullptr);
}

void Importer::Packet(const DecodedPacket& p, TimeNs time) {
  switch (p.kind) {
    case PacketClass::kTcp:
      return Tcp(p, time);
    case PacketClass::kUdp:
      return Udp(p, time);
    case PacketClass::kOther:
      ++summary_->other_packets;
      return;
    case PacketClass::kFragment:
      ++summary_->fragments;
      return;
    case PacketClass::kMalformed:
      if (summary_->malformed++ == 0) {
        first_malformed_ = p.problem;
        first_malformed_at_ = packet_number_;
      }
      return;
  }
}

Status Importer::CheckLinkType(int link) const {
  if (LinkTypeSupported(link)) return Status::Ok();
  const char* link_name = pcap_datalink_val_to_name(link);
  return Status::InvalidArgument(
      "{}: link type {} ({}) is not supported: weft reads Ethernet, Linux cooked (SLL, "
      "SLL2), loopback (NULL, LOOP) and raw IP captures",
      name_, link, link_name != nullptr ? link_name : "unknown");
}

void Importer::Frame(int link, const uint8_t* data, uint32_t captured, TimeNs time) {
  ++packet_number_;
  ++summary_->packets;
  DecodePacket(link, data, captured, &packet_);
  Packet(packet_, time);
}

Result<Trace> Importer::Run(pcap_t* pcap) {
  int link = pcap_datalink(pcap);
  WEFT_RETURN_IF_ERROR(CheckLinkType(link));
  pcap_pkthdr* header = nullptr;
  const u_char* data = nullptr;
  int rc;
  while ((rc = pcap_next_ex(pcap, &header, &data)) == 1) {
    // Opened with nanosecond precision: tv_usec holds nanoseconds. pcapng's 64-bit
    // timestamps may claim any second at all: past 2262 the time saturates.
    TimeNs time;
    if (__builtin_mul_overflow(TimeNs(header->ts.tv_sec), TimeNs(1'000'000'000), &time) ||
        __builtin_add_overflow(time, TimeNs(header->ts.tv_usec), &time) || time < 0) {
      time = header->ts.tv_sec < 0 ? 0 : std::numeric_limits<TimeNs>::max() - 1;
    }
    Frame(link, data, header->caplen, time);
  }
  if (rc == PCAP_ERROR) Damaged(pcap_geterr(pcap));
  return Finish();
}

Result<Trace> Importer::Run(ClassicPcapReader& reader) {
  WEFT_RETURN_IF_ERROR(CheckLinkType(reader.link_type()));
  PcapPacket packet;
  while (reader.Next(&packet)) Frame(reader.link_type(), packet.data, packet.captured, packet.time);
  if (!reader.error().empty()) Damaged(reader.error());
  return Finish();
}

void Importer::Damaged(std::string_view what) {
  summary_->problems.push_back(fmt::format("{}: packet {}: {}", name_, packet_number_ + 1, what));
}

Result<Trace> Importer::Finish() {
  if (first_malformed_ != nullptr) {
    std::string more =
        summary_->malformed > 1
            ? fmt::format(" (and {} more malformed packets, skipped)", summary_->malformed - 1)
            : " (skipped)";
    summary_->problems.insert(summary_->problems.begin(),
                              fmt::format("{}: packet {}: bad header: {}{}", name_,
                                          first_malformed_at_, first_malformed_, more));
  }
  for (auto& c : connections_) {
    if (c != nullptr) c->Close();
  }
  summary_->retransmissions = counters_.retransmissions;
  summary_->gaps = counters_.gaps;
  summary_->gap_bytes = counters_.gap_bytes;
  return std::move(builder_).Finish();
}

Result<Trace> ImportFrom(pcap_t* pcap, std::string_view name, const PcapImportOptions& options,
                         PcapImportSummary* summary) {
  WEFT_ASSIGN_OR_RETURN(ProtocolSelection selection, ParseSelection(options.protocols));
  PcapImportSummary ignored;
  Importer importer(name, options, selection, summary != nullptr ? summary : &ignored);
  Result<Trace> trace = importer.Run(pcap);
  pcap_close(pcap);
  return trace;
}

Result<Trace> ImportClassic(std::string_view bytes, std::string_view name,
                            const PcapImportOptions& options, PcapImportSummary* summary) {
  WEFT_ASSIGN_OR_RETURN(ProtocolSelection selection, ParseSelection(options.protocols));
  PcapImportSummary ignored;
  Importer importer(name, options, selection, summary != nullptr ? summary : &ignored);
  ClassicPcapReader reader(bytes);
  return importer.Run(reader);
}

// A file mapped read-only for as long as it lives.
class MappedFile {
 public:
  ~MappedFile() {
    if (data_ != nullptr) munmap(data_, size_);
  }
  Status Open(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::IoError("{}: {}", path, std::strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
      close(fd);
      return Status::Ok();  // not a regular file, or empty: libpcap reads it (or says why not)
    }
    void* data = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (data == MAP_FAILED) return Status::Ok();
    madvise(data, size_t(st.st_size), MADV_SEQUENTIAL);
    data_ = data;
    size_ = size_t(st.st_size);
    return Status::Ok();
  }
  std::string_view bytes() const {
    return data_ != nullptr ? std::string_view(static_cast<const char*>(data_), size_)
                            : std::string_view();
  }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

Result<NodeNaming> ParseNodeNaming(std::string_view name) {
  if (name == "ip") return NodeNaming::kIp;
  if (name == "ip-port") return NodeNaming::kIpPort;
  return Status::InvalidArgument("--nodes: '{}': expected ip or ip-port", name);
}

std::string PcapImportSummary::OneLine() const {
  std::string by_protocol;
  for (const auto& [name, count] : protocol_messages) {
    by_protocol += fmt::format("{}{} {}", by_protocol.empty() ? " (" : ", ", name, count);
  }
  if (!by_protocol.empty()) by_protocol += ")";
  std::string line = fmt::format(
      "{} packets, {} connections, {} messages{}, {} bytes, {} gaps ({} bytes), {} "
      "retransmissions, {} packets of other protocols skipped",
      packets, connections, messages, by_protocol, bytes, gaps, gap_bytes, retransmissions,
      other_packets);
  if (udp_flows > 0) line += fmt::format(", {} UDP flows", udp_flows);
  if (without_handshake > 0)
    line += fmt::format(", {} connections without a captured handshake (client guessed)",
                        without_handshake);
  if (fragments > 0) line += fmt::format(", {} IP fragments skipped", fragments);
  if (cut_short > 0) line += fmt::format(", {} segments cut short by the snap length", cut_short);
  if (malformed > 0) line += fmt::format(", {} malformed packets skipped", malformed);
  return line;
}

Result<Trace> ImportPcapFile(const std::string& path, const PcapImportOptions& options,
                             PcapImportSummary* summary) {
  // A classic pcap file is read in place from a mapping: no copy into a buffer, no system
  // call per packet. Other formats (pcapng) go to libpcap.
  MappedFile mapped;
  WEFT_RETURN_IF_ERROR(mapped.Open(path));
  if (ClassicPcapReader::Recognises(mapped.bytes())) {
    return ImportClassic(mapped.bytes(), path, options, summary);
  }
  // Opened here rather than by libpcap, to give the stream a 1 MiB buffer before the first
  // read: with stdio's default of 4 KiB, a gigabyte is a quarter of a million read calls.
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return Status::IoError("{}: {}", path, std::strerror(errno));
  std::setvbuf(file, nullptr, _IOFBF, 1 << 20);
  char error[PCAP_ERRBUF_SIZE] = {};
  pcap_t* pcap = pcap_fopen_offline_with_tstamp_precision(file, PCAP_TSTAMP_PRECISION_NANO, error);
  if (pcap == nullptr) {
    std::fclose(file);
    return Status::InvalidArgument("{}: {}", path, error);
  }
  return ImportFrom(pcap, path, options, summary);
}

Result<Trace> ImportPcapBytes(std::string_view bytes, std::string_view name,
                              const PcapImportOptions& options, PcapImportSummary* summary) {
  // fmemopen rejects a size of 0; an empty capture is a file with no header either way.
  if (bytes.empty()) return Status::InvalidArgument("{}: empty file, no capture header", name);
  if (ClassicPcapReader::Recognises(bytes)) return ImportClassic(bytes, name, options, summary);
  FILE* file = fmemopen(const_cast<char*>(bytes.data()), bytes.size(), "rb");
  if (file == nullptr) return Status::IoError("{}: fmemopen failed", name);
  char error[PCAP_ERRBUF_SIZE] = {};
  pcap_t* pcap = pcap_fopen_offline_with_tstamp_precision(file, PCAP_TSTAMP_PRECISION_NANO, error);
  if (pcap == nullptr) {
    std::fclose(file);
    return Status::InvalidArgument("{}: {}", name, error);
  }
  return ImportFrom(pcap, name, options, summary);
}

}  // namespace weft::import
