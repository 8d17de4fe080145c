// Which streams get a protocol processor (`weft capture --protocols SPEC`, passed as
// WEFT_PROTOCOLS): the parsed selection, shared by protocol_streams.cc (attaching,
// detecting) and isolation. Internal to libweft-preload.so.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/un.h>

#include "capture/protocols/protocol.h"

namespace weft_preload {

namespace protocols = weft::capture::protocols;

constexpr int kMaxRules = 32;
constexpr size_t kMaxPath = sizeof(sockaddr_un::sun_path);

struct Rule {
  protocols::Protocol protocol;
  uint16_t port;  // 0: a path rule
  uint8_t path_length;
  char path[kMaxPath];
};

constexpr int kMaxDnsPorts = 8;
// g_fd_stream values of UDP sockets whose datagrams go to the DNS processor (no slot).
constexpr uint32_t kDnsServerSocket = 0xfffffffe;  // bound to a DNS port: receives queries
constexpr uint32_t kDnsClientSocket = 0xffffffff;  // connected to one: sends queries

struct Selection {
  bool enabled;
  int dns_port_count;
  uint16_t dns_ports[kMaxDnsPorts];  // datagrams to or from these are DNS
  uint32_t detect;                   // bit p: Detect may pick protocol p
  protocols::Protocol program;       // every stream of this program, kNone if no program rule
  int rule_count;
  Rule rules[kMaxRules];
};
extern Selection g_selection;  // set once at start (ConfigureProtocols), read after

// True if datagrams to or from `port` are DNS (a dns=PORT rule, or auto's 53).
bool IsDnsPort(uint16_t port);

}  // namespace weft_preload
