// The threading models share one request path: a request is read and admitted (Admit),
// then RunStep runs its steps (before, calls, after and reply) on it. The models differ
// only in which threads read and which run which steps: see docs/testbed.md.
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
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "testbed/accept.h"
#include "testbed/downstream.h"
#include "testbed/event_loop.h"
#include "testbed/instrumentation.h"
#include "testbed/pipelined_conn.h"
#include "testbed/wire.h"

namespace weft::testbed {
namespace {

// While alive (and `active`), SIGTERM waits in this thread; it is delivered once the
// object is gone.
class SigtermHeldBack {
 public:
  explicit SigtermHeldBack(bool active) : active_(active) {
    if (!active_) return;
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    active_ = pthread_sigmask(SIG_BLOCK, &term, &saved_) == 0;
  }
  ~SigtermHeldBack() {
    if (active_) pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
  }
  SigtermHeldBack(const SigtermHeldBack&) = delete;
  SigtermHeldBack& operator=(const SigtermHeldBack&) = delete;

 private:
  bool active_;
  sigset_t saved_;
};

// One request on its way through the request path. Every threading model runs the same
// steps on it (RunStep); the models differ only in which threads run which steps.
struct Job {
  std::shared_ptr<Conn> conn;
  Frame request;
  uint64_t seq = 0;  // the request's number on its connection (Conn::next_request)
  Status status;     // the first failure of a step; a failed request gets an error reply
  // UDP: the reply goes by sendto on the tier's one socket to the datagram's sender, and
  // `conn` holds only the endpoints, for the truth log.
  int datagram_fd = -1;
  sockaddr_in datagram_peer{};
  // Pivot Tracing: the request's baggage, installed while a thread runs its steps (and
  // never while the job moves), and when it arrived and was last queued (Testbed.Reply's
  // latency, Testbed.QueueWait). Empty until Admit.
  RequestBaggage bag;
  TimeNs received = 0;
  TimeNs queued = 0;
};

// The request path: the before service time, the downstream calls, then the after service
// time (when the calls succeeded) and the reply.
enum class Step { kBefore, kCalls, kReply };
constexpr Step kEverySteps[] = {Step::kBefore, Step::kCalls, Step::kReply};

// A pool model's stages: each stage has its own queue and `workers` threads and runs its
// steps on each job. worker-pool keeps one thread per request from the calls to the reply;
// handoff and staged move it between threads (docs/testbed.md, "Threading models").
std::vector<std::vector<Step>> StagesOf(ThreadingModel model) {
  switch (model) {
    case ThreadingModel::kWorkerPool:
      return {{Step::kBefore, Step::kCalls, Step::kReply}};
    case ThreadingModel::kHandoff:
      return {{Step::kBefore, Step::kCalls}, {Step::kReply}};
    default:
      return {{Step::kBefore}, {Step::kCalls}, {Step::kReply}};
  }
}

bool IsPoolModel(ThreadingModel model) {
  return model != ThreadingModel::kThreadPerConnection && model != ThreadingModel::kFork &&
         model != ThreadingModel::kSpawn;
}

// A bounded queue: a full queue is refused at once so that overload becomes error replies,
// as a real server sheds load, rather than unbounded memory.
class JobQueue {
 public:
  explicit JobQueue(size_t capacity) : capacity_(capacity) {}
  // Takes `job` if there is room; else leaves it as it was, for its error reply.
  bool TryPush(Job& job) {
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
        spec_index_(index),
        called_by_servers_(tier > 0),
        log_(std::move(log)),
        caller_(topo, tier_, spec_, *log_) {}

  // Serves until the process is killed. Returns only on an error: at setup, or when the
  // listening socket fails for good. Threads it started may still run then.
  Status Run(int listen_fd);

 private:
  // --- The request path, shared by every threading model.
  void RunStep(Step step, Job& job);
  // Every step, on the calling thread.
  void ServeRequest(Job& job) {
    for (Step step : kEverySteps) RunStep(step, job);
  }
  // Logs a request just read and numbers it on its connection (job.seq, for in-order HTTP
  // replies). false when it is of an unknown type: it is answered at once with an error
  // reply. Sets close on the request after which the server closes the connection
  // (http_close_after).
  bool Admit(Job& job, size_t bytes);
  void Refuse(Job& job, std::string_view why);
  // Answers job.request with job.status; on HTTP after every earlier request's reply.
  void Reply(Job& job);

  const RequestType& TypeOf(const Frame& f) const { return tier_.requests[f.request_type]; }

  // --- The threading models: who runs the request path.
  // Accepts connections until the listening socket fails for good, handing each, with
  // its timeouts set, to `take`.
  Status AcceptLoop(int listen_fd, const std::function<void(std::shared_ptr<Conn>)>& take);
  // Thread per connection, fork, spawn: a thread per connection reads its requests one
  // at a time, blocking, and serves each.
  Status RunThreadPerConnection(int listen_fd);
  void ServeConnection(std::shared_ptr<Conn> conn);
  // Reads one request of `conn` into `job`: false at the end of the connection (end of
  // stream, reset, or a malformed frame). Blocking.
  bool ReadRequest(const std::shared_ptr<Conn>& conn, Job* job);
  // The fork model: a child process serves the request and exits; the caller waits.
  void ServeInChild(Job& job);
  // The pool models: a dispatcher thread (epoll) queues requests for the stages' threads.
  Status RunPools(int listen_fd);
  void RunStage(size_t stage);
  [[noreturn]] void RunDispatcher();
  // The dispatcher's turn for one readable connection: reads what the socket holds
  // without blocking and queues every whole request. false when the connection ended (end
  // of stream, reset, malformed frame) and must be forgotten.
  bool Dispatch(const std::shared_ptr<Conn>& conn);
  void Forget(const std::shared_ptr<Conn>& conn);
  // UDP: threads sharing one socket.
  Status RunUdp(int fd);
  // Serves datagrams until the socket fails for good.
  Status ServeDatagrams(int fd, const std::string& local);

  // A failure a thread cannot recover from (epoll or a socket broke): the server exits,
  // as a crashed server would, and the runner or the test sees it gone.
  [[noreturn]] void Die(const Status& why);

  const Topology& topo_;
  const Tier& tier_;
  const ServerSpec& spec_;
  const int spec_index_;  // spec_'s index in its tier
  // Its callers are servers, which keep the baggage its replies carry back (every tier
  // but the first, which the load client calls).
  const bool called_by_servers_;
  std::unique_ptr<TruthLog> log_;
  DownstreamCaller caller_;
  // This process is a fork child serving one request (ThreadingModel::kFork).
  bool forked_child_ = false;
  // The pool models.
  std::vector<std::vector<Step>> stages_;
  std::vector<std::unique_ptr<JobQueue>> queues_;  // one per stage
  int epoll_fd_ = -1;
  std::mutex conns_mu_;
  std::map<int, std::shared_ptr<Conn>> conns_;  // by descriptor, for the dispatcher
};

void Server::Die(const Status& why) {
  fmt::print(stderr, "{}: {}\n", spec_.name, why.message());
  _exit(2);
}

void Server::RunStep(Step step, Job& job) {
  // A failed request skips to its reply.
  if (step != Step::kReply && !job.status.ok()) return;
  const RequestType& rt = TypeOf(job.request);
  RequestBaggageScope baggage(job.bag);
  switch (step) {
    case Step::kBefore: {
      TimeNs service = rt.before.Sample(Rng());
      if (rt.disk_bytes > 0) {
        // The fault slow_server: some of this server's disk reads take longer.
        if (spec_index_ == tier_.slow_server &&
            std::uniform_real_distribution<double>(0, 1)(Rng()) < tier_.slow_share) {
          service += tier_.slow_extra;
        }
        kDiskReadTracepoint.Fire(rt.name, rt.disk_bytes, spec_.name, service,
                                 TimeIfWoven(kDiskReadTracepoint));
      }
      Serve(service);
      return;
    }
    case Step::kCalls:
      job.status = caller_.CallAll(job.request, Rng());
      if (!job.status.ok()) {
        fmt::print(stderr, "{}: request {:x}: {}\n", spec_.name, job.request.request_id,
                   job.status.message());
      }
      return;
    case Step::kReply:
      if (job.status.ok()) Serve(rt.after.Sample(Rng()));
      Reply(job);
      return;
  }
}

bool Server::Admit(Job& job, size_t bytes) {
  Conn& conn = *job.conn;
  Frame& request = job.request;
  job.seq = conn.next_request++;
  if (conn.http && tier_.http_close_after > 0 && job.seq + 1 >= tier_.http_close_after) {
    request.close = true;
  }
  bool known = request.type == FrameType::kRequest && request.request_type < tier_.requests.size();
  log_->Record(TruthLog::Direction::kRecv, request, conn, bytes,
               known ? std::string_view(TypeOf(request).name) : "?", WallNow());
  if (known) {
    // The caller's baggage, deserialized when first used.
    ReceiveBaggage(job.bag, std::move(request.baggage), called_by_servers_);
    job.received = WallNow();
    RequestBaggageScope baggage(job.bag);
    kRequestTracepoint.Fire(TypeOf(request).name, bytes, conn.peer, spec_.name, job.received);
    return true;
  }
  // A well-framed but meaningless request gets an error reply; the connection stays.
  fmt::print(stderr, "{}: request of type {} kind {} from {} is not served here\n", spec_.name,
             request.request_type, int(request.type), conn.peer);
  Job bad{.conn = job.conn,
          .request = job.request,
          .seq = job.seq,
          .datagram_fd = job.datagram_fd,
          .datagram_peer = job.datagram_peer};
  bad.request.request_type = 0;
  bad.status = Status::InvalidArgument("unknown request");
  Reply(bad);
  return false;
}

void Server::Refuse(Job& job, std::string_view why) {
  fmt::print(stderr, "{}: request {:x}: {}\n", spec_.name, job.request.request_id, why);
  job.status = Status::OutOfRange("{}", why);
  Reply(job);
}

void Server::Reply(Job& job) {
  Conn& conn = *job.conn;
  Frame reply = job.request;
  reply.type = job.status.ok() ? FrameType::kReply : FrameType::kError;
  uint32_t size = job.status.ok() ? TypeOf(job.request).reply_bytes : uint32_t(kPayloadHeader);
  // The reply carries the request's baggage back for the caller to join; an error reply,
  // of the header's size only, carries none, nor a reply to a caller that sent none.
  RequestBaggageScope baggage(job.bag);
  const bool carries = job.status.ok() && ReplyCarriesBaggage(job.bag);
  uint64_t packs = 0;
  reply.baggage = carries ? BaggageForReply(packs) : std::string();
  std::string wire = EncodeMessage(reply, size, conn.http, tier_.http_chunked);
  TimeNs now = WallNow();
  kReplyTracepoint.Fire(TypeOf(job.request).name, job.status.ok() ? "ok" : "error", wire.size(),
                        job.received > 0 ? now - job.received : 0, spec_.name, now);
  // What advice packed at this Reply goes back with it too (a caller's `s -> r` join of
  // replies): serialized again, only while advice is woven here, and encoded again only
  // if that advice packed something.
  if (carries && kReplyTracepoint.woven() && BaggageForReplyChanged(reply.baggage, packs)) {
    wire = EncodeMessage(reply, size, conn.http, tier_.http_chunked);
  }
  // A fork child dies by SIGTERM when its server stops (PR_SET_PDEATHSIG). Its reply goes
  // into the truth and onto the wire with SIGTERM held back, so that the truth never holds
  // a reply that was not sent, or whose send the tracer had no time to write down.
  SigtermHeldBack held_back(forked_child_);
  std::lock_guard lock(conn.write_mu);
  for (const auto& [frame, bytes] : ReleaseReply(conn, job.seq, reply, std::move(wire))) {
    log_->Record(TruthLog::Direction::kSend, frame, conn, bytes.size(), "-", WallNow());
    if (job.datagram_fd >= 0) {
      if (sendto(job.datagram_fd, bytes.data(), bytes.size(), 0,
                 reinterpret_cast<const sockaddr*>(&job.datagram_peer),
                 sizeof job.datagram_peer) < 0) {
        fmt::print(stderr, "{}: reply to {}: {}\n", spec_.name, conn.peer, std::strerror(errno));
      }
      continue;
    }
    Status w = WriteAll(conn.fd, bytes);
    if (!w.ok()) fmt::print(stderr, "{}: reply to {}: {}\n", spec_.name, conn.peer, w.message());
    // "Connection: close" was the last reply: the peer sees the end of stream at once,
    // while queued work may still hold the connection open. A peer already gone
    // (ENOTCONN) needs no telling.
    if (frame.close && shutdown(conn.fd, SHUT_WR) != 0 && errno != ENOTCONN) {
      fmt::print(stderr, "{}: shutdown to {}: {}\n", spec_.name, conn.peer, std::strerror(errno));
    }
  }
}

Status Server::AcceptLoop(int listen_fd, const std::function<void(std::shared_ptr<Conn>)>& take) {
  AcceptBackoff backoff;
  while (true) {
    WEFT_ASSIGN_OR_RETURN(int fd, AcceptConnection(listen_fd, spec_.name, backoff));
    auto conn = std::make_shared<Conn>(fd);
    conn->http = tier_.http;
    if (Status s = SetTimeouts(fd, topo_.io_timeout); !s.ok()) {
      fmt::print(stderr, "{}: connection from {}: {}; closing it\n", spec_.name, conn->peer,
                 s.message());
      continue;
    }
    take(std::move(conn));
  }
}

Status Server::RunThreadPerConnection(int listen_fd) {
  return AcceptLoop(listen_fd, [this](std::shared_ptr<Conn> conn) {
    try {
      std::thread([this, conn] { ServeConnection(conn); }).detach();
    } catch (const std::system_error& e) {  // no thread to be had: shed the connection
      fmt::print(stderr, "{}: connection from {}: no thread to serve it ({}); closing it\n",
                 spec_.name, conn->peer, e.what());
    }
  });
}

bool Server::ReadRequest(const std::shared_ptr<Conn>& conn, Job* job) {
  while (true) {
    // Wait for the next request without a timeout (a pooled connection may idle), then
    // read it under the socket's timeout. Pipelined HTTP requests may already sit in the
    // connection's buffer, with nothing more to come on the socket: no wait for those.
    if (conn->rbuf.empty()) {
      pollfd p{conn->fd, POLLIN, 0};
      if (poll(&p, 1, -1) < 0) {
        if (errno == EINTR) continue;
        fmt::print(stderr, "{}: connection from {}: poll: {}; closing it\n", spec_.name, conn->peer,
                   std::strerror(errno));
        return false;
      }
    }
    size_t bytes = 0;
    Result<std::optional<Frame>> f = ReadConnFrame(*conn, &bytes);
    if (!f.ok()) {
      fmt::print(stderr, "{}: connection from {}: {}; closing it\n", spec_.name, conn->peer,
                 f.status().message());
      return false;
    }
    if (!f->has_value()) return false;
    *job = Job{.conn = conn, .request = **f};
    if (Admit(*job, bytes)) return true;
    if (job->request.close) return false;  // rejected, and the connection closes with it
  }
}

void Server::ServeConnection(std::shared_ptr<Conn> conn) {
  Job job;
  while (ReadRequest(conn, &job)) {
    if (spec_.model == ThreadingModel::kFork) {
      ServeInChild(job);
    } else {
      ServeRequest(job);
    }
    if (job.request.close) return;  // Connection: close, from the peer or http_close_after
  }
}

// A CGI as a web server runs one (BorderPatrol §5.5's example): the child gets the request
// through the memory it shares with its parent at the fork, not through any message, and
// answers on the client connection it inherited.
void Server::ServeInChild(Job& job) {
  pid_t child = fork();
  if (child == 0) {
    forked_child_ = true;
    caller_.EnterChild();
    // Dies with the server, by the signal that stops servers, so that a tracer gets to
    // write down what it saw (weft capture does so on SIGTERM).
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) {
      fmt::print(stderr, "{}: prctl: {}\n", spec_.name, std::strerror(errno));
    }
    Rng().seed(uint64_t(WallNow()) ^ uint64_t(getpid()));  // not the parent thread's sequence
    ServeRequest(job);
    _exit(0);
  }
  if (child < 0) {
    job.status = Status::IoError("fork: {}", std::strerror(errno));
    Reply(job);
    return;
  }
  int waited;
  while ((waited = waitpid(child, nullptr, 0)) < 0 && errno == EINTR) {
  }
  if (waited < 0) fmt::print(stderr, "{}: waitpid: {}\n", spec_.name, std::strerror(errno));
  // The child released this reply in its own copy of the connection; the next is ours.
  std::lock_guard lock(job.conn->write_mu);
  job.conn->next_reply = job.seq + 1;
}

Status Server::RunPools(int listen_fd) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return Status::IoError("epoll_create1: {}", std::strerror(errno));
  stages_ = StagesOf(spec_.model);
  for (size_t i = 0; i < stages_.size(); ++i) {
    queues_.push_back(std::make_unique<JobQueue>(spec_.queue_capacity));
  }
  try {
    for (size_t i = 0; i < stages_.size(); ++i) {
      for (uint32_t w = 0; w < spec_.workers; ++w) std::thread([this, i] { RunStage(i); }).detach();
    }
    std::thread([this] { RunDispatcher(); }).detach();
  } catch (const std::system_error& e) {
    return Status::IoError("starting the pool threads: {}", e.what());
  }
  return AcceptLoop(listen_fd, [this](std::shared_ptr<Conn> conn) {
    int fd = conn->fd;
    {
      std::lock_guard lock(conns_mu_);
      conns_[fd] = conn;
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      fmt::print(stderr, "{}: connection from {}: epoll_ctl: {}; closing it\n", spec_.name,
                 conn->peer, std::strerror(errno));
      std::lock_guard lock(conns_mu_);
      conns_.erase(fd);
    }
  });
}

void Server::RunStage(size_t stage) {
  bool last = stage + 1 == stages_.size();
  while (true) {
    Job job = queues_[stage]->Pop();
    {
      RequestBaggageScope baggage(job.bag);
      TimeNs now = WallNow();
      kQueueWaitTracepoint.Fire(now - job.queued, stage, spec_.name, now);
    }
    for (Step step : stages_[stage]) RunStep(step, job);
    job.queued = WallNow();
    if (!last && !queues_[stage + 1]->TryPush(job)) Refuse(job, "queue full");
  }
}

void Server::RunDispatcher() {
  // Per ready connection, one non-blocking read and every whole request it completes
  // queued; a partial message waits in the connection's buffer.
  epoll_event events[64];
  while (true) {
    int n = epoll_wait(epoll_fd_, events, 64, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      Die(Status::IoError("epoll_wait: {}", std::strerror(errno)));
    }
    for (int k = 0; k < n; ++k) {
      std::shared_ptr<Conn> conn;
      {
        std::lock_guard lock(conns_mu_);
        auto it = conns_.find(events[k].data.fd);
        if (it == conns_.end()) continue;
        conn = it->second;
      }
      if (!Dispatch(conn)) Forget(conn);
    }
  }
}

bool Server::Dispatch(const std::shared_ptr<Conn>& conn) {
  // Never blocks: a peer that sent half a frame and stalled leaves it in conn->rbuf until
  // the rest arrives, and the dispatcher serves other connections meanwhile.
  Result<bool> open = ReadAvailable(*conn);
  if (!open.ok()) {
    fmt::print(stderr, "{}: connection from {}: {}; closing it\n", spec_.name, conn->peer,
               open.status().message());
    return false;
  }
  while (true) {
    Job job;  // (Job{.conn = conn} makes GCC 12 warn, wrongly, of an uninitialized string)
    job.conn = conn;
    size_t bytes = 0;
    Result<bool> taken = TakeMessage(conn->rbuf, conn->http, &job.request, &bytes);
    if (!taken.ok()) {
      fmt::print(stderr, "{}: connection from {}: {}; closing it\n", spec_.name, conn->peer,
                 taken.status().message());
      return false;
    }
    if (!*taken) break;
    bool admitted = Admit(job, bytes);
    // After a request that closes the connection nothing more is read from it: its reply
    // is the last, and the connection closes when its last reply is out.
    bool closing = job.request.close;
    job.queued = WallNow();
    if (admitted && !queues_[0]->TryPush(job)) Refuse(job, "queue full");
    if (closing) return false;
  }
  if (!*open && !conn->rbuf.empty()) {
    fmt::print(stderr, "{}: connection from {}: end of stream inside a message ({} bytes)\n",
               spec_.name, conn->peer, conn->rbuf.size());
  }
  return *open;
}

void Server::Forget(const std::shared_ptr<Conn>& conn) {
  // Jobs still queued hold the connection, so their replies can still be written.
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, conn->fd, nullptr) != 0) {
    fmt::print(stderr, "{}: connection from {}: epoll_ctl: {}\n", spec_.name, conn->peer,
               std::strerror(errno));
  }
  std::lock_guard lock(conns_mu_);
  conns_.erase(conn->fd);
}

std::string FormatEndpoint(const sockaddr_in& a) {
  char ip[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return fmt::format("{}:{}", ip, ntohs(a.sin_port));
}

Status Server::RunUdp(int fd) {
  sockaddr_in self{};
  socklen_t len = sizeof self;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len) != 0) {
    return Status::IoError("getsockname: {}", std::strerror(errno));
  }
  std::string local = FormatEndpoint(self);
  try {
    for (uint32_t w = 1; w < spec_.workers; ++w) {
      std::thread([this, fd, local] { Die(ServeDatagrams(fd, local)); }).detach();
    }
  } catch (const std::system_error& e) {
    return Status::IoError("starting the UDP threads: {}", e.what());
  }
  return ServeDatagrams(fd, local);
}

Status Server::ServeDatagrams(int fd, const std::string& local) {
  std::string buf(65536, '\0');
  while (true) {
    Job job;
    socklen_t len = sizeof job.datagram_peer;
    ssize_t r = recvfrom(fd, buf.data(), buf.size(), 0,
                         reinterpret_cast<sockaddr*>(&job.datagram_peer), &len);
    if (r < 0) {
      int err = errno;
      if (err == EBADF || err == ENOTSOCK || err == EINVAL || err == EFAULT) {
        return Status::IoError("recvfrom: {}", std::strerror(err));
      }
      // EINTR, or an ICMP error of an earlier datagram (ECONNREFUSED): nothing to wait for.
      if (err != EINTR && err != ECONNREFUSED) {
        fmt::print(stderr, "{}: recvfrom: {}\n", spec_.name, std::strerror(err));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      continue;
    }
    job.datagram_fd = fd;
    job.conn = std::make_shared<Conn>(-1);  // only the endpoints: the socket is shared
    job.conn->local = local;
    job.conn->peer = FormatEndpoint(job.datagram_peer);
    Result<Frame> f = DecodeDatagram(std::string_view(buf.data(), size_t(r)));
    if (!f.ok()) {
      fmt::print(stderr, "{}: datagram from {}: {}\n", spec_.name, job.conn->peer,
                 f.status().message());
      continue;
    }
    job.request = *f;
    if (Admit(job, size_t(r))) ServeRequest(job);
  }
}

Status Server::Run(int listen_fd) {
  if (tier_.udp) return RunUdp(listen_fd);
  if (IsPoolModel(spec_.model)) return RunPools(listen_fd);
  return RunThreadPerConnection(listen_fd);
}

}  // namespace

Status RunServer(const Topology& topology, int tier, int index, int listen_fd,
                 const std::string& truth_dir) {
  if (tier < 0 || size_t(tier) >= topology.tiers.size() || index < 0 ||
      size_t(index) >= topology.tiers[tier].servers.size()) {
    return Status::InvalidArgument("no server {} in tier {}", index, tier);
  }
  // Live queries (`weft pivot`), when WEFT_PIVOT_BUS names a bus; a server whose agent
  // cannot start serves on without them.
  pivot::StartAgentFromEnvironment(topology.tiers[tier].servers[index].name);
  WEFT_ASSIGN_OR_RETURN(auto log,
                        TruthLog::Open(truth_dir, topology.tiers[tier].servers[index].name));
  if (!topology.tiers[tier].udp &&
      topology.tiers[tier].servers[index].model == ThreadingModel::kEventLoop) {
    // The log is never freed either, as the server below.
    return RunEventLoop(topology, tier, index, listen_fd, *log.release());
  }
  // Never freed: when Run returns, the threads it started may still use the server until
  // the process exits, which the caller does next.
  auto* server = new Server(topology, tier, index, std::move(log));
  return server->Run(listen_fd);
}

}  // namespace weft::testbed
