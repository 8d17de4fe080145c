// The threading models share one request path (read, before, calls, after, reply) and
// differ only in which threads run which part of it: see docs/testbed.md.
#include "testbed/server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <system_error>
#include <thread>
#include <vector>

#include "testbed/event_loop.h"
#include "testbed/pipelined_conn.h"
#include "testbed/wire.h"

namespace weft::testbed {
namespace {

struct Job {
  std::shared_ptr<Conn> conn;
  Frame request;
  uint64_t seq = 0;  // the request's number on its connection (Conn::next_request)
  Status status;
};

// A bounded queue: a full queue is refused at once so that overload becomes error replies,
// as a real server sheds load, rather than unbounded memory.
class JobQueue {
 public:
  explicit JobQueue(size_t capacity) : capacity_(capacity) {}
  bool TryPush(Job job) {
    std::lock_guard lock(mu_);
    if (jobs_.size() >= capacity_) return false;
    jobs_.push_back(std::move(job));
    cv_.notify_one();
    return true;
  }
  Job Pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !jobs_.empty(); });
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    return job;
  }

 private:
  size_t capacity_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
};

std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng(uint64_t(WallNow()) ^ (uint64_t(CurrentThreadId()) << 20));
  return rng;
}

class Server {
 public:
  Server(const Topology& topo, int tier, int index, std::unique_ptr<TruthLog> log)
      : topo_(topo),
        tier_(topo.tiers[tier]),
        spec_(tier_.servers[index]),
        log_(std::move(log)),
        balancer_(topo, spec_.name) {}

  [[noreturn]] void Run(int listen_fd);

 private:
  uint64_t NewCallId() { return (uint64_t(getpid()) << 32) | ++next_call_; }
  // Reads one frame: a request to serve, one already answered with an error reply, or
  // the end of the connection (end of stream, reset, or a malformed frame). Blocking: for
  // thread per connection, whose thread has nothing else to do.
  enum class Read { kRequest, kRejected, kClosed };
  Read ReadRequest(Conn& conn, Frame* request, uint64_t* seq);
  // Logs a request just read and numbers it on its connection (`seq`, for in-order HTTP
  // replies); one of an unknown type is answered with an error reply (kRejected). Never
  // kClosed. Sets request.close on the request after which the server closes the
  // connection (http_close_after).
  Read Admit(Conn& conn, Frame& request, size_t bytes, uint64_t* seq);
  // The pool models' dispatcher turn for one readable connection: reads what the socket
  // holds without blocking and queues every whole request. false when the connection
  // ended (end of stream, reset, malformed frame) and must be forgotten.
  bool Dispatch(const std::shared_ptr<Conn>& conn, JobQueue& queue);
  void Refuse(Job& job, std::string_view why);
  // Answers request number `seq` of `conn`; on HTTP after every earlier request's reply.
  void Reply(Conn& conn, const Frame& request, uint64_t seq, const Status& status);
  Status Downstream(const Frame& request);
  Status CallGroup(const Frame& request, const CallSpec& spec, uint32_t count);
  // The spawn model's call group: each call on a std::thread spawned for it, all of them
  // started before any is joined (a parallel group) and all joined before it returns.
  Status CallGroupOnThreads(const Frame& request, const CallSpec& spec, uint32_t count);
  Result<std::unique_ptr<Conn>> GetConn(int tier);
  void PutConn(std::unique_ptr<Conn> conn);
  // A call frame nested in `request`, to `spec`'s request type.
  Frame NewCall(const Frame& request, const CallSpec& spec);
  // With tier_.pipeline > 1 calls to TCP tiers share pooled connections, up to
  // tier_.pipeline calls in flight on each.
  bool Pipelines(int tier) const {
    return tier_.pipeline > 1 && !topo_.tiers[tier].udp && !in_child_;
  }
  // A pooled connection to a server of `tier` with a slot reserved for one call: the
  // first open one with room, else a new one.
  Result<std::shared_ptr<PipelinedConn>> GetPipelined(int tier);
  Status PipelinedCallGroup(const Frame& request, const CallSpec& spec, uint32_t count);
  const RequestType& TypeOf(const Frame& f) const { return tier_.requests[f.request_type]; }

  void ServeConnection(std::shared_ptr<Conn> conn);  // thread per connection, fork, spawn
  // Before, calls, after and the reply of one request read from `conn`.
  void ServeRequest(Conn& conn, const Frame& request, uint64_t seq);
  // The fork model: a child process serves the request and exits; the caller waits.
  void ServeInChild(Conn& conn, const Frame& request, uint64_t seq);
  [[noreturn]] void RunUdp(int fd);  // threads sharing one UDP socket
  void RunPipeline(int listen_fd);   // dispatcher and stages

  const Topology& topo_;
  const Tier& tier_;
  const ServerSpec& spec_;
  std::unique_ptr<TruthLog> log_;
  // Set in a fork model's child, which has one thread: it takes no lock that another
  // thread of the parent may have held at the fork (the connection pools), so it calls
  // downstream on connections of its own, one per call, and never pipelines.
  bool in_child_ = false;
  std::atomic<uint32_t> next_call_{0};
  Balancer balancer_;
  std::mutex pool_mu_;
  std::map<std::pair<int, int>, std::vector<std::unique_ptr<Conn>>> pool_;  // (tier, server)
  std::map<std::pair<int, int>, std::vector<std::shared_ptr<PipelinedConn>>> pipelined_;
};

Server::Read Server::ReadRequest(Conn& conn, Frame* request, uint64_t* seq) {
  size_t bytes = 0;
  Result<std::optional<Frame>> f = ReadConnFrame(conn, &bytes);
  if (!f.ok()) {
    fmt::print(stderr, "{}: connection from {}: {}; closing it\n", spec_.name, conn.peer,
               f.status().message());
    return Read::kClosed;
  }
  if (!f->has_value()) return Read::kClosed;
  *request = **f;
  return Admit(conn, *request, bytes, seq);
}

Server::Read Server::Admit(Conn& conn, Frame& request, size_t bytes, uint64_t* seq) {
  *seq = conn.next_request++;
  if (conn.http && tier_.http_close_after > 0 && *seq + 1 >= tier_.http_close_after) {
    request.close = true;
  }
  bool known = request.type == FrameType::kRequest && request.request_type < tier_.requests.size();
  log_->Record(TruthLog::Direction::kRecv, request, conn, bytes,
               known ? std::string_view(TypeOf(request).name) : "?", WallNow());
  if (!known) {
    // A well-framed but meaningless request gets an error reply; the connection stays.
    fmt::print(stderr, "{}: request of type {} kind {} from {} is not served here\n", spec_.name,
               request.request_type, int(request.type), conn.peer);
    Frame bad = request;
    bad.request_type = 0;
    Reply(conn, bad, *seq, Status::InvalidArgument("unknown request"));
    return Read::kRejected;
  }
  return Read::kRequest;
}

bool Server::Dispatch(const std::shared_ptr<Conn>& conn, JobQueue& queue) {
  // Never blocks: a peer that sent half a frame and stalled leaves it in conn->rbuf until
  // the rest arrives, and the dispatcher serves other connections meanwhile.
  Result<bool> open = ReadAvailable(*conn);
  if (!open.ok()) {
    fmt::print(stderr, "{}: connection from {}: {}; closing it\n", spec_.name, conn->peer,
               open.status().message());
    return false;
  }
  while (true) {
    Job job;
    size_t bytes = 0;
    Result<bool> taken = TakeMessage(conn->rbuf, conn->http, &job.request, &bytes);
    if (!taken.ok()) {
      fmt::print(stderr, "{}: connection from {}: {}; closing it\n", spec_.name, conn->peer,
                 taken.status().message());
      return false;
    }
    if (!*taken) break;
    bool admitted = Admit(*conn, job.request, bytes, &job.seq) == Read::kRequest;
    // After a request that closes the connection nothing more is read from it: its reply
    // is the last, and the connection closes when its last reply is out.
    bool closing = job.request.close;
    job.conn = conn;
    if (admitted && !queue.TryPush(job)) Refuse(job, "queue full");
    if (closing) return false;
  }
  if (!*open && !conn->rbuf.empty()) {
    fmt::print(stderr, "{}: connection from {}: end of stream inside a message ({} bytes)\n",
               spec_.name, conn->peer, conn->rbuf.size());
  }
  return *open;
}

void Server::Refuse(Job& job, std::string_view why) {
  fmt::print(stderr, "{}: request {:x}: {}\n", spec_.name, job.request.request_id, why);
  Reply(*job.conn, job.request, job.seq, Status::OutOfRange("{}", why));
}

void Server::Reply(Conn& conn, const Frame& request, uint64_t seq, const Status& status) {
  Frame reply = request;
  reply.type = status.ok() ? FrameType::kReply : FrameType::kError;
  uint32_t size = status.ok() ? TypeOf(request).reply_bytes : uint32_t(kPayloadHeader);
  std::string wire = EncodeMessage(reply, size, conn.http, tier_.http_chunked);
  std::lock_guard lock(conn.write_mu);
  for (const auto& [frame, bytes] : ReleaseReply(conn, seq, reply, std::move(wire))) {
    log_->Record(TruthLog::Direction::kSend, frame, conn, bytes.size(), "-", WallNow());
    Status w = WriteAll(conn.fd, bytes);
    if (!w.ok()) fmt::print(stderr, "{}: reply to {}: {}\n", spec_.name, conn.peer, w.message());
    // "Connection: close" was the last reply: the peer sees the end of stream at once,
    // while queued work may still hold the connection open.
    if (frame.close) shutdown(conn.fd, SHUT_WR);
  }
}

Result<std::unique_ptr<Conn>> Server::GetConn(int tier) {
  const Tier& t = topo_.tiers[tier];
  int server = balancer_.Pick(tier);
  if (tier_.pooled && !in_child_) {
    std::lock_guard lock(pool_mu_);
    auto& idle = pool_[{tier, server}];
    if (!idle.empty()) {
      std::unique_ptr<Conn> c = std::move(idle.back());
      idle.pop_back();
      return c;
    }
  }
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Conn> c,
                        ConnectLoopback(t.servers[server].port, topo_.io_timeout, t.udp));
  c->target = tier * 1000 + server;
  c->http = t.http;
  return c;
}

void Server::PutConn(std::unique_ptr<Conn> conn) {
  if (!tier_.pooled || in_child_) return;  // per-request connections close here
  std::lock_guard lock(pool_mu_);
  pool_[{conn->target / 1000, conn->target % 1000}].push_back(std::move(conn));
}

Status Server::CallGroup(const Frame& request, const CallSpec& spec, uint32_t count) {
  if (Pipelines(spec.tier)) return PipelinedCallGroup(request, spec, count);
  const RequestType& callee = topo_.tiers[spec.tier].requests[spec.request];
  // A parallel group sends every call before awaiting any reply, each on its own
  // connection; a sequential group of one is the same code with count 1.
  std::vector<std::pair<std::unique_ptr<Conn>, Frame>> calls;
  for (uint32_t k = 0; k < count; ++k) {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Conn> conn, GetConn(spec.tier));
    Frame call = NewCall(request, spec);
    std::string wire = EncodeMessage(call, callee.request_bytes, conn->http);
    log_->Record(TruthLog::Direction::kSend, call, *conn, wire.size(), callee.name, WallNow());
    WEFT_RETURN_IF_ERROR(WriteAll(conn->fd, wire).WithContext(conn->peer));
    calls.emplace_back(std::move(conn), call);
  }
  Status result;
  for (auto& [conn, call] : calls) {
    size_t bytes = 0;
    Result<std::optional<Frame>> reply = ReadConnFrame(*conn, &bytes);
    if (!reply.ok() || !reply->has_value()) {
      return Status::IoError("{} from {}", reply.ok() ? "end of stream" : reply.status().message(),
                             conn->peer);
    }
    const Frame& r = **reply;
    log_->Record(TruthLog::Direction::kRecv, r, *conn, bytes, "-", WallNow());
    if (r.call_id != call.call_id) {
      return Status::Corruption("reply for call {:x} while awaiting {:x}", r.call_id, call.call_id);
    }
    if (r.type == FrameType::kError && result.ok()) {
      result = Status::Internal("{} answered with an error", conn->peer);
    }
    if (!r.close) PutConn(std::move(conn));  // the server closes it after this reply
  }
  return result;
}

Frame Server::NewCall(const Frame& request, const CallSpec& spec) {
  Frame call;
  call.type = FrameType::kRequest;
  call.request_type = uint16_t(spec.request);
  call.request_id = request.request_id;
  call.call_id = NewCallId();
  call.parent_call = request.call_id;
  // HTTP: a connection that is not pooled is closed after its call, so say so.
  call.close = !tier_.pooled || in_child_;
  return call;
}

Result<std::shared_ptr<PipelinedConn>> Server::GetPipelined(int tier) {
  int server = balancer_.Pick(tier);
  {
    std::lock_guard lock(pool_mu_);
    auto& open = pipelined_[{tier, server}];
    std::erase_if(open, [](const auto& c) { return c->broken(); });
    // First fit, not least loaded: calls pack onto few connections, as pipelining
    // clients do, so that connections really carry several calls at once.
    for (const std::shared_ptr<PipelinedConn>& c : open) {
      if (c->TryReserve(tier_.pipeline)) return c;
    }
  }
  const Tier& t = topo_.tiers[tier];
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Conn> conn,
                        ConnectLoopback(t.servers[server].port, topo_.io_timeout));
  conn->http = t.http;
  std::shared_ptr<PipelinedConn> c = PipelinedConn::Start(std::move(conn), *log_);
  (void)c->TryReserve(tier_.pipeline);  // a fresh connection has room
  std::lock_guard lock(pool_mu_);
  pipelined_[{tier, server}].push_back(c);
  return c;
}

Status Server::PipelinedCallGroup(const Frame& request, const CallSpec& spec, uint32_t count) {
  const RequestType& callee = topo_.tiers[spec.tier].requests[spec.request];
  // As CallGroup: every call of a parallel group goes out before any reply is awaited;
  // here calls may share a connection, their own or another worker's.
  std::vector<std::pair<std::shared_ptr<PipelinedConn>, std::shared_ptr<PipelinedConn::Pending>>>
      calls;
  for (uint32_t k = 0; k < count; ++k) {
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<PipelinedConn> conn, GetPipelined(spec.tier));
    Frame call = NewCall(request, spec);
    std::string wire = EncodeMessage(call, callee.request_bytes, conn->conn().http);
    WEFT_ASSIGN_OR_RETURN(auto pending, conn->Send(call, wire, callee.name));
    calls.emplace_back(std::move(conn), std::move(pending));
  }
  Status result;
  for (auto& [conn, pending] : calls) {
    WEFT_ASSIGN_OR_RETURN(Frame reply, conn->Await(pending));
    if (reply.type == FrameType::kError && result.ok()) {
      result = Status::Internal("{} answered with an error", conn->conn().peer);
    }
  }
  return result;
}

Status Server::CallGroupOnThreads(const Frame& request, const CallSpec& spec, uint32_t count) {
  std::vector<Status> results(count);
  std::vector<std::thread> threads;
  threads.reserve(count);
  Status spawned;
  for (uint32_t k = 0; k < count; ++k) {
    try {
      threads.emplace_back(
          [this, &request, &spec, &results, k] { results[k] = CallGroup(request, spec, 1); });
    } catch (const std::system_error& e) {  // no thread to be had: the calls made so far finish
      spawned = Status::IoError("spawning a thread for a call: {}", e.what());
      break;
    }
  }
  for (std::thread& t : threads) t.join();
  WEFT_RETURN_IF_ERROR(spawned);
  for (const Status& s : results) WEFT_RETURN_IF_ERROR(s);
  return Status::Ok();
}

Status Server::Downstream(const Frame& request) {
  const RequestType& rt = TypeOf(request);
  auto call_group = [&](const CallSpec& spec, uint32_t count) {
    return spec_.model == ThreadingModel::kSpawn ? CallGroupOnThreads(request, spec, count)
                                                 : CallGroup(request, spec, count);
  };
  bool first = true;
  for (const CallSpec& spec : rt.calls) {
    uint32_t n = std::uniform_int_distribution<uint32_t>(spec.min_count, spec.max_count)(Rng());
    if (spec.parallel) {
      if (n == 0) continue;
      if (!first) Serve(rt.between.Sample(Rng()));
      first = false;
      WEFT_RETURN_IF_ERROR(call_group(spec, n));
      continue;
    }
    for (uint32_t k = 0; k < n; ++k) {
      if (!first) Serve(rt.between.Sample(Rng()));
      first = false;
      WEFT_RETURN_IF_ERROR(call_group(spec, 1));
    }
  }
  return Status::Ok();
}

void Server::ServeConnection(std::shared_ptr<Conn> conn) {
  Frame request;
  uint64_t seq = 0;
  while (true) {
    // Wait for the next request without a timeout (a pooled connection may idle), then
    // read it under the socket's timeout. Pipelined HTTP requests may already sit in the
    // connection's buffer, with nothing more to come on the socket: no wait for those.
    if (conn->rbuf.empty()) {
      pollfd p{conn->fd, POLLIN, 0};
      if (poll(&p, 1, -1) < 0 && errno != EINTR) return;
    }
    Read r = ReadRequest(*conn, &request, &seq);
    if (r == Read::kClosed || (r == Read::kRejected && request.close)) return;
    if (r == Read::kRejected) continue;
    if (spec_.model == ThreadingModel::kFork) {
      ServeInChild(*conn, request, seq);
    } else {
      ServeRequest(*conn, request, seq);
    }
    if (request.close) return;  // Connection: close, from the peer or http_close_after
  }
}

void Server::ServeRequest(Conn& conn, const Frame& request, uint64_t seq) {
  const RequestType& rt = TypeOf(request);
  Serve(rt.before.Sample(Rng()));
  Status s = Downstream(request);
  if (!s.ok())
    fmt::print(stderr, "{}: request {:x}: {}\n", spec_.name, request.request_id, s.message());
  if (s.ok()) Serve(rt.after.Sample(Rng()));
  Reply(conn, request, seq, s);
}

// A CGI as a web server runs one (BorderPatrol §5.5's example): the child gets the request
// through the memory it shares with its parent at the fork, not through any message, and
// answers on the client connection it inherited.
void Server::ServeInChild(Conn& conn, const Frame& request, uint64_t seq) {
  pid_t child = fork();
  if (child == 0) {
    in_child_ = true;
    // Dies with the server, by the signal that stops servers, so that a tracer gets to
    // write down what it saw (weft capture does so on SIGTERM).
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    Rng().seed(uint64_t(WallNow()) ^ uint64_t(getpid()));  // not the parent thread's sequence
    ServeRequest(conn, request, seq);
    _exit(0);
  }
  if (child < 0) {
    Reply(conn, request, seq, Status::IoError("fork: {}", std::strerror(errno)));
    return;
  }
  while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
  }
  // The child released this reply in its own copy of the connection; the next is ours.
  std::lock_guard lock(conn.write_mu);
  conn.next_reply = seq + 1;
}

void Server::RunPipeline(int listen_fd) {
  // The stages of each model; the last one replies. worker-pool keeps one thread per
  // request from downstream calls to reply; handoff and staged move it between threads.
  std::vector<std::function<void(Job&)>> stages;
  auto before = [this](Job& j) { Serve(TypeOf(j.request).before.Sample(Rng())); };
  auto calls = [this](Job& j) {
    j.status = Downstream(j.request);
    if (!j.status.ok()) {
      fmt::print(stderr, "{}: request {:x}: {}\n", spec_.name, j.request.request_id,
                 j.status.message());
    }
  };
  auto reply = [this](Job& j) {
    if (j.status.ok()) Serve(TypeOf(j.request).after.Sample(Rng()));
    Reply(*j.conn, j.request, j.seq, j.status);
  };
  switch (spec_.model) {
    case ThreadingModel::kWorkerPool:
      stages.push_back([=](Job& j) {
        before(j);
        calls(j);
        reply(j);
      });
      break;
    case ThreadingModel::kHandoff:
      stages.push_back([=](Job& j) {
        before(j);
        calls(j);
      });
      stages.push_back(reply);
      break;
    default:
      stages.push_back(before);
      stages.push_back(calls);
      stages.push_back(reply);
      break;
  }
  std::vector<std::unique_ptr<JobQueue>> queues;
  for (size_t i = 0; i < stages.size(); ++i) {
    queues.push_back(std::make_unique<JobQueue>(spec_.queue_capacity));
  }
  for (size_t i = 0; i < stages.size(); ++i) {
    for (uint32_t w = 0; w < spec_.workers; ++w) {
      std::thread([&, i] {
        while (true) {
          Job job = queues[i]->Pop();
          if (job.status.ok() || i + 1 == stages.size()) stages[i](job);
          if (i + 1 < stages.size() && !queues[i + 1]->TryPush(job)) Refuse(job, "queue full");
        }
      }).detach();
    }
  }
  int ep = epoll_create1(EPOLL_CLOEXEC);
  std::mutex conns_mu;
  std::map<int, std::shared_ptr<Conn>> conns;
  std::thread([&] {
    while (true) {
      int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      auto conn = std::make_shared<Conn>(fd);
      conn->http = tier_.http;
      (void)SetTimeouts(fd, topo_.io_timeout);
      {
        std::lock_guard lock(conns_mu);
        conns[fd] = conn;
      }
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
  }).detach();
  // The dispatcher: per ready connection, one non-blocking read and every whole request it
  // completes queued; a partial message waits in the connection's buffer.
  epoll_event events[64];
  while (true) {
    int n = epoll_wait(ep, events, 64, -1);
    for (int k = 0; k < n; ++k) {
      std::shared_ptr<Conn> conn;
      {
        std::lock_guard lock(conns_mu);
        auto it = conns.find(events[k].data.fd);
        if (it == conns.end()) continue;
        conn = it->second;
      }
      if (!Dispatch(conn, *queues[0])) {
        // Jobs still queued hold the connection, so their replies can still be written.
        epoll_ctl(ep, EPOLL_CTL_DEL, conn->fd, nullptr);
        std::lock_guard lock(conns_mu);
        conns.erase(conn->fd);
      }
    }
  }
}

void Server::RunUdp(int fd) {
  auto serve = [this, fd] {
    sockaddr_in self{};
    socklen_t len = sizeof self;
    getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len);
    std::string buf(65536, '\0');
    while (true) {
      sockaddr_in peer{};
      len = sizeof peer;
      ssize_t r = recvfrom(fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&peer), &len);
      if (r < 0) continue;
      Conn from(-1);  // only the endpoints, for the truth log: the socket is shared
      char ip[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &self.sin_addr, ip, sizeof ip);
      from.local = fmt::format("{}:{}", ip, ntohs(self.sin_port));
      inet_ntop(AF_INET, &peer.sin_addr, ip, sizeof ip);
      from.peer = fmt::format("{}:{}", ip, ntohs(peer.sin_port));
      Result<Frame> f = DecodeDatagram(std::string_view(buf.data(), size_t(r)));
      if (!f.ok()) {
        fmt::print(stderr, "{}: datagram from {}: {}\n", spec_.name, from.peer,
                   f.status().message());
        continue;
      }
      Frame request = *f;
      bool known =
          request.type == FrameType::kRequest && request.request_type < tier_.requests.size();
      log_->Record(TruthLog::Direction::kRecv, request, from, size_t(r),
                   known ? std::string_view(TypeOf(request).name) : "?", WallNow());
      Status s;
      if (!known) {
        request.request_type = 0;
        s = Status::InvalidArgument("unknown request");
        fmt::print(stderr, "{}: request of type {} from {} is not served here\n", spec_.name,
                   f->request_type, from.peer);
      } else {
        const RequestType& rt = TypeOf(request);
        Serve(rt.before.Sample(Rng()));
        s = Downstream(request);
        if (!s.ok())
          fmt::print(stderr, "{}: request {:x}: {}\n", spec_.name, request.request_id, s.message());
        if (s.ok()) Serve(rt.after.Sample(Rng()));
      }
      Frame reply = request;
      reply.type = s.ok() ? FrameType::kReply : FrameType::kError;
      std::string wire =
          EncodeFrame(reply, s.ok() ? TypeOf(request).reply_bytes : uint32_t(kPayloadHeader));
      log_->Record(TruthLog::Direction::kSend, reply, from, wire.size(), "-", WallNow());
      sendto(fd, wire.data(), wire.size(), 0, reinterpret_cast<sockaddr*>(&peer), len);
    }
  };
  for (uint32_t w = 1; w < spec_.workers; ++w) std::thread(serve).detach();
  serve();
  std::abort();  // serve() never returns
}

void Server::Run(int listen_fd) {
  if (tier_.udp) RunUdp(listen_fd);
  if (spec_.model != ThreadingModel::kThreadPerConnection && spec_.model != ThreadingModel::kFork &&
      spec_.model != ThreadingModel::kSpawn) {
    RunPipeline(listen_fd);
  }
  while (true) {
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EINTR) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    auto conn = std::make_shared<Conn>(fd);
    conn->http = tier_.http;
    (void)SetTimeouts(fd, topo_.io_timeout);
    std::thread([this, conn] { ServeConnection(conn); }).detach();
  }
}

}  // namespace

Status RunServer(const Topology& topology, int tier, int index, int listen_fd,
                 const std::string& truth_dir) {
  if (tier < 0 || size_t(tier) >= topology.tiers.size() || index < 0 ||
      size_t(index) >= topology.tiers[tier].servers.size()) {
    return Status::InvalidArgument("no server {} in tier {}", index, tier);
  }
  WEFT_ASSIGN_OR_RETURN(auto log,
                        TruthLog::Open(truth_dir, topology.tiers[tier].servers[index].name));
  if (!topology.tiers[tier].udp &&
      topology.tiers[tier].servers[index].model == ThreadingModel::kEventLoop) {
    RunEventLoop(topology, tier, index, listen_fd, *log);
  }
  Server server(topology, tier, index, std::move(log));
  server.Run(listen_fd);
}

}  // namespace weft::testbed
