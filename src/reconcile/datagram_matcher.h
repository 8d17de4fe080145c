// Datagrams (UDP, Unix datagram sockets): each datagram is one message; its send and its
// receive are paired by who sent it and where it went, its size and the XXH3-64 of its
// bytes (WAP5 §4 pairs by content where the transport gives no stream offsets; its Table 1
// names Unix sockets by path or inode).
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

// Pairs receives with sends of the same (source, destination, bytes, hash), each receive
// with the earliest unpaired such send that entered before it returned. The pointers point
// into `datagrams`.
//
// UDP: source and destination are ports, not addresses: a socket bound to 0.0.0.0 is named
// 0.0.0.0:port by its owner while the receiver sees the real source address.
// Unix: the source is the sender's name as the receiver sees it (its bound path, or
// "unix:" when unbound); the destination is the path a send went to and the path the
// receiving socket is bound to, or, on a socketpair (no paths), the sender's peer inode and
// the receiver's own inode. Paths are compared as spelled: a send to a relative path whose
// receiver bound an absolute one (or the reverse) does not pair.
std::vector<DatagramMessage> MatchDatagrams(std::span<const DatagramSocket> sockets,
                                            std::span<const Datagram> datagrams);

}  // namespace weft::reconcile
