// Datagram pairing; see datagram_matcher.h.
//
// Sends are sorted once by (key, entry time) into one flat vector; each receive finds its
// key's run by binary search and takes the run's next unpaired send. Nearly every key is
// unique (the hash covers the bytes), so a container per key would cost an allocation per
// datagram; this costs none.
#include "reconcile/datagram_matcher.h"

#include <algorithm>
#include <tuple>

namespace weft::reconcile {
namespace {

using Key = std::tuple<uint16_t, uint16_t, int64_t, uint64_t>;  // src port, dst port, bytes, hash

struct KeyedSend {
  Key key;
  const Datagram* send;
};

}  // namespace

std::vector<DatagramMessage> MatchDatagrams(std::span<const UdpSocket> sockets,
                                            std::span<const Datagram> datagrams) {
  std::vector<KeyedSend> sends;
  std::vector<const Datagram*> recvs;
  for (const Datagram& d : datagrams) {
    if (d.send) {
      sends.push_back({Key{sockets[d.socket].local_port, d.peer_port, d.bytes, d.hash}, &d});
    } else {
      recvs.push_back(&d);
    }
  }
  std::stable_sort(sends.begin(), sends.end(), [](const KeyedSend& a, const KeyedSend& b) {
    return a.key != b.key ? a.key < b.key : a.send->entry_ns < b.send->entry_ns;
  });
  std::stable_sort(recvs.begin(), recvs.end(),
                   [](const Datagram* a, const Datagram* b) { return a->exit_ns < b->exit_ns; });
  // next_unpaired[i]: for the first send of a key's run, the index of its next unpaired send.
  std::vector<uint32_t> next_unpaired(sends.size());
  for (size_t i = 0; i < sends.size(); ++i) next_unpaired[i] = uint32_t(i);
  std::vector<bool> paired(sends.size(), false);
  std::vector<DatagramMessage> messages;
  messages.reserve(sends.size() + recvs.size());
  for (const Datagram* r : recvs) {
    Key key{r->peer_port, sockets[r->socket].local_port, r->bytes, r->hash};
    auto run = std::lower_bound(sends.begin(), sends.end(), key,
                                [](const KeyedSend& s, const Key& k) { return s.key < k; });
    const Datagram* send = nullptr;
    if (run != sends.end() && run->key == key) {
      size_t first = size_t(run - sends.begin());
      size_t next = next_unpaired[first];
      if (next < sends.size() && sends[next].key == key && sends[next].send->entry_ns <= r->exit_ns) {
        send = sends[next].send;
        paired[next] = true;
        next_unpaired[first] = uint32_t(next + 1);
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
