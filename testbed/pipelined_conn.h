// A pooled downstream connection that carries several calls at once, HTTP/1.1-style
// pipelining (RFC 9112 §9.3.2): callers on different threads write their requests back to
// back, and one reader thread per connection reads the replies and hands each to the
// caller awaiting it. HTTP replies must come back in the order the requests went out
// (FIFO); a framed reply names its call id, so a framed server may answer in any order.
//
// Thread-safety: every method may be called from any thread. The reader thread holds the
// connection (a shared_ptr) until the connection breaks, so a PipelinedConn outlives its
// pool entry while replies are still due.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "core/status.h"
#include "testbed/wire.h"

namespace weft::testbed {

class PipelinedConn : public std::enable_shared_from_this<PipelinedConn> {
 public:
  // One call awaiting its reply; filled in by the reader thread.
  struct Pending {
    uint64_t call_id = 0;
    bool done = false;
    Result<Frame> reply = Status::Internal("no reply yet");
  };

  // Takes a connected socket and starts its reader thread; an error when no thread can be
  // had. Replies are logged to `log`, which must outlive the process's use of the
  // connection (a server's log lives as long as the server).
  static Result<std::shared_ptr<PipelinedConn>> Start(std::unique_ptr<Conn> conn, TruthLog& log);

  // Logs and writes the request `call` (already encoded as `wire`) after every request
  // written before it. An error when the connection is broken or the write fails.
  Result<std::shared_ptr<Pending>> Send(const Frame& call, std::string_view wire,
                                        std::string_view request_name);
  // Blocks until the call's reply arrived or the connection broke (its error then).
  Result<Frame> Await(const std::shared_ptr<Pending>& pending);

  // Takes a slot for one call if fewer than `depth` calls are reserved or awaiting a
  // reply and the connection is not broken; the slot frees when the reply is handed over.
  // The caller that took it must Send at once (a pool picks connections by it).
  bool TryReserve(uint32_t depth);
  bool broken() const;
  const Conn& conn() const { return *conn_; }

 private:
  PipelinedConn(std::unique_ptr<Conn> conn, TruthLog& log) : conn_(std::move(conn)), log_(log) {}
  void ReadReplies();
  // Marks the connection broken and fails every call still awaiting a reply. `mu_` held.
  void FailLocked(const Status& why);

  std::unique_ptr<Conn> conn_;
  TruthLog& log_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Pending>> waiting_;  // in the order the requests went out
  uint32_t reserved_ = 0;
  bool broken_ = false;
};

}  // namespace weft::testbed
