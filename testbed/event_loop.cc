// Each request is a small state machine (before timer, calls, after timer, reply) driven by
// socket readiness and timers: a timerfd per sleeping request, or (service = "timer-heap")
// one timerfd armed for the earliest of a heap. Downstream connections carry one call at a time, or
// up to the tier's `pipeline` calls at once; an inbound connection may carry many requests at once
// (framed replies go out as they finish, HTTP replies in request order). Downstream connects are
// blocking: on loopback they complete or fail at once.
#include "testbed/event_loop.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <queue>

#include "testbed/accept.h"
#include "testbed/instrumentation.h"

namespace weft::testbed {
namespace {

struct Req;

struct EvConn {
  std::unique_ptr<Conn> conn;
  std::string out;  // what is read waits in conn->rbuf
  bool closed = false;
  bool want_out = false;
  // Inbound: a request said or got "Connection: close". Nothing more is taken from the
  // connection, and it closes once that request's reply is flushed (close_when_flushed).
  bool closing = false;
  bool close_when_flushed = false;
  std::optional<ServerRef> callee;  // outbound only: the server it leads to
  // Outbound only: the calls awaiting a reply, in the order they went out, and the request
  // that made each.
  std::deque<std::pair<uint64_t, std::shared_ptr<Req>>> waiting;
};

struct Req {
  std::shared_ptr<EvConn> from;
  Frame frame;
  const RequestType* rt = nullptr;
  int phase = 0;          // 0 before, 1 calls, 2 after, 3 reply, 4 done
  bool sleeping = false;  // a service-time timer will step it; other wake-ups wait
  size_t spec = 0;
  uint32_t left = 0;
  bool sampled = false, first = true, waited = false;
  uint32_t pending = 0;
  uint64_t seq = 0;  // its number on the inbound connection, for in-order HTTP replies
  Status status;
  int timer_fd = -1;  // its own service-time timer (unless the tier shares one timer)
  // Pivot Tracing: the request's baggage, the current baggage whenever the loop steps the
  // request (after a timer or a downstream reply too), and when it arrived.
  RequestBaggage bag;
  bool bag_installed = false;
  TimeNs received = 0;
  ~Req() {
    if (timer_fd >= 0) close(timer_fd);  // which also takes it out of the epoll set
  }
};

struct Timer {
  TimeNs at;
  uint64_t seq;
  std::shared_ptr<Req> req;  // null: the end of a pause in accepting (ResumeAccepting)
  bool sleep;                // a service time, else a deferred wake-up
  bool operator>(const Timer& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

TimeNs MonoNow() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return TimeNs(ts.tv_sec) * kSecond + ts.tv_nsec;
}

class Loop {
 public:
  Loop(const Topology& topo, int tier, int index, TruthLog& log)
      : topo_(topo),
        tier_(topo.tiers[tier]),
        name_(tier_.servers[index].name),
        index_(index),
        called_by_servers_(tier > 0),
        log_(log),
        rng_(uint64_t(WallNow())),
        balancer_(topo, name_) {}

  // Returns only on an error: at setup, or when epoll or the listening socket fails.
  Status Run(int listen_fd);

 private:
  // Makes the connection non-blocking and watches it for input.
  Status Watch(const std::shared_ptr<EvConn>& c);
  // Takes one connection off the listening socket; pauses accepting (a timer resumes it)
  // when out of descriptors or memory, as AcceptConnection does for blocking servers.
  Status OnAcceptable();
  Status ResumeAccepting();
  // The epoll set with the listening socket and the timerfd in it.
  Status Open(int listen_fd);
  // Steps the requests whose timers are due, then arms the timerfd for the next timer.
  Status FireTimers();
  void Close(const std::shared_ptr<EvConn>& c);
  void Send(const std::shared_ptr<EvConn>& c, std::string data);
  void Flush(const std::shared_ptr<EvConn>& c);
  void OnReadable(const std::shared_ptr<EvConn>& c);
  void OnRequest(const std::shared_ptr<EvConn>& c, const Frame& f, size_t bytes);
  void OnReply(const std::shared_ptr<EvConn>& c, Frame& f, size_t bytes);
  // Steps `r` with its baggage installed.
  void Step(const std::shared_ptr<Req>& r);
  void StepNow(const std::shared_ptr<Req>& r);
  bool Sleep(const std::shared_ptr<Req>& r, const Distribution& d) {
    return SleepFor(r, d.Sample(rng_));
  }
  bool SleepFor(const std::shared_ptr<Req>& r, TimeNs t);
  // A request's own timer expired: it goes on.
  void Wake(int timer_fd);
  void Call(const std::shared_ptr<Req>& r, const CallSpec& spec);
  void Reply(const std::shared_ptr<Req>& r);

  const Topology& topo_;
  const Tier& tier_;
  std::string name_;
  const int index_;               // this server's index in its tier
  const bool called_by_servers_;  // not the first tier: replies carry baggage back
  TruthLog& log_;
  std::mt19937_64 rng_;
  Balancer balancer_;
  uint32_t next_call_ = 0;
  int ep_ = -1, timer_fd_ = -1, listen_fd_ = -1;
  AcceptBackoff accept_backoff_;
  std::map<int, std::shared_ptr<EvConn>> conns_;
  // Pooled downstream connections per (tier, server); one with fewer than the tier's
  // `pipeline` calls awaiting a reply takes the next call.
  std::map<ServerRef, std::vector<std::shared_ptr<EvConn>>> pool_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  uint64_t timer_seq_ = 0;
  // Requests sleeping on their own timerfd, by its descriptor.
  std::map<int, std::shared_ptr<Req>> sleepers_;
};

Status SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return Status::IoError("fcntl: {}", std::strerror(errno));
  }
  return Status::Ok();
}

Status Loop::Watch(const std::shared_ptr<EvConn>& c) {
  int fd = c->conn->fd;
  WEFT_RETURN_IF_ERROR(SetNonBlocking(fd));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    return Status::IoError("epoll_ctl: {}", std::strerror(errno));
  }
  conns_[fd] = c;
  return Status::Ok();
}

void Loop::Close(const std::shared_ptr<EvConn>& c) {
  if (c->closed) return;
  c->closed = true;
  if (epoll_ctl(ep_, EPOLL_CTL_DEL, c->conn->fd, nullptr) != 0) {
    fmt::print(stderr, "{}: connection with {}: epoll_ctl: {}\n", name_, c->conn->peer,
               std::strerror(errno));
  }
  conns_.erase(c->conn->fd);
  for (auto& [call, r] : c->waiting) {
    if (r->status.ok()) r->status = Status::IoError("connection to {} lost", c->conn->peer);
    --r->pending;
    // Deferred: Close can run inside a Step of this very request (a failed send).
    timers_.push({0, ++timer_seq_, r, false});
  }
  c->waiting.clear();
}

void Loop::Send(const std::shared_ptr<EvConn>& c, std::string data) {
  if (c->closed) return;
  c->out += data;
  Flush(c);
}

void Loop::Flush(const std::shared_ptr<EvConn>& c) {
  while (!c->out.empty()) {
    ssize_t w = send(c->conn->fd, c->out.data(), c->out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      c->out.erase(0, size_t(w));
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    } else {
      fmt::print(stderr, "{}: write to {}: {}\n", name_, c->conn->peer, std::strerror(errno));
      Close(c);
      return;
    }
  }
  if (c->out.empty() && c->close_when_flushed) {
    shutdown(c->conn->fd, SHUT_WR);
    Close(c);
    return;
  }
  bool want = !c->out.empty();
  if (want != c->want_out) {
    c->want_out = want;
    epoll_event ev{};
    ev.events = want ? uint32_t(EPOLLIN | EPOLLOUT) : uint32_t(EPOLLIN);
    ev.data.fd = c->conn->fd;
    if (epoll_ctl(ep_, EPOLL_CTL_MOD, c->conn->fd, &ev) != 0) {
      // Unwatched for output, what is left to write would never go: give up the connection.
      fmt::print(stderr, "{}: connection with {}: epoll_ctl: {}\n", name_, c->conn->peer,
                 std::strerror(errno));
      Close(c);
    }
  }
}

void Loop::OnReadable(const std::shared_ptr<EvConn>& c) {
  Result<bool> open = ReadAvailable(*c->conn);
  if (!open.ok()) {
    fmt::print(stderr, "{}: read from {}: {}\n", name_, c->conn->peer, open.status().message());
    Close(c);
    return;
  }
  while (!c->closed && !c->closing) {
    Frame f;
    size_t bytes = 0;
    Result<bool> taken = TakeMessage(c->conn->rbuf, c->conn->http, &f, &bytes);
    if (!taken.ok()) {
      fmt::print(stderr, "{}: connection from {}: {}; closing it\n", name_, c->conn->peer,
                 taken.status().message());
      Close(c);
      return;
    }
    if (!*taken) break;
    if (c->callee) {
      OnReply(c, f, bytes);
    } else {
      OnRequest(c, f, bytes);
    }
  }
  if (!*open) Close(c);
}

void Loop::OnRequest(const std::shared_ptr<EvConn>& c, const Frame& f, size_t bytes) {
  auto r = std::make_shared<Req>();
  r->from = c;
  r->frame = f;
  r->seq = c->conn->next_request++;
  if (c->conn->http && tier_.http_close_after > 0 && r->seq + 1 >= tier_.http_close_after) {
    r->frame.close = true;
  }
  c->closing = r->frame.close;
  bool known = f.type == FrameType::kRequest && f.request_type < tier_.requests.size();
  log_.Record(TruthLog::Direction::kRecv, f, *c->conn, bytes,
              known ? std::string_view(tier_.requests[f.request_type].name) : "?", WallNow());
  if (!known) {
    fmt::print(stderr, "{}: request of type {} kind {} from {} is not served here\n", name_,
               f.request_type, int(f.type), c->conn->peer);
    r->frame.request_type = 0;
    r->rt = &tier_.requests[0];
    r->status = Status::InvalidArgument("unknown request");
    Reply(r);
    return;
  }
  r->rt = &tier_.requests[f.request_type];
  r->received = WallNow();
  // The caller's baggage, deserialized when first used.
  ReceiveBaggage(r->bag, std::move(r->frame.baggage), called_by_servers_);
  {
    RequestBaggageScope baggage(r->bag);
    kRequestTracepoint.Fire(r->rt->name, bytes, c->conn->peer, name_, r->received);
  }
  Step(r);
}

void Loop::OnReply(const std::shared_ptr<EvConn>& c, Frame& f, size_t bytes) {
  log_.Record(TruthLog::Direction::kRecv, f, *c->conn, bytes, "-", WallNow());
  // HTTP/1.1 answers in request order: a reply is the oldest call's. A frame names its
  // call, and a pool or event-loop server answers as each request finishes.
  auto it = c->waiting.begin();
  if (!c->conn->http) {
    while (it != c->waiting.end() && it->first != f.call_id) ++it;
  }
  if (it == c->waiting.end() || it->first != f.call_id) {
    fmt::print(stderr, "{}: unexpected reply for call {:x} from {}\n", name_, f.call_id,
               c->conn->peer);
    Close(c);
    return;
  }
  std::shared_ptr<Req> r = std::move(it->second);
  c->waiting.erase(it);
  if (f.type == FrameType::kError && r->status.ok()) {
    r->status = Status::Internal("{} answered with an error", c->conn->peer);
  }
  // Not pooled, or the server closes it after this reply (Connection: close).
  if (!tier_.pooled || f.close) Close(c);
  {
    RequestBaggageScope baggage(r->bag);
    JoinReplyBaggage(std::move(f.baggage));  // what the callee packed
  }
  --r->pending;
  Step(r);
}

bool Loop::SleepFor(const std::shared_ptr<Req>& r, TimeNs t) {
  if (t <= 0) return false;
  if (tier_.inline_service) {
    Serve(t);  // the loop computes: nothing else runs meanwhile
    return false;
  }
  if (tier_.shared_timer) {
    timers_.push({MonoNow() + t, ++timer_seq_, r, true});
    r->sleeping = true;
    return true;
  }
  if (r->timer_fd < 0) {
    r->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = r->timer_fd;
    if (r->timer_fd < 0 || epoll_ctl(ep_, EPOLL_CTL_ADD, r->timer_fd, &ev) != 0) {
      fmt::print(stderr, "{}: request timer: {}; serving in the loop\n", name_,
                 std::strerror(errno));
      if (r->timer_fd >= 0) close(r->timer_fd);  // unwatched, it would never wake the request
      r->timer_fd = -1;
      Serve(t);
      return false;
    }
  }
  itimerspec spec{};
  spec.it_value.tv_sec = t / kSecond;
  spec.it_value.tv_nsec = t % kSecond;
  if (timerfd_settime(r->timer_fd, 0, &spec, nullptr) != 0) {
    fmt::print(stderr, "{}: timerfd_settime: {}; serving in the loop\n", name_,
               std::strerror(errno));
    Serve(t);
    return false;
  }
  sleepers_[r->timer_fd] = r;
  r->sleeping = true;
  return true;
}

void Loop::Wake(int timer_fd) {
  auto it = sleepers_.find(timer_fd);
  uint64_t expirations = 0;
  if (read(timer_fd, &expirations, sizeof expirations) < 0 || it == sleepers_.end()) return;
  std::shared_ptr<Req> r = std::move(it->second);
  sleepers_.erase(it);
  r->sleeping = false;
  Step(r);
}

void Loop::Call(const std::shared_ptr<Req>& r, const CallSpec& spec) {
  const Tier& t = topo_.tiers[spec.tier];
  std::string_view replicas;
  ServerRef to{spec.tier, balancer_.Pick(spec.tier, &replicas)};
  std::shared_ptr<EvConn> c;
  if (tier_.pooled) {
    auto& open = pool_[to];
    std::erase_if(open, [](const std::shared_ptr<EvConn>& o) { return o->closed; });
    // First fit: calls pack onto few connections, so that pipelining really happens.
    for (const std::shared_ptr<EvConn>& o : open) {
      if (o->waiting.size() < (t.udp ? 1 : tier_.pipeline)) {
        c = o;
        break;
      }
    }
  }
  if (!c) {
    Result<std::unique_ptr<Conn>> conn =
        ConnectLoopback(t.servers[to.index].port, topo_.io_timeout, t.udp);
    if (!conn.ok()) {
      if (r->status.ok()) r->status = conn.status();
      return;
    }
    c = std::make_shared<EvConn>();
    c->conn = std::move(*conn);
    c->conn->http = t.http;
    c->callee = to;
    if (Status s = Watch(c); !s.ok()) {
      if (r->status.ok()) r->status = s.WithContext(c->conn->peer);
      return;
    }
    if (tier_.pooled) pool_[to].push_back(c);
  }
  const RequestType& callee = t.requests[spec.request];
  Frame call;
  call.request_type = uint16_t(spec.request);
  call.request_id = r->frame.request_id;
  call.call_id = (uint64_t(getpid()) << 32) | ++next_call_;
  call.parent_call = r->frame.call_id;
  call.close = !tier_.pooled;       // HTTP: say that this connection closes after the call
  call.baggage = BaggageForCall();  // Step installed the request's baggage
  c->waiting.emplace_back(call.call_id, r);
  ++r->pending;
  std::string wire = EncodeMessage(call, callee.request_bytes, c->conn->http);
  kCallTracepoint.Fire(callee.name, wire.size(), t.name, t.servers[to.index].name, name_, replicas,
                       TimeIfWoven(kCallTracepoint));
  log_.Record(TruthLog::Direction::kSend, call, *c->conn, wire.size(), callee.name, WallNow());
  Send(c, std::move(wire));
}

void Loop::Step(const std::shared_ptr<Req>& r) {
  if (r->bag_installed) return StepNow(r);  // already the current baggage
  r->bag_installed = true;
  {
    RequestBaggageScope baggage(r->bag);
    StepNow(r);
  }
  r->bag_installed = false;
}

void Loop::StepNow(const std::shared_ptr<Req>& r) {
  if (r->sleeping) return;
  while (true) {
    switch (r->phase) {
      case 0: {
        r->phase = 1;
        TimeNs service = r->rt->before.Sample(rng_);
        if (r->rt->disk_bytes > 0) {
          // The fault slow_server, as in the threaded server.
          if (index_ == tier_.slow_server &&
              std::uniform_real_distribution<double>(0, 1)(rng_) < tier_.slow_share) {
            service += tier_.slow_extra;
          }
          kDiskReadTracepoint.Fire(r->rt->name, r->rt->disk_bytes, name_, service,
                                   TimeIfWoven(kDiskReadTracepoint));
        }
        if (SleepFor(r, service)) return;
        break;
      }
      case 1: {
        if (r->pending > 0) return;
        if (!r->status.ok()) {
          fmt::print(stderr, "{}: request {:x}: {}\n", name_, r->frame.request_id,
                     r->status.message());
          r->phase = 3;
          break;
        }
        if (r->spec >= r->rt->calls.size()) {
          r->phase = 2;
          break;
        }
        const CallSpec& spec = r->rt->calls[r->spec];
        if (!r->sampled) {
          r->left = std::uniform_int_distribution<uint32_t>(spec.min_count, spec.max_count)(rng_);
          r->sampled = true;
        }
        if (r->left == 0) {
          ++r->spec;
          r->sampled = false;
          break;
        }
        if (!r->first && !r->waited) {
          r->waited = true;
          if (Sleep(r, r->rt->between)) return;
        }
        uint32_t n = spec.parallel ? r->left : 1;
        r->left -= n;
        r->first = false;
        r->waited = false;
        for (uint32_t k = 0; k < n && r->status.ok(); ++k) Call(r, spec);
        break;
      }
      case 2:
        r->phase = 3;
        if (Sleep(r, r->rt->after)) return;
        break;
      case 3:
        r->phase = 4;
        Reply(r);
        return;
      default:
        return;
    }
  }
}

void Loop::Reply(const std::shared_ptr<Req>& r) {
  if (r->from->closed) return;  // the caller went away; nothing to answer
  Frame reply = r->frame;
  reply.type = r->status.ok() ? FrameType::kReply : FrameType::kError;
  // The request's baggage goes back to the caller (not on an error reply, header only, nor
  // to a caller that sent none).
  RequestBaggageScope baggage(r->bag);
  const bool carries = r->status.ok() && ReplyCarriesBaggage(r->bag);
  uint64_t packs = 0;
  reply.baggage = carries ? BaggageForReply(packs) : std::string();
  Conn& conn = *r->from->conn;
  std::string wire =
      EncodeMessage(reply, r->status.ok() ? r->rt->reply_bytes : uint32_t(kPayloadHeader),
                    conn.http, tier_.http_chunked);
  TimeNs now = WallNow();
  kReplyTracepoint.Fire(r->rt->name, r->status.ok() ? "ok" : "error", wire.size(),
                        r->received > 0 ? now - r->received : 0, name_, now);
  // What advice packed at this Reply goes back with it too, as in the threaded server.
  if (carries && kReplyTracepoint.woven() && BaggageForReplyChanged(reply.baggage, packs)) {
    wire = EncodeMessage(reply, r->status.ok() ? r->rt->reply_bytes : uint32_t(kPayloadHeader),
                         conn.http, tier_.http_chunked);
  }
  std::lock_guard lock(conn.write_mu);  // uncontended: ReleaseReply's contract
  for (auto& [frame, bytes] : ReleaseReply(conn, r->seq, reply, std::move(wire))) {
    log_.Record(TruthLog::Direction::kSend, frame, conn, bytes.size(), "-", WallNow());
    // The closing reply is the last one: the connection closes once it is flushed.
    if (frame.close) r->from->close_when_flushed = true;
    Send(r->from, std::move(bytes));
  }
}

Status Loop::OnAcceptable() {
  int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    switch (ClassifyAcceptError(err)) {
      case AcceptFailure::kRetry:  // also EAGAIN: another wake-up took it
        return Status::Ok();
      case AcceptFailure::kFatal:
        return Status::IoError("accept: {}", std::strerror(err));
      case AcceptFailure::kBackOff:
        // The connection stays queued and the socket readable: stop watching it until
        // the pause is over, or the loop would spin on it.
        if (!accept_backoff_.pausing()) {
          fmt::print(stderr, "{}: accept: {}; pausing until connections close\n", name_,
                     std::strerror(err));
        }
        if (epoll_ctl(ep_, EPOLL_CTL_DEL, listen_fd_, nullptr) != 0) {
          return Status::IoError("epoll_ctl: {}", std::strerror(errno));
        }
        timers_.push({MonoNow() + accept_backoff_.Next(), ++timer_seq_, nullptr, false});
        return Status::Ok();
    }
  }
  if (accept_backoff_.pausing()) fmt::print(stderr, "{}: accepting connections again\n", name_);
  accept_backoff_.Reset();
  auto c = std::make_shared<EvConn>();
  c->conn = std::make_unique<Conn>(fd);
  c->conn->http = tier_.http;
  if (Status s = Watch(c); !s.ok()) {
    fmt::print(stderr, "{}: connection from {}: {}; closing it\n", name_, c->conn->peer,
               s.message());
  }
  return Status::Ok();
}

Status Loop::ResumeAccepting() {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_;
  if (epoll_ctl(ep_, EPOLL_CTL_ADD, listen_fd_, &ev) != 0) {
    return Status::IoError("epoll_ctl: {}", std::strerror(errno));
  }
  return Status::Ok();
}

Status Loop::Open(int listen_fd) {
  listen_fd_ = listen_fd;
  ep_ = epoll_create1(EPOLL_CLOEXEC);
  if (ep_ < 0) return Status::IoError("epoll_create1: {}", std::strerror(errno));
  timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timer_fd_ < 0) return Status::IoError("timerfd_create: {}", std::strerror(errno));
  WEFT_RETURN_IF_ERROR(SetNonBlocking(listen_fd));
  for (int fd : {listen_fd, timer_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      return Status::IoError("epoll_ctl: {}", std::strerror(errno));
    }
  }
  return Status::Ok();
}

Status Loop::FireTimers() {
  TimeNs now = MonoNow();
  while (!timers_.empty() && timers_.top().at <= now) {
    Timer t = timers_.top();
    timers_.pop();
    if (!t.req) {
      WEFT_RETURN_IF_ERROR(ResumeAccepting());
      continue;
    }
    if (t.sleep) {
      t.req->sleeping = false;
    } else if (t.req->sleeping) {
      continue;
    }
    Step(t.req);
  }
  itimerspec spec{};
  if (!timers_.empty()) {
    spec.it_value.tv_sec = timers_.top().at / kSecond;
    spec.it_value.tv_nsec = timers_.top().at % kSecond;
  }
  if (timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr) != 0) {
    return Status::IoError("timerfd_settime: {}", std::strerror(errno));
  }
  return Status::Ok();
}

Status Loop::Run(int listen_fd) {
  WEFT_RETURN_IF_ERROR(Open(listen_fd));
  epoll_event events[128];
  while (true) {
    WEFT_RETURN_IF_ERROR(FireTimers());
    int n = epoll_wait(ep_, events, 128, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IoError("epoll_wait: {}", std::strerror(errno));
    }
    for (int k = 0; k < n; ++k) {
      int fd = events[k].data.fd;
      if (fd == timer_fd_) {
        // Only to wake the loop; EAGAIN when the timer was re-armed since it fired.
        uint64_t expirations = 0;
        if (read(timer_fd_, &expirations, sizeof expirations) < 0 && errno != EAGAIN) {
          return Status::IoError("timerfd read: {}", std::strerror(errno));
        }
      } else if (fd == listen_fd_) {
        WEFT_RETURN_IF_ERROR(OnAcceptable());
      } else if (sleepers_.contains(fd)) {
        Wake(fd);
      } else {
        auto it = conns_.find(fd);
        if (it == conns_.end()) continue;
        std::shared_ptr<EvConn> c = it->second;
        if (events[k].events & EPOLLOUT) Flush(c);
        if (!c->closed && (events[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) OnReadable(c);
      }
    }
  }
}

}  // namespace

Status RunEventLoop(const Topology& topology, int tier, int index, int listen_fd, TruthLog& log) {
  Loop loop(topology, tier, index, log);
  return loop.Run(listen_fd);
}

}  // namespace weft::testbed
