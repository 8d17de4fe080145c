// A client of the embedded bus's hub (bus_unix.cc describes the whole): one thread that
// connects, sends its subscriptions and then its published messages, and delivers what
// the hub routes to it; without a hub it retries every kRetryMs.
#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "pivot/bus_embedded.h"

namespace weft::pivot::embedded {
namespace {

class UnixClientBus final : public EmbeddedBus {
 public:
  UnixClientBus(std::string path, const sockaddr_un& addr, const OpenBusOptions& options)
      : EmbeddedBus(std::move(path), options), addr_(addr) {
    counters_.connected = false;
    Start();
  }
  ~UnixClientBus() override {
    Stop();
    if (fd_ >= 0) close(fd_);
  }

 private:
  const char* FlushBlocker() const override { return "no hub connected"; }

  void Run() override {
    while (!stopping()) {
      if (fd_ < 0 && NowMs() >= next_retry_ms_) TryConnect();
      if (fd_ >= 0 && out_.empty()) FillOutput();
      pollfd fds[2] = {{waker_.fd(), POLLIN, 0}, {fd_, POLLIN, 0}};
      if (fd_ >= 0 && !out_.empty()) fds[1].events |= POLLOUT;
      int timeout =
          fd_ >= 0 ? -1 : static_cast<int>(std::max<int64_t>(0, next_retry_ms_ - NowMs()));
      if (poll(fds, fd_ >= 0 ? 2 : 1, timeout) < 0 && errno != EINTR) break;
      if (fds[0].revents) Drained();
      if (fd_ < 0) continue;
      if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
        if (!ReadFromHub()) {
          Disconnect();
          continue;
        }
      }
      if (!out_.empty()) {
        if (!WriteSome(fd_, &out_, &out_offset_)) {
          Disconnect();
        } else if (out_.empty()) {
          in_flight_ = 0;
          MarkDone(0);
        }
      }
    }
  }

  void TryConnect() {
    int error = 0;
    fd_ = ConnectTo(addr_, &error);
    if (fd_ < 0) {
      next_retry_ms_ = NowMs() + kRetryMs;
      return;
    }
    // The hub knows nothing of this client yet: every live subscription goes first.
    std::lock_guard lock(mu_);
    control_.clear();
    out_.clear();
    out_offset_ = 0;
    for (const Subscription& s : subscriptions_) AppendSubscribeFrame(s.id, s.pattern, &out_);
    if (ever_connected_) ++counters_.reconnects;
    ever_connected_ = true;
    counters_.connected = true;
  }

  void FillOutput() {
    {
      std::lock_guard lock(mu_);
      out_.swap(control_);
      control_.clear();
    }
    std::vector<Message> batch = TakeBatch();
    for (const Message& m : batch) AppendPublishFrame(m.subject, m.payload, &out_);
    in_flight_ = batch.size();
    out_offset_ = 0;
    if (out_.empty()) MarkDone(0);
  }

  bool ReadFromHub() {
    if (!ReadSome(fd_, &decoder_)) return false;
    Frame frame;
    while (true) {
      switch (decoder_.Next(&frame)) {
        case FrameDecoder::Outcome::kNeedMore:
          return true;
        case FrameDecoder::Outcome::kBad: {
          std::lock_guard lock(mu_);
          ++counters_.bad_frames;
          return false;
        }
        case FrameDecoder::Outcome::kFrame:
          if (frame.type != FrameType::kPublish) {
            std::lock_guard lock(mu_);
            ++counters_.bad_frames;
            return false;
          }
          Deliver(frame.subject, frame.payload);
          break;
      }
    }
  }

  // The messages of a batch not yet wholly written are lost with the connection.
  void Disconnect() {
    close(fd_);
    fd_ = -1;
    decoder_ = FrameDecoder();
    out_.clear();
    out_offset_ = 0;
    MarkDone(in_flight_);
    in_flight_ = 0;
    next_retry_ms_ = NowMs() + kRetryMs;
    std::lock_guard lock(mu_);
    counters_.connected = false;
  }

  const sockaddr_un addr_;
  // The bus thread's own state.
  int fd_ = -1;
  int64_t next_retry_ms_ = 0;
  bool ever_connected_ = false;
  FrameDecoder decoder_;
  std::string out_;
  size_t out_offset_ = 0;
  uint64_t in_flight_ = 0;  // messages in out_
};

}  // namespace

std::unique_ptr<EmbeddedBus> MakeClient(std::string path, const sockaddr_un& addr,
                                        const OpenBusOptions& options) {
  return std::make_unique<UnixClientBus>(std::move(path), addr, options);
}

}  // namespace weft::pivot::embedded
