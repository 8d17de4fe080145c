// Datagram pairing; see datagram_matcher.h.
//
// Each key's sends pair with its receives independently of every other key's, so sends
// are sorted by (key, entry time) and receives by (key, exit time), and one merge walks
// both: a receive takes its key's next unpaired send if that send entered before the
// receive returned. Nearly every key is unique (the hash covers the bytes); two flat sorted
// vectors cost no allocation per datagram and no hash table (whose probes missed the cache
// and whose pages were a fifth of reconciling a DNS run).
#include "reconcile/datagram_matcher.h"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>

namespace weft::reconcile {
namespace {

using Key = std::tuple<uint64_t, uint64_t, int64_t, uint64_t>;  // source, destination, bytes, hash

// Names the two ends of a datagram as numbers both its sides agree on: UDP ports (below
// 2^16) as they are, Unix names and inodes interned above them.
class EndNumbers {
 public:
  explicit EndNumbers(std::span<const DatagramSocket> sockets) : sockets_(sockets) {}

  Key SendKey(const Datagram& d) {
    const DatagramSocket& s = sockets_[d.socket];
    if (!s.unix_socket) return {s.local_port, d.peer_port, d.bytes, d.hash};
    // "unix:" is no destination: a socketpair end sends to its peer's inode.
    uint64_t destination =
        d.peer.size() > kUnnamed.size() ? Name(d.peer) : Inode(s.peer_inode, kUnknownPeer);
    return {Name(s.local), destination, d.bytes, d.hash};
  }
  Key ReceiveKey(const Datagram& d) {
    const DatagramSocket& s = sockets_[d.socket];
    if (!s.unix_socket) return {d.peer_port, s.local_port, d.bytes, d.hash};
    uint64_t destination =
        s.local.size() > kUnnamed.size() ? Name(s.local) : Inode(s.inode, kUnknownSelf);
    return {Name(d.peer), destination, d.bytes, d.hash};
  }

 private:
  static constexpr std::string_view kUnnamed = "unix:";
  uint64_t Name(const std::string& name) {
    return numbers_.try_emplace(name, kFirst + numbers_.size()).first->second;
  }
  // An inode the kernel did not give (0) names nothing: a send to an unknown peer and a
  // receive on a socket of unknown inode must not pair with each other.
  uint64_t Inode(uint64_t inode, uint64_t unknown) {
    return inode == 0 ? unknown : Name("#" + std::to_string(inode));
  }

  static constexpr uint64_t kFirst = 1 << 16;
  static constexpr uint64_t kUnknownPeer = UINT64_MAX, kUnknownSelf = UINT64_MAX - 1;
  std::span<const DatagramSocket> sockets_;
  absl::flat_hash_map<std::string, uint64_t> numbers_;
};

// A datagram's side with its key and the time that orders it within the key: a send's
// entry, a receive's exit.
struct Keyed {
  Key key;
  int64_t time;
  const Datagram* datagram;
  // `datagrams` is in log order, so the pointer keeps equal times in that order.
  auto Order() const { return std::tie(key, time, datagram); }
};

}  // namespace

std::vector<DatagramMessage> MatchDatagrams(std::span<const DatagramSocket> sockets,
                                            std::span<const Datagram> datagrams) {
  EndNumbers numbers(sockets);
  std::vector<Keyed> sends, recvs;
  for (const Datagram& d : datagrams) {
    if (d.send) {
      sends.push_back({numbers.SendKey(d), d.entry_ns, &d});
    } else {
      recvs.push_back({numbers.ReceiveKey(d), d.exit_ns, &d});
    }
  }
  auto by_order = [](const Keyed& a, const Keyed& b) { return a.Order() < b.Order(); };
  std::sort(sends.begin(), sends.end(), by_order);
  std::sort(recvs.begin(), recvs.end(), by_order);
  std::vector<DatagramMessage> messages;
  messages.reserve(sends.size() + recvs.size());
  size_t s = 0;
  for (size_t r = 0; r < recvs.size(); ++r) {
    while (s < sends.size() && sends[s].key < recvs[r].key)
      messages.push_back({sends[s++].datagram, nullptr});
    const bool pairs =
        s < sends.size() && sends[s].key == recvs[r].key && sends[s].time <= recvs[r].time;
    messages.push_back({pairs ? sends[s++].datagram : nullptr, recvs[r].datagram});
  }
  while (s < sends.size()) messages.push_back({sends[s++].datagram, nullptr});
  return messages;
}

}  // namespace weft::reconcile
