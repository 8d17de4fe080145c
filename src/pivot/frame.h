// The frames of the embedded bus (bus.h "unix:PATH"): what a client and the hub send each
// other on one Unix stream connection.
//
//   frame = length:u32le body          length = bytes in body, 1 .. kMaxFrameBody
//   body  = 'P' subject_len:u16le subject payload     a message (both directions)
//         | 'S' id:u64le pattern                      subscribe (client to hub)
//         | 'U' id:u64le                              unsubscribe (client to hub)
//
// A subject or pattern is 1 .. kMaxSubject bytes of printable ASCII without spaces; a
// payload is 0 .. kMaxPayload bytes of anything. Subscriptions are per connection: the
// client picks the ids, the hub forgets them when the connection closes, and a client
// that reconnects sends them again. The hub forwards a message once to every connection
// with at least one matching pattern; the client then runs its own matching handlers.
//
// The decoder is the only reader of bytes from other processes: it checks every length
// against these bounds before it trusts it, and a connection that sends one bad frame is
// closed (there is no way to find the next frame boundary again).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace weft::pivot {

inline constexpr size_t kMaxSubject = 1024;
inline constexpr size_t kMaxPayload = 1 << 20;
inline constexpr size_t kMaxFrameBody = 1 + 2 + kMaxSubject + kMaxPayload;
inline constexpr size_t kFrameHeader = 4;

enum class FrameType : uint8_t { kPublish = 'P', kSubscribe = 'S', kUnsubscribe = 'U' };

// A decoded frame. Its views point into the decoder's buffer and stay valid until the
// decoder's next Append or Next call.
struct Frame {
  FrameType type = FrameType::kPublish;
  std::string_view subject;  // kPublish: the subject; kSubscribe: the pattern
  std::string_view payload;  // kPublish only
  uint64_t id = 0;           // kSubscribe and kUnsubscribe
};

// Whether `s` may be a subject or pattern on the bus (length and characters).
bool ValidSubject(std::string_view s);

// Appends one encoded frame to `out`. The caller checks the bounds first (ValidSubject,
// payload size); frames built here from unchecked input would be rejected by the peer.
void AppendPublishFrame(std::string_view subject, std::string_view payload, std::string* out);
void AppendSubscribeFrame(uint64_t id, std::string_view pattern, std::string* out);
void AppendUnsubscribeFrame(uint64_t id, std::string* out);

// Splits a byte stream into frames. Not thread-safe; one per connection.
class FrameDecoder {
 public:
  enum class Outcome { kFrame, kNeedMore, kBad };

  void Append(std::string_view bytes);
  // Takes the next whole frame out of the buffer. kBad is final: error() says why and
  // every later call returns kBad again.
  Outcome Next(Frame* frame);
  const std::string& error() const { return error_; }
  size_t buffered() const { return buffer_.size() - consumed_; }

 private:
  Outcome Fail(std::string why);

  std::string buffer_;
  size_t consumed_ = 0;  // bytes at the front of buffer_ that earlier frames used
  std::string error_;
};

}  // namespace weft::pivot
