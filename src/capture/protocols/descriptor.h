// What weft knows about each protocol beyond where its messages end: one row per
// protocol, read by capture (which ports `--protocols auto` watches, which protocols
// detection may pick) and by reconcile (how a request and its reply are paired). Adding a
// protocol is adding its processor (protocol.h, processors.h) and its row here.
//
// Like the processors, this is compiled into libweft-preload.so: the table is constant
// data, with no constructor to run and no allocation.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "capture/protocols/protocol.h"

namespace weft::capture::protocols {

struct ProtocolDescriptor {
  Protocol protocol;
  const char* name;  // as written in --protocols and in a trace's "protocol" attribute
  // True where the k-th reply on a connection answers its k-th request, so reconcile may
  // pair messages by position: HTTP/1.1 (RFC 9112 §9.3.2), Redis and PostgreSQL answer
  // pipelined requests in order. The testbed's frames (answered by call id, out of order
  // on an event loop), DNS over TCP (RFC 7766 allows any order) and the generic processors
  // promise nothing. "none" finds no ends: a message is a direction-turn run, and the k-th
  // run of replies does follow the k-th run of requests.
  bool replies_in_order;
  // The attribute naming the same exchange in a request and its reply, for protocols that
  // may answer out of order: DNS's id (RFC 1035 §4.1.1), memcached's binary opaque (quiet
  // commands are answered only on failure, so position says nothing), HTTP/2's stream id
  // (RFC 9113 §5.1.1), and the testbed frame's call id should its processor log one;
  // nullptr for none.
  const char* witness_key;
  // `--protocols auto` attaches the processor to streams and datagrams on this port; 0 for
  // none (IANA: PostgreSQL 5432, Redis 6379, DNS 53, MySQL 3306, memcached 11211).
  uint16_t auto_port;
  // Detect may pick it from a stream's first request bytes (auto, or PROTO=auto).
  bool detected;
  // The server speaks first: its first message (MySQL's greeting) answers no request, so
  // where replies come in order the (k+1)-th reply answers the k-th request. Last, so that
  // rows leaving it out say false.
  bool server_greets;
};

// Indexed by Protocol.
inline constexpr ProtocolDescriptor kProtocolTable[kProtocolCount] = {
    {kNone, "none", true, nullptr, 0, false},
    {kHttp, "http", true, nullptr, 0, true},
    {kTestbed, "testbed", false, "testbed.call", 0, true},
    {kPostgres, "postgres", true, nullptr, 5432, true},
    {kRedis, "redis", true, nullptr, 6379, true},
    {kDns, "dns", false, "dns.id", 53, false},
    {kLine, "line", false, nullptr, 0, false},
    {kOneShot, "oneshot", false, nullptr, 0, false},
    {kMysql, "mysql", true, nullptr, 3306, false, true},
    {kMemcached, "memcached", false, "memcached.opaque", 11211, true},
    {kHttp2, "http2", false, "http2.stream", 0, true},
};

// The row of `protocol`; a protocol number out of range (a damaged log) gets a row named
// "unknown" that promises nothing.
const ProtocolDescriptor& Describe(Protocol protocol);

}  // namespace weft::capture::protocols
