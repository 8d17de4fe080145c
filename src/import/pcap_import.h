// import: a packet capture (classic pcap read in place, pcapng through libpcap) -> a message
// trace.
//
// This is how Project 5 (§3, SOSP'03) and WAP5 (§2, WWW'06) traced systems nobody could
// touch: a sniffer's view of the network. TCP is reassembled per direction by sequence
// number (tcp_reassembly.h); each direction is cut into messages as reconcile cuts a
// captured connection — runs until the other direction sends (Project 5's "fat
// messages"), or where capture's protocol processors find a message's end
// (message_cutter.h); UDP datagrams are one message each. The side that sent the SYN is
// the client: what it sends are CALLs, what it receives RETURNs. A sniffer sees a message
// once, so each message has a send time (when the packet holding its first byte was
// captured) and no receive time, and no threads. Nodes are named by IP address, or servers
// by IP:port (`NodeNaming`).
//
// What a sniffer cannot see is not guessed: bytes the capture missed are a gap, counted
// and marked on the message after them ("pcap.gap"); IP fragments are skipped and
// counted; a connection whose handshake was not captured has its client guessed from the
// ports (the higher one) and is counted.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "trace/trace.h"

namespace weft::import {

enum class NodeNaming : uint8_t {
  kIp,      // every end by its IP address: one node per host
  kIpPort,  // a server's end by IP:port (one node per listening socket), a client's by IP
};
Result<NodeNaming> ParseNodeNaming(std::string_view name);  // "ip", "ip-port"

struct PcapImportOptions {
  NodeNaming nodes = NodeNaming::kIpPort;
  // Which protocol processors read which connections, in weft capture's --protocols
  // language (capture/protocols/spec.h): "auto" (the IANA ports and detection from a
  // connection's first bytes), "none", PROTO=PORT, PROTO=auto. Unix paths and program
  // names are not in a capture file.
  std::string protocols = "auto";
};

// Attribute on a message that follows bytes the capture missed: how many.
inline constexpr std::string_view kGapAttribute = "pcap.gap";

struct PcapImportSummary {
  uint64_t packets = 0;
  uint64_t tcp_packets = 0;
  uint64_t udp_packets = 0;
  uint64_t other_packets = 0;  // not IP, or neither TCP nor UDP: skipped
  uint64_t fragments = 0;      // IP fragments: skipped
  uint64_t malformed = 0;      // headers that contradict themselves: skipped
  uint64_t cut_short = 0;      // segments whose payload the snap length cut: their bytes are gaps
  uint64_t connections = 0;
  uint64_t without_handshake = 0;  // of them, no SYN captured: client guessed by port
  uint64_t udp_flows = 0;
  uint64_t messages = 0;
  uint64_t bytes = 0;
  uint64_t gaps = 0;
  uint64_t gap_bytes = 0;
  uint64_t retransmissions = 0;  // segments with bytes seen before (dropped or trimmed)
  std::map<std::string, uint64_t> protocol_messages;  // messages a processor ended, by protocol
  // One line per kind of damage, naming the file and the first packet it hit: a malformed
  // header, a file that ends inside a packet. What came before (and, for bad headers,
  // after) is in the trace.
  std::vector<std::string> problems;

  // "12034 packets, 17 connections, 2210 messages (testbed 2210), 1.2 MB, 0 gaps, 0
  // retransmissions, 40 packets of other protocols skipped"
  std::string OneLine() const;
};

// Reads the capture file at `path`. An error if it cannot be opened or read at all (not a
// capture file, a link type weft does not read); damage after the file's header is in
// `summary->problems`, with the trace of what was readable.
Result<Trace> ImportPcapFile(const std::string& path, const PcapImportOptions& options,
                             PcapImportSummary* summary);
// The same for a capture held in memory; `name` is what messages call it.
Result<Trace> ImportPcapBytes(std::string_view bytes, std::string_view name,
                              const PcapImportOptions& options, PcapImportSummary* summary);

}  // namespace weft::import
