// Descriptor tracking per log; see connection_table.h.
#include "reconcile/connection_table.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace weft::reconcile {
namespace {

using capture::Event;
using capture::EventOp;

bool IsInternet(const capture::Address& a) {
  return a.family == capture::wire::kFamilyIpv4 || a.family == capture::wire::kFamilyIpv6;
}

// What a descriptor currently names.
struct DescriptorName {
  int32_t end = -1;     // index into ends: a connected TCP socket
  bool other = false;   // named, but not a connected TCP socket (listener, UDP, Unix, pipe)
};

class DescriptorWalker {
 public:
  DescriptorWalker(const capture::EventLog& log, uint32_t log_index, TimeNs offset,
                   std::vector<ConnectionEnd>& ends, ConnectionTableCounts& counts)
      : log_(log), log_index_(log_index), offset_(offset), ends_(ends), counts_(counts) {}

  void Walk() {
    for (const Event& e : log_.events) {
      ++counts_.events;
      switch (e.op) {
        case EventOp::kEndpoint: Name(e); break;
        case EventOp::kClose: Unname(e.fd, e.exit_ns); break;
        case EventOp::kDup: Dup(e); break;
        default:
          if (capture::IsSendOp(e.op) || capture::IsRecvOp(e.op)) Io(e);
          break;
      }
    }
  }

 private:
  void Name(const Event& e) {
    if (e.endpoint < 0 || size_t(e.endpoint) >= log_.endpoints.size()) return;
    const capture::Endpoint& endpoint = log_.endpoints[size_t(e.endpoint)];
    auto cause = capture::wire::Op(e.arg);
    if (NamesSameConnection(e.fd, endpoint)) return;
    // A second record for a descriptor (socket, then connect) replaces the first name.
    Unname(e.fd, e.exit_ns);
    DescriptorName& name = names_[e.fd];
    bool connected_tcp = endpoint.kind == capture::wire::kKindTcp && !endpoint.listening &&
                         IsInternet(endpoint.peer) && endpoint.peer.port != 0;
    // A Unix stream socket is a connection end once connect, accept or socketpair made it
    // one, or when found connected at start (its peer's inode known).
    bool unix_stream = endpoint.kind == capture::wire::kKindUnixStream ||
                       endpoint.kind == capture::wire::kKindUnixSeqpacket;
    bool connected_unix =
        unix_stream && !endpoint.listening && endpoint.inode != 0 &&
        (cause == capture::wire::kOpConnect || cause == capture::wire::kOpAccept ||
         cause == capture::wire::kOpSocketpair || endpoint.peer_inode != 0);
    if (!connected_tcp && !connected_unix) {
      name.other = true;
      return;
    }
    ConnectionEnd end;
    end.local = capture::FormatAddress(endpoint.local);
    end.peer = capture::FormatAddress(endpoint.peer);
    end.unix_socket = connected_unix;
    if (connected_unix) {
      end.inode = endpoint.inode;
      end.peer_inode = endpoint.peer_inode;
    }
    end.boot_id = log_.header.boot_id;
    end.opener = cause == capture::wire::kOpConnect      ? Opener::kConnect
                 : cause == capture::wire::kOpAccept     ? Opener::kAccept
                 : cause == capture::wire::kOpSocketpair ? Opener::kSocketpair
                                                         : Opener::kUnknown;
    end.log = log_index_;
    end.open_ns = e.exit_ns + offset_;
    name.end = int32_t(ends_.size());
    ends_.push_back(std::move(end));
    references_[name.end] = 1;
  }

  // True if `fd` already names the connection `endpoint` describes (a repeated record).
  bool NamesSameConnection(int32_t fd, const capture::Endpoint& endpoint) const {
    auto it = names_.find(fd);
    if (it == names_.end() || it->second.end < 0) return false;
    const ConnectionEnd& end = ends_[size_t(it->second.end)];
    if (end.unix_socket) return endpoint.inode == end.inode;
    return capture::FormatAddress(endpoint.local) == end.local &&
           capture::FormatAddress(endpoint.peer) == end.peer;
  }

  void Unname(int32_t fd, TimeNs when) {
    auto it = names_.find(fd);
    if (it == names_.end()) return;
    if (it->second.end >= 0 && --references_[it->second.end] == 0) {
      ends_[size_t(it->second.end)].close_ns = when + offset_;
    }
    names_.erase(it);
  }

  void Dup(const Event& e) {
    if (e.result < 0 || e.result == e.fd) return;
    Unname(e.result, e.exit_ns);  // dup2/dup3 close the target first
    auto it = names_.find(e.fd);
    if (it == names_.end()) return;
    names_[e.result] = it->second;
    if (it->second.end >= 0) ++references_[it->second.end];
  }

  void Io(const Event& e) {
    if (e.result <= 0) return;  // failed, or end of stream
    auto it = names_.find(e.fd);
    if (it == names_.end()) {
      ++counts_.unnamed_io;
      return;
    }
    if (it->second.end < 0) {
      ++counts_.skipped_io;
      return;
    }
    ConnectionEnd& end = ends_[size_t(it->second.end)];
    end.io.push_back(StreamIo{.entry_ns = e.entry_ns + offset_,
                              .exit_ns = e.exit_ns + offset_,
                              .bytes = e.result,
                              .tid = e.tid,
                              .log = log_index_,
                              .payload = e.payload,
                              .send = capture::IsSendOp(e.op)});
  }

  const capture::EventLog& log_;
  uint32_t log_index_;
  TimeNs offset_;
  std::vector<ConnectionEnd>& ends_;
  ConnectionTableCounts& counts_;
  std::unordered_map<int32_t, DescriptorName> names_;
  std::unordered_map<int32_t, int32_t> references_;  // end -> descriptors naming it
};

}  // namespace

void CollectConnectionEnds(const capture::EventLog& log, uint32_t log_index,
                           TimeNs realtime_offset_ns, std::vector<ConnectionEnd>& ends,
                           ConnectionTableCounts& counts) {
  DescriptorWalker(log, log_index, realtime_offset_ns, ends, counts).Walk();
}

void MergeInheritedEnds(std::vector<ConnectionEnd>& ends) {
  std::vector<size_t> order(ends.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ends[a].open_ns < ends[b].open_ns; });
  // (boot, local, peer) -> the end that currently owns that socket.
  std::map<std::tuple<std::array<uint8_t, 16>, std::string, std::string>, size_t> owner;
  std::vector<size_t> merged_into_me;
  for (size_t i : order) {
    ConnectionEnd& end = ends[i];
    auto key = end.unix_socket ? std::make_tuple(end.boot_id, std::to_string(end.inode), std::string("unix"))
                               : std::make_tuple(end.boot_id, end.local, end.peer);
    auto it = owner.find(key);
    bool inherited = end.opener == Opener::kUnknown && it != owner.end() &&
                     (ends[it->second].close_ns == kNoTime || ends[it->second].close_ns >= end.open_ns) &&
                     ends[it->second].log != end.log;
    if (!inherited) {
      owner[key] = i;
      continue;
    }
    ConnectionEnd& parent = ends[it->second];
    parent.io.insert(parent.io.end(), end.io.begin(), end.io.end());
    std::stable_sort(parent.io.begin(), parent.io.end(),
                     [](const StreamIo& a, const StreamIo& b) { return a.entry_ns < b.entry_ns; });
    if (parent.close_ns != kNoTime && (end.close_ns == kNoTime || end.close_ns > parent.close_ns)) {
      parent.close_ns = end.close_ns;
    }
    end.io.clear();
    end.merged_away = true;
  }
}

}  // namespace weft::reconcile
