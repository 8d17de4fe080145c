// Datagram pairing; see datagram_matcher.h.
#include "reconcile/datagram_matcher.h"

#include <algorithm>
#include <deque>
#include <map>
#include <tuple>

namespace weft::reconcile {

std::vector<DatagramMessage> MatchDatagrams(std::span<const UdpSocket> sockets,
                                            std::span<const Datagram> datagrams) {
  using Key = std::tuple<uint16_t, uint16_t, int64_t, uint64_t>;  // src port, dst port, bytes, hash
  std::vector<const Datagram*> sends, recvs;
  for (const Datagram& d : datagrams) (d.send ? sends : recvs).push_back(&d);
  std::stable_sort(sends.begin(), sends.end(),
                   [](const Datagram* a, const Datagram* b) { return a->entry_ns < b->entry_ns; });
  std::stable_sort(recvs.begin(), recvs.end(),
                   [](const Datagram* a, const Datagram* b) { return a->exit_ns < b->exit_ns; });
  std::map<Key, std::deque<const Datagram*>> waiting;
  for (const Datagram* d : sends) {
    waiting[{sockets[d->socket].local_port, d->peer_port, d->bytes, d->hash}].push_back(d);
  }
  std::vector<DatagramMessage> messages;
  messages.reserve(sends.size() + recvs.size());
  for (const Datagram* r : recvs) {
    auto it = waiting.find({r->peer_port, sockets[r->socket].local_port, r->bytes, r->hash});
    const Datagram* send = nullptr;
    if (it != waiting.end() && !it->second.empty() && it->second.front()->entry_ns <= r->exit_ns) {
      send = it->second.front();
      it->second.pop_front();
    }
    messages.push_back({send, r});
  }
  for (auto& [key, queue] : waiting) {
    for (const Datagram* d : queue) messages.push_back({d, nullptr});
  }
  return messages;
}

}  // namespace weft::reconcile
