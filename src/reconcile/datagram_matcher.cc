// Datagram pairing; see datagram_matcher.h.
//
// Sends are sorted once by (key, entry time) into one flat vector, and a hash table maps
// each key to the first send of its run; a receive takes its run's next unpaired send.
// Nearly every key is unique (the hash covers the bytes), so a container per key would
// cost an allocation per datagram; this costs none, and a lookup is one probe, where a
// binary search over the sends missed the cache at every step.
#include "reconcile/datagram_matcher.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>

#include <absl/container/flat_hash_map.h>

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
    uint64_t destination = d.peer.size() > kUnnamed.size() ? Name(d.peer) : Inode(s.peer_inode, kUnknownPeer);
    return {Name(s.local), destination, d.bytes, d.hash};
  }
  Key ReceiveKey(const Datagram& d) {
    const DatagramSocket& s = sockets_[d.socket];
    if (!s.unix_socket) return {d.peer_port, s.local_port, d.bytes, d.hash};
    uint64_t destination = s.local.size() > kUnnamed.size() ? Name(s.local) : Inode(s.inode, kUnknownSelf);
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

struct KeyedSend {
  Key key;
  const Datagram* send;
};

// A key's run of sends [next, end) in `sends`, and the next one's entry time and
// datagram, so that pairing a receive touches the table alone.
struct Run {
  uint32_t next, end;
  int64_t entry_ns;
  const Datagram* send;
};

}  // namespace

std::vector<DatagramMessage> MatchDatagrams(std::span<const DatagramSocket> sockets,
                                            std::span<const Datagram> datagrams) {
  EndNumbers numbers(sockets);
  std::vector<KeyedSend> sends;
  std::vector<const Datagram*> recvs;
  for (const Datagram& d : datagrams) {
    if (d.send) {
      sends.push_back({numbers.SendKey(d), &d});
    } else {
      recvs.push_back(&d);
    }
  }
  std::stable_sort(sends.begin(), sends.end(), [](const KeyedSend& a, const KeyedSend& b) {
    return a.key != b.key ? a.key < b.key : a.send->entry_ns < b.send->entry_ns;
  });
  std::stable_sort(recvs.begin(), recvs.end(),
                   [](const Datagram* a, const Datagram* b) { return a->exit_ns < b->exit_ns; });
  absl::flat_hash_map<Key, Run> runs;
  runs.reserve(sends.size());
  for (size_t i = 0; i < sends.size();) {
    size_t end = i + 1;
    while (end < sends.size() && sends[end].key == sends[i].key) ++end;
    runs[sends[i].key] = {uint32_t(i), uint32_t(end), sends[i].send->entry_ns, sends[i].send};
    i = end;
  }
  std::vector<bool> paired(sends.size(), false);
  std::vector<DatagramMessage> messages;
  messages.reserve(sends.size() + recvs.size());
  for (const Datagram* r : recvs) {
    Key key = numbers.ReceiveKey(*r);
    const Datagram* send = nullptr;
    auto it = runs.find(key);
    if (it != runs.end() && it->second.next < it->second.end && it->second.entry_ns <= r->exit_ns) {
      Run& run = it->second;
      send = run.send;
      paired[run.next] = true;
      if (++run.next < run.end) {
        run.send = sends[run.next].send;
        run.entry_ns = run.send->entry_ns;
      }
    }
    messages.push_back({send, r});
  }
  for (size_t i = 0; i < sends.size(); ++i) {
    if (!paired[i]) messages.push_back({sends[i].send, nullptr});
  }
  return messages;
}

}  // namespace weft::reconcile
