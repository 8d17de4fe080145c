// UDP: each datagram is one message; its send and its receive are paired by the ports on
// both sides, the size and the XXH3-64 of its bytes (WAP5 §4 pairs by content where the
// transport gives no stream offsets).
#pragma once

#include <span>
#include <vector>

#include "reconcile/connection_table.h"

namespace weft::reconcile {

// A datagram's two sides; either may be null (its other end was not traced, or the
// datagram was lost), never both.
struct DatagramMessage {
  const Datagram* send = nullptr;
  const Datagram* recv = nullptr;
};

// Pairs receives with sends of the same (source port, destination port, bytes, hash), each
// receive with the earliest unpaired such send that entered before it returned. The
// pointers point into `datagrams`. Ports only, not addresses: a socket bound to 0.0.0.0 is
// named 0.0.0.0:port by its owner while the receiver sees the real source address.
std::vector<DatagramMessage> MatchDatagrams(std::span<const UdpSocket> sockets,
                                            std::span<const Datagram> datagrams);

}  // namespace weft::reconcile
