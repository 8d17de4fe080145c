// Pairing connection ends and telling client from server (end_pairing.h).
#include "reconcile/end_pairing.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace weft::reconcile {
namespace {

// The port of an "ip:port" endpoint.
Result<uint16_t> PortOf(std::string_view endpoint) {
  size_t colon = endpoint.rfind(':');
  std::string_view digits =
      colon == std::string_view::npos ? std::string_view() : endpoint.substr(colon + 1);
  uint16_t port = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size()) {
    return Status::InvalidArgument("endpoint '{}': no port at its end", endpoint);
  }
  return port;
}

// The client end decides CALL vs RETURN. A TCP connection whose ends were both named by
// inheritance falls back to ports: the end with the higher local port is taken as the
// (ephemeral) client. A socketpair has no client: its messages are MSG both ways.
enum class Role : uint8_t { kClient, kServer, kNeither };
Result<Role> RoleOf(const ConnectionEnd& end, const ConnectionEnd* other) {
  if (end.opener == Opener::kConnect) return Role::kClient;
  if (end.opener == Opener::kAccept) return Role::kServer;
  if (other != nullptr && other->opener == Opener::kConnect) return Role::kServer;
  if (other != nullptr && other->opener == Opener::kAccept) return Role::kClient;
  if (end.unix_socket) return Role::kNeither;
  WEFT_ASSIGN_OR_RETURN(uint16_t local, PortOf(end.local));
  WEFT_ASSIGN_OR_RETURN(uint16_t peer, PortOf(end.peer));
  return local > peer ? Role::kClient : Role::kServer;
}

bool Overlaps(const ConnectionEnd& a, const ConnectionEnd& b) {
  bool a_before_b = a.close_ns != kNoTime && a.close_ns < b.open_ns;
  bool b_before_a = b.close_ns != kNoTime && b.close_ns < a.open_ns;
  return !a_before_b && !b_before_a;
}

// The ends that may be an end's other end, by reversed 4-tuple or by inode.
class Candidates {
 public:
  explicit Candidates(const std::vector<ConnectionEnd>& ends) {
    for (size_t i = 0; i < ends.size(); ++i) {
      if (ends[i].merged_away || ends[i].pipe) continue;
      if (ends[i].unix_socket) {
        by_inode_[{ends[i].boot_id, ends[i].inode}].push_back(i);
      } else {
        by_tuple_[{ends[i].local, ends[i].peer}].push_back(i);
      }
    }
  }

  const std::vector<size_t>& Of(const ConnectionEnd& end) const {
    if (end.unix_socket) {
      // The connecting end does not know its peer's inode; its peer finds it.
      if (end.peer_inode == 0) return none_;
      auto it = by_inode_.find({end.boot_id, end.peer_inode});
      return it != by_inode_.end() ? it->second : none_;
    }
    auto it = by_tuple_.find({end.peer, end.local});
    return it != by_tuple_.end() ? it->second : none_;
  }

 private:
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> by_tuple_;
  std::map<std::pair<std::array<uint8_t, 16>, uint64_t>, std::vector<size_t>> by_inode_;
  std::vector<size_t> none_;
};

// Per end, the index of its other end, or -1.
std::vector<int64_t> FindPartners(const std::vector<ConnectionEnd>& ends) {
  Candidates candidates(ends);
  std::vector<int64_t> partner(ends.size(), -1);
  for (size_t i = 0; i < ends.size(); ++i) {
    if (ends[i].merged_away || ends[i].pipe || partner[i] >= 0) continue;
    int64_t best = -1;
    TimeNs best_distance = 0;
    for (size_t j : candidates.Of(ends[i])) {
      if (j == i || partner[j] >= 0 || !Overlaps(ends[i], ends[j])) continue;
      if (ends[j].unix_socket && ends[j].peer_inode != 0 && ends[j].peer_inode != ends[i].inode)
        continue;
      TimeNs distance = std::abs(ends[j].open_ns - ends[i].open_ns);
      if (best < 0 || distance < best_distance) {
        best = int64_t(j);
        best_distance = distance;
      }
    }
    if (best >= 0) {
      partner[i] = best;
      partner[size_t(best)] = int64_t(i);
    }
  }
  return partner;
}

}  // namespace

Result<std::vector<ConnectionPair>> PairEnds(const std::vector<ConnectionEnd>& ends) {
  std::vector<int64_t> partner = FindPartners(ends);
  std::vector<ConnectionPair> pairs;
  for (size_t i = 0; i < ends.size(); ++i) {
    if (ends[i].merged_away || ends[i].pipe) continue;
    const ConnectionEnd* other = partner[i] >= 0 ? &ends[size_t(partner[i])] : nullptr;
    if (other != nullptr && size_t(partner[i]) < i) continue;  // emitted with its partner
    WEFT_ASSIGN_OR_RETURN(Role role, RoleOf(ends[i], other));
    switch (role) {
      case Role::kClient:
        pairs.push_back({&ends[i], other, false});
        break;
      case Role::kServer:
        pairs.push_back({other, &ends[i], false});
        break;
      case Role::kNeither:
        pairs.push_back({&ends[i], other, true});
        break;
    }
  }
  return pairs;
}

}  // namespace weft::reconcile
