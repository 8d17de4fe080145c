// Descriptor tracking per log; see connection_table.h.
#include "reconcile/connection_table.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
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

// A Unix socket's name: "unix:/path", "unix:@abstract", or "unix:" when it has none (an
// unbound socket, a socketpair end, a source the kernel gave no address for).
std::string UnixName(const capture::Address& a) {
  return a.family == capture::wire::kFamilyUnix ? capture::FormatAddress(a) : "unix:";
}

// What a descriptor currently names.
struct DescriptorName {
  int32_t end = -1;    // index into ends: a connected TCP or Unix stream socket
  int32_t udp = -1;    // index into the datagram sockets (UDP or Unix)
  bool other = false;  // named, but neither (listener, other socket)
};

class DescriptorWalker {
 public:
  DescriptorWalker(const capture::EventLog& log, uint32_t log_index, TimeNs offset,
                   std::vector<ConnectionEnd>& ends, std::vector<DatagramSocket>& udp_sockets,
                   std::vector<Datagram>& datagrams, ConnectionTableCounts& counts)
      : log_(log),
        log_index_(log_index),
        offset_(offset),
        ends_(ends),
        udp_sockets_(udp_sockets),
        datagrams_(datagrams),
        counts_(counts) {}

  void Walk() {
    for (const Event& e : log_.events) {
      ++counts_.events;
      switch (e.op) {
        case EventOp::kEndpoint:
          Name(e);
          break;
        case EventOp::kClose:
          DropUnnamedDatagrams(e.fd);
          NoteUnusedConnect(e);
          Unname(e.fd, e.exit_ns);
          break;
        case EventOp::kDup:
          Dup(e);
          break;
        case EventOp::kBoundary:
        case EventOp::kHeaderBlock:
          Boundary(e);
          break;
        case EventOp::kAccept:
          if (e.result < 0) break;
          opening_call_[e.tid] = {int32_t(e.result), e.entry_ns + offset_};
          // A new client: what the thread connects next is for it, not a retry (hitch
          // connected onward for a port probe that closed unanswered, then for its next
          // client after the TLS handshake).
          unused_connect_.erase(e.tid);
          break;
        case EventOp::kConnect:
          opening_call_[e.tid] = {e.fd, e.entry_ns + offset_};
          break;
        case EventOp::kTlsTransport:
          if (e.result > 0) NoteTakenUp(e);
          break;
        default:
          if (capture::IsSendOp(e.op) || capture::IsRecvOp(e.op)) Io(e);
          break;
      }
    }
    for (const auto& [fd, pending] : unnamed_datagrams_) counts_.unnamed_io += pending.size();
  }

 private:
  void Name(const Event& e) {
    if (e.endpoint < 0 || size_t(e.endpoint) >= log_.endpoints.size()) return;
    const capture::Endpoint& endpoint = log_.endpoints[size_t(e.endpoint)];
    auto cause = capture::wire::Op(e.arg);
    if (NamesSameConnection(e.fd, endpoint)) return;
    if (endpoint.kind == capture::wire::kKindUdp ||
        endpoint.kind == capture::wire::kKindUnixDatagram) {
      NameDatagramSocket(e.fd, endpoint, cause);
      return;
    }
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
    bool pipe = endpoint.kind == capture::wire::kKindPipe && endpoint.inode != 0;
    if (!connected_tcp && !connected_unix && !pipe) {
      name.other = true;
      return;
    }
    ConnectionEnd end;
    end.local = capture::FormatAddress(endpoint.local);
    end.peer = capture::FormatAddress(endpoint.peer);
    end.unix_socket = connected_unix;
    end.pipe = pipe;
    if (pipe) {
      end.inode = endpoint.inode;
      end.local = end.peer = "pipe:" + std::to_string(endpoint.inode);
    }
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
    end.open_tid = e.tid;
    if (auto call = opening_call_.find(e.tid); call != opening_call_.end() &&
                                               call->second.first == e.fd &&
                                               end.opener != Opener::kUnknown) {
      end.open_call_ns = call->second.second;
    }
    if (auto retried = unused_connect_.find(e.tid);
        retried != unused_connect_.end() && end.opener == Opener::kConnect) {
      end.open_ns = retried->second;
      unused_connect_.erase(retried);
      ++counts_.retried_connects;
    }
    name.end = int32_t(ends_.size());
    ends_.push_back(std::move(end));
    references_[name.end] = 1;
  }

  // A datagram socket keeps one entry from its first record on; bind, connect and the
  // record after its first send fill in its names.
  void NameDatagramSocket(int32_t fd, const capture::Endpoint& endpoint, capture::wire::Op cause) {
    auto it = names_.find(fd);
    if (it == names_.end() || it->second.udp < 0) {
      Unname(fd, 0);
      names_[fd].udp = int32_t(udp_sockets_.size());
      udp_sockets_.push_back(DatagramSocket{.log = log_index_});
      it = names_.find(fd);
    }
    DatagramSocket& socket = udp_sockets_[size_t(it->second.udp)];
    if (endpoint.kind == capture::wire::kKindUnixDatagram) {
      NameUnixDatagramSocket(socket, endpoint, cause);
    } else if (endpoint.local.port != 0) {
      socket.local = capture::FormatAddress(endpoint.local);
      socket.local_port = endpoint.local.port;
    }
    if (IsInternet(endpoint.peer) && endpoint.peer.port != 0) {
      socket.peer = capture::FormatAddress(endpoint.peer);
      socket.peer_port = endpoint.peer.port;
    }
    // A socket that connected is a client, even one bound to be answered at a port or path
    // of its own (unbound sends each query upstream from a random port it binds).
    if (cause == capture::wire::kOpConnect) socket.connected = true;
    // A UDP socket serves if it was bound explicitly, or inherited already bound (a server
    // whose socket its parent bound before forking, as the testbed's runner does).
    if (endpoint.kind == capture::wire::kKindUdp &&
        (cause == capture::wire::kOpBind ||
         (cause == capture::wire::kOpNone && endpoint.local.port != 0))) {
      socket.bound = true;
    }
    // The datagram whose send made the kernel bind the socket came before this record.
    auto pending = unnamed_datagrams_.find(fd);
    if (pending != unnamed_datagrams_.end()) {
      for (const PendingDatagram& d : pending->second) {
        AddDatagram(d.event, it->second.udp);
        datagrams_.back().boundary = d.boundary;
      }
      unnamed_datagrams_.erase(pending);
    }
  }

  // A Unix datagram socket is named by its path (or abstract name) when bound, by its
  // inode and its peer's when it is a socketpair end (WAP5 Table 1: Unix sockets by path
  // or inode). Bound explicitly, or inherited bound (a syslog daemon handed /dev/log by
  // its parent), it serves, unless it also connected (NameDatagramSocket).
  static void NameUnixDatagramSocket(DatagramSocket& socket, const capture::Endpoint& endpoint,
                                     capture::wire::Op cause) {
    socket.unix_socket = true;
    if (endpoint.inode != 0) socket.inode = endpoint.inode;
    if (endpoint.peer_inode != 0) socket.peer_inode = endpoint.peer_inode;
    socket.local = UnixName(endpoint.local);
    bool named_peer =
        endpoint.peer.family == capture::wire::kFamilyUnix && !endpoint.peer.path.empty();
    if (named_peer) socket.peer = capture::FormatAddress(endpoint.peer);
    if (cause == capture::wire::kOpBind ||
        (cause == capture::wire::kOpNone && !endpoint.local.path.empty() && !named_peer)) {
      socket.bound = true;
    }
  }

  void DropUnnamedDatagrams(int32_t fd) {
    auto pending = unnamed_datagrams_.find(fd);
    if (pending == unnamed_datagrams_.end()) return;
    counts_.unnamed_io += pending->second.size();
    unnamed_datagrams_.erase(pending);
  }

  void AddDatagram(const Event& e, int32_t udp) {
    const DatagramSocket& socket = udp_sockets_[size_t(udp)];
    reconcile::Datagram d{.socket = uint32_t(udp),
                          .entry_ns = e.entry_ns + offset_,
                          .exit_ns = e.exit_ns + offset_,
                          .bytes = e.result,
                          .hash = e.payload_hash,
                          .peer = socket.peer,
                          .peer_port = socket.peer_port,
                          .tid = e.tid,
                          .log = log_index_,
                          .payload = e.payload,
                          .send = capture::IsSendOp(e.op)};
    const capture::Address* given = e.peer >= 0 && size_t(e.peer) < log_.addresses.size()
                                        ? &log_.addresses[size_t(e.peer)]
                                        : nullptr;
    if (socket.unix_socket) {
      // The address a send gave, or where a receive came from ("unix:" from an unbound
      // sender: the kernel gives no address then).
      bool named = given != nullptr && given->family == capture::wire::kFamilyUnix;
      if (named && (!d.send || !given->path.empty())) d.peer = UnixName(*given);
      if (d.peer.empty()) d.peer = "unix:";
    } else if (given != nullptr && IsInternet(*given)) {
      d.peer = FormattedInternet(*given);
      d.peer_port = given->port;
    }
    last_datagram_[udp] = datagrams_.size();
    datagrams_.push_back(std::move(d));
  }

  // A datagram's address as text. Every datagram record carries its own address, but a
  // socket talks to few peers, and inet_ntop (sprintf inside) was a tenth of reconciling
  // a DNS run, so each distinct address is formatted once per log.
  const std::string& FormattedInternet(const capture::Address& a) {
    auto [it, inserted] =
        formatted_.try_emplace(std::make_tuple(a.family, a.ip, a.port, a.scope_id));
    if (inserted) it->second = capture::FormatAddress(a);
    return it->second;
  }

  // True if `fd` already names the connection `endpoint` describes (a repeated record).
  bool NamesSameConnection(int32_t fd, const capture::Endpoint& endpoint) const {
    auto it = names_.find(fd);
    if (it == names_.end() || it->second.end < 0) return false;
    const ConnectionEnd& end = ends_[size_t(it->second.end)];
    if (end.unix_socket || end.pipe) return endpoint.inode == end.inode;
    return capture::FormatAddress(endpoint.local) == end.local &&
           capture::FormatAddress(endpoint.peer) == end.peer;
  }

  // A connection this thread connected and now closes without a byte moved (the connect
  // failed: refused, timed out): a connect the thread makes next, before any other I/O or
  // accept, retries it for the same work (a proxy's failover to another backend, another address
  // of the same name), so the new connection's connect is dated from the first attempt.
  // Fragment gives a call to the input whose turn connected its connection; the retry
  // often runs in a later turn, another request's (nghttpx reconnects when the wait that
  // brings the next stream's frame also reports the refusal).
  void NoteUnusedConnect(const Event& e) {
    auto it = names_.find(e.fd);
    if (it == names_.end() || it->second.end < 0 || references_[it->second.end] != 1) return;
    const ConnectionEnd& end = ends_[size_t(it->second.end)];
    // (Of two closed before a connect, the first attempt's time stays.)
    if (end.opener == Opener::kConnect && end.io.empty() && end.open_tid == e.tid)
      unused_connect_.try_emplace(e.tid, end.open_ns);
  }

  // A thread that tries to read an accepted connection before its client sent anything
  // has taken the connection up: a layer-4 proxy connects onward for the client then
  // (haproxy, for each client of an accepted batch in turn, and for a client another of its
  // threads accepted and handed over through a queue capture cannot see), before the
  // request comes (StreamEmitter::SetOpenTimes, infer/fragment).
  // Over TLS, a thread has taken the connection up when it finished the handshake (its
  // last ciphertext before the first plaintext): hitch connects onward for a client then.
  void NoteTakenUp(const Event& e) {
    auto it = names_.find(e.fd);
    if (it == names_.end() || it->second.end < 0) return;
    ConnectionEnd& end = ends_[size_t(it->second.end)];
    const bool handshake = e.op == EventOp::kTlsTransport;
    if (end.opener == Opener::kAccept && end.io.empty() && (end.taken_ns == kNoTime || handshake)) {
      end.taken_ns = e.exit_ns + offset_;
      end.taken_tid = e.tid;
    }
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

  // A protocol message ended: on a stream, where in it; on a UDP socket, in the datagram
  // its call just moved (the record follows that call's).
  void Boundary(const Event& e) {
    if (e.boundary < 0 || size_t(e.boundary) >= log_.boundaries.size()) return;
    const capture::Boundary& b = log_.boundaries[size_t(e.boundary)];
    auto it = names_.find(e.fd);
    bool block = e.op == EventOp::kHeaderBlock;  // header-block bytes: streams only
    if (block && (it == names_.end() || it->second.udp >= 0)) return;
    if (it == names_.end()) {
      auto pending = unnamed_datagrams_.find(e.fd);
      if (pending != unnamed_datagrams_.end() &&
          pending->second.back().event.entry_ns == e.entry_ns) {
        pending->second.back().boundary = e.boundary;
      }
      return;
    }
    if (it->second.udp >= 0) {
      auto last = last_datagram_.find(it->second.udp);
      if (last != last_datagram_.end() &&
          datagrams_[last->second].entry_ns == e.entry_ns + offset_ &&
          datagrams_[last->second].send == b.sent) {
        datagrams_[last->second].boundary = e.boundary;
      }
      return;
    }
    if (it->second.end < 0) return;
    ConnectionEnd& end = ends_[size_t(it->second.end)];
    (e.op == EventOp::kHeaderBlock ? end.header_blocks : end.boundaries)
        .push_back(StreamBoundary{.offset = int64_t(b.offset),
                                  .send = b.sent,
                                  .request = b.request,
                                  .protocol = b.protocol,
                                  .log = log_index_,
                                  .boundary = e.boundary});
  }

  void Io(const Event& e) {
    if (e.result == -EAGAIN && capture::IsRecvOp(e.op)) NoteTakenUp(e);
    if (e.result <= 0) return;  // failed, or end of stream
    // The thread went on to other work: no retry follows.
    if (!unused_connect_.empty()) unused_connect_.erase(e.tid);
    // A peek leaves the bytes in the socket: the next receive moves them.
    bool flags_arg =
        e.op == EventOp::kRecv || e.op == EventOp::kRecvfrom || e.op == EventOp::kRecvmsg;
    if (flags_arg && (e.arg & MSG_PEEK) != 0) return;
    auto it = names_.find(e.fd);
    if (it == names_.end()) {
      // The first datagram sent on a socket nobody bound is named by the endpoint record
      // that follows it (the kernel bound the socket at that send): kept until then.
      if (e.datagram) {
        unnamed_datagrams_[e.fd].push_back({e, capture::kNone});
      } else {
        ++counts_.unnamed_io;
      }
      return;
    }
    if (it->second.udp >= 0 && e.datagram) {
      AddDatagram(e, it->second.udp);
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
  std::vector<DatagramSocket>& udp_sockets_;
  std::vector<reconcile::Datagram>& datagrams_;
  ConnectionTableCounts& counts_;
  std::unordered_map<int32_t, DescriptorName> names_;
  std::unordered_map<int32_t, int32_t> references_;     // end -> descriptors naming it
  std::unordered_map<int32_t, TimeNs> unused_connect_;  // tid -> NoteUnusedConnect's time
  // tid -> the descriptor its latest accept or connect call made, and the call's entry
  std::unordered_map<int32_t, std::pair<int32_t, TimeNs>> opening_call_;
  std::unordered_map<int32_t, size_t> last_datagram_;  // datagram socket -> its latest datagram
  struct PendingDatagram {
    Event event;
    int32_t boundary;
  };
  std::unordered_map<int32_t, std::vector<PendingDatagram>> unnamed_datagrams_;  // fd -> ...
  std::map<std::tuple<capture::wire::AddressFamily, std::array<uint8_t, 16>, uint16_t, uint32_t>,
           std::string>
      formatted_;
};

}  // namespace

void CollectConnectionEnds(const capture::EventLog& log, uint32_t log_index,
                           TimeNs realtime_offset_ns, std::vector<ConnectionEnd>& ends,
                           std::vector<DatagramSocket>& udp_sockets,
                           std::vector<Datagram>& datagrams, ConnectionTableCounts& counts) {
  DescriptorWalker(log, log_index, realtime_offset_ns, ends, udp_sockets, datagrams, counts).Walk();
}

namespace {

// Capture counts a connection's stream offsets per process: a forked child goes on from
// its parent's count at the fork, which holds only the bytes the parent itself moved
// (docs/capture.md "Protocols"). When children of one server answer a connection in turn
// (a CGI per request), each child's boundaries fall short by what its elder siblings sent.
// For a child of the process that owns the end, each direction's boundaries are moved by
// what the stream carried before the child's first byte, less what the owner itself had
// moved when it forked: exact when the child's bytes in a direction are not interleaved
// with another process's. A postgres backend, first to use the socket its postmaster
// accepted, moves by 0. Grandchildren are left as they are.
void RebaseChildBoundaries(const ConnectionEnd& owner, ConnectionEnd& child) {
  for (bool send : {true, false}) {
    TimeNs first = kNoTime;
    for (const StreamIo& io : child.io) {
      if (io.send == send && (first == kNoTime || io.entry_ns < first)) first = io.entry_ns;
    }
    if (first == kNoTime) continue;
    int64_t before = 0, owner_at_fork = 0;
    for (const StreamIo& io : owner.io) {
      if (io.send != send) continue;
      if (io.entry_ns < first) before += io.bytes;
      if (io.log == owner.log && io.entry_ns < child.open_ns) owner_at_fork += io.bytes;
    }
    for (StreamBoundary& b : child.boundaries) {
      if (b.send == send) b.offset += before - owner_at_fork;
    }
    for (StreamBoundary& b : child.header_blocks) {
      if (b.send == send) b.offset += before - owner_at_fork;
    }
  }
}

}  // namespace

void MergeInheritedEnds(std::span<const capture::EventLog> logs, std::vector<ConnectionEnd>& ends) {
  std::vector<size_t> order(ends.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // An accepted or connected end from the start of its call: a child forked while another
  // thread was inside accept (or connect) may hold the socket though its copy is dated
  // before the call returned (its thread ran again only after the fork), and the
  // parent's end must still come first to own the socket.
  auto owned_from = [&](size_t i) {
    const ConnectionEnd& end = ends[i];
    return end.open_call_ns == kNoTime ? end.open_ns : std::min(end.open_call_ns, end.open_ns);
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return owned_from(a) < owned_from(b); });
  // (boot, local, peer) -> the end that currently owns that socket.
  std::map<std::tuple<std::array<uint8_t, 16>, std::string, std::string>, size_t> owner;
  std::vector<size_t> merged_into_me;
  for (size_t i : order) {
    ConnectionEnd& end = ends[i];
    auto key = end.unix_socket || end.pipe
                   ? std::make_tuple(end.boot_id, std::to_string(end.inode),
                                     std::string(end.pipe ? "pipe" : "unix"))
                   : std::make_tuple(end.boot_id, end.local, end.peer);
    auto it = owner.find(key);
    // A pipe's read and write descriptors, in whichever processes hold them, are one
    // stream: writes are its sends, reads its receives.
    bool same_pipe = end.pipe && it != owner.end();
    bool inherited =
        same_pipe ||
        (end.opener == Opener::kUnknown && it != owner.end() &&
         (ends[it->second].close_ns == kNoTime || ends[it->second].close_ns >= end.open_ns) &&
         ends[it->second].log != end.log);
    if (!inherited) {
      owner[key] = i;
      continue;
    }
    ConnectionEnd& parent = ends[it->second];
    const capture::EventLogHeader& child_header = logs[end.log].header;
    if (!end.pipe && child_header.parent_pid == logs[parent.log].header.pid &&
        child_header.boot_id == logs[parent.log].header.boot_id) {
      RebaseChildBoundaries(parent, end);
    }
    parent.io.insert(parent.io.end(), end.io.begin(), end.io.end());
    parent.boundaries.insert(parent.boundaries.end(), end.boundaries.begin(), end.boundaries.end());
    end.boundaries.clear();
    parent.header_blocks.insert(parent.header_blocks.end(), end.header_blocks.begin(),
                                end.header_blocks.end());
    end.header_blocks.clear();
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
