#include "testbed/pipelined_conn.h"

#include <fmt/format.h>
#include <poll.h>

#include <cerrno>
#include <system_error>
#include <thread>

namespace weft::testbed {

Result<std::shared_ptr<PipelinedConn>> PipelinedConn::Start(std::unique_ptr<Conn> conn,
                                                            TruthLog& log) {
  std::shared_ptr<PipelinedConn> c(new PipelinedConn(std::move(conn), log));
  try {
    std::thread([c] { c->ReadReplies(); }).detach();
  } catch (const std::system_error& e) {
    return Status::IoError("a reader thread for {}: {}", c->conn_->peer, e.what());
  }
  return c;
}

bool PipelinedConn::TryReserve(uint32_t depth) {
  std::lock_guard lock(mu_);
  if (broken_ || reserved_ >= depth) return false;
  ++reserved_;
  return true;
}

bool PipelinedConn::broken() const {
  std::lock_guard lock(mu_);
  return broken_;
}

Result<std::shared_ptr<PipelinedConn::Pending>> PipelinedConn::Send(const Frame& call,
                                                                    std::string_view wire,
                                                                    std::string_view request_name) {
  auto pending = std::make_shared<Pending>();
  pending->call_id = call.call_id;
  // The write lock orders the wire and the queue of awaited replies alike: the k-th
  // request on the wire is the k-th entry of waiting_.
  std::lock_guard write(conn_->write_mu);
  {
    std::lock_guard lock(mu_);
    if (broken_) return Status::IoError("connection to {} is broken", conn_->peer);
    waiting_.push_back(pending);
  }
  cv_.notify_all();
  log_.Record(TruthLog::Direction::kSend, call, *conn_, wire.size(), request_name, WallNow());
  Status w = WriteAll(conn_->fd, wire);
  if (!w.ok()) {
    std::lock_guard lock(mu_);
    FailLocked(w.WithContext(conn_->peer));
    return w.WithContext(conn_->peer);
  }
  return pending;
}

Result<Frame> PipelinedConn::Await(const std::shared_ptr<Pending>& pending) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return pending->done; });
  return pending->reply;
}

void PipelinedConn::FailLocked(const Status& why) {
  broken_ = true;
  for (const std::shared_ptr<Pending>& p : waiting_) {
    p->done = true;
    p->reply = why;
  }
  waiting_.clear();
  cv_.notify_all();
}

void PipelinedConn::ReadReplies() {
  while (true) {
    {
      // An idle pooled connection may wait for its next call without a timeout; a reply
      // that is due is read under the socket's io_timeout.
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return !waiting_.empty() || broken_; });
      if (broken_) return;
    }
    size_t bytes = 0;
    Result<std::optional<Frame>> r = ReadConnFrame(*conn_, &bytes);
    TimeNs now = WallNow();
    std::lock_guard lock(mu_);
    if (broken_) return;  // a failed write broke it while this thread read
    if (!r.ok() || !r->has_value()) {
      FailLocked(Status::IoError("{} from {}", r.ok() ? "end of stream" : r.status().message(),
                                 conn_->peer));
      return;
    }
    const Frame& reply = **r;
    log_.Record(TruthLog::Direction::kRecv, reply, *conn_, bytes, "-", now);
    // HTTP/1.1 answers in request order, so a reply is always the oldest call's; a frame
    // names its call, and a pool or event-loop server answers as each request finishes.
    auto it = waiting_.begin();
    if (!conn_->http) {
      while (it != waiting_.end() && (*it)->call_id != reply.call_id) ++it;
    }
    if (it == waiting_.end() || (*it)->call_id != reply.call_id) {
      FailLocked(Status::Corruption(
          "reply for call {:x} from {} while awaiting {}", reply.call_id, conn_->peer,
          waiting_.empty() ? std::string("none") : fmt::format("{:x}", waiting_.front()->call_id)));
      return;
    }
    (*it)->reply = reply;
    (*it)->done = true;
    waiting_.erase(it);
    --reserved_;
    cv_.notify_all();
    if (reply.close) {
      // The server closes the connection after this reply: no more calls on it.
      FailLocked(Status::IoError("{} closed the connection (Connection: close)", conn_->peer));
      return;
    }
  }
}

}  // namespace weft::testbed
