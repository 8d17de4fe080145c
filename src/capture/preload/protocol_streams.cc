// Protocol processors on the program's streams; see protocol_streams.h for the contract
// and the cost.
#include "capture/preload/protocol_streams.h"

#include <netinet/in.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "capture/preload/isolation.h"
#include "capture/preload/log_file.h"
#include "capture/preload/protocol_records.h"
#include "capture/preload/protocol_selection.h"
#include "capture/preload/runtime.h"
#include "capture/protocols/protocol.h"

namespace weft_preload {

uint32_t g_fd_stream[kFdTableSize];

namespace {

// --- detection ---------------------------------------------------------------------

constexpr size_t kDetectBytes = 64;  // Detect looks at most this far into a stream
// Fewer first request bytes than this (a server reading a 4-byte length first) are kept
// for the next call when Detect cannot tell; at this many it decides.
constexpr size_t kEarlyBytes = 16;

// --- the streams -----------------------------------------------------------------------

enum StreamState : uint8_t { kDetecting = 0, kDeciding = 1, kActive = 2, kOff = 3 };

// Isolation parses a read's bytes twice: InputBoundary, on a copy of the parser, to find
// where to cut the read, and the feed, after the call's record, to log the boundary. When
// the search took the bytes in one Consume call, the feed of the same bytes takes its
// parser instead of parsing them again: valid while the direction's parser has consumed
// nothing since (its consumed and messages counts as they were) and the feed brings the
// same bytes, so the result is the one the feed would compute. The same bytes: the same
// count at the same address when the search read them where the program gets them (its
// buffer, which it cannot touch before the read returns, after the feed); when it read
// them from the held bytes, which are copied out and may be refilled before the feed, the
// same count and XXH3-64. The search runs on the stream's spare parser, which the feed
// then makes the direction's own (no copy back).
struct BoundarySearch {
  bool valid;
  bool ended;                   // the one Consume call ended a message
  bool hashed;                  // the bytes were held ones: `hash`, else `source`, names them
  uint64_t consumed, messages;  // the parser's counts before the search
  uint64_t bytes;               // what the Consume call took
  const uint8_t* source;
  uint64_t hash;
};

struct ProtocolStream {
  uint32_t references;  // descriptors naming it (dup shares, close drops)
  uint32_t busy[2];     // per direction (0 requests, 1 responses): a feed is running
  uint32_t broken[2];   // bytes went by unparsed (contention, sendfile): no more boundaries
  uint32_t next_free;   // free list link (slot id)
  uint8_t state;        // StreamState
  bool client;          // this process connected: it writes requests, reads responses
  uint8_t at_start;     // bit d: direction d's next byte starts a message (or the stream)
  uint8_t tls_opaque;   // TLS records went by that no TLS library call was tied to
  uint64_t offset[2];   // bytes moved so far per direction (the boundary record's offset)
  uint8_t early[16];    // detecting: request bytes of earlier calls, too few to tell yet
  uint32_t early_length;
  HeldBytes held;  // event isolation: input bytes read but not yet given (isolation.cc)
  // Direction d's parser is parsers[parser_slot[d]]; the third is the spare, on which
  // the input direction's boundary search runs (BoundarySearch).
  protocols::Parser parsers[3];
  uint8_t parser_slot[2];
  BoundarySearch search;  // the input direction's last InputBoundary (isolation only)
};

protocols::Parser& ParserOf(ProtocolStream* s, int d) { return s->parsers[s->parser_slot[d]]; }
// Capture logs an HTTP/2 frame's end as numbers (LogEnd), so its parsers leave the
// attributes' text unwritten.
void InitParser(protocols::Parser* parser, protocols::Protocol protocol,
                protocols::Direction direction) {
  protocols::Init(parser, protocol, direction);
  parser->frame_numbers_only = true;
}
void InitParsers(ProtocolStream* s, protocols::Protocol protocol) {
  InitParser(&ParserOf(s, 0), protocol, protocols::Direction::kRequest);
  InitParser(&ParserOf(s, 1), protocol, protocols::Direction::kResponse);
}
uint8_t SpareSlot(const ProtocolStream* s) {
  return uint8_t(3 - s->parser_slot[0] - s->parser_slot[1]);
}

// Slabs mapped when the pool runs dry, never unmapped (a racing feed may still hold a
// pointer into one). Slot ids start at 1: 0 in g_fd_stream means none.
constexpr size_t kSlabBytes = 256 * 1024;
constexpr uint32_t kPerSlab = uint32_t(kSlabBytes / sizeof(ProtocolStream));
constexpr int kMaxSlabs = 1024;
ProtocolStream* g_slabs[kMaxSlabs];
int g_slab_count = 0;
uint32_t g_slots_used = 0;  // ids handed out from the slabs so far
uint32_t g_free = 0;        // head of the free list
int g_pool_lock = 0;        // tid of the holder; only connection setup and close take it

bool LockPool() {
  int self = SysGetTid();
  for (int spins = 0;; ++spins) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&g_pool_lock, &expected, self, false, __ATOMIC_ACQUIRE,
                                    __ATOMIC_RELAXED)) {
      return true;
    }
    if (expected == self) return false;  // a signal handler on the holder's thread
    if (spins > 50) sched_yield();
  }
}
void UnlockPool() { __atomic_store_n(&g_pool_lock, 0, __ATOMIC_RELEASE); }

ProtocolStream* StreamAt(uint32_t id) {
  if (id == 0) return nullptr;
  uint32_t index = id - 1;
  if (index / kPerSlab >= uint32_t(kMaxSlabs)) return nullptr;  // a datagram marker
  ProtocolStream* slab = __atomic_load_n(&g_slabs[index / kPerSlab], __ATOMIC_ACQUIRE);
  return slab != nullptr ? &slab[index % kPerSlab] : nullptr;
}

uint32_t TakeSlot() {
  if (!LockPool()) return 0;
  uint32_t id = g_free;
  if (id != 0) {
    g_free = StreamAt(id)->next_free;
  } else if (g_slots_used < uint32_t(g_slab_count) * kPerSlab) {
    id = ++g_slots_used;
  } else if (g_slab_count < kMaxSlabs) {
    void* memory =
        mmap(nullptr, kSlabBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory != MAP_FAILED) {
      __atomic_store_n(&g_slabs[g_slab_count++], static_cast<ProtocolStream*>(memory),
                       __ATOMIC_RELEASE);
      id = ++g_slots_used;
    }
  }
  UnlockPool();
  return id;
}

void FreeSlot(uint32_t id) {
  if (!LockPool()) return;  // a signal handler closing inside a close: the slot is lost
  StreamAt(id)->next_free = g_free;
  g_free = id;
  UnlockPool();
}

// Waits (briefly) for a feed that still runs on a reused slot; false if it does not end.
bool TakeBoth(ProtocolStream* s) {
  for (int d = 0; d < 2; ++d) {
    int spins = 0;
    while (__atomic_exchange_n(&s->busy[d], 1, __ATOMIC_ACQUIRE) != 0) {
      if (++spins > 1000) {
        if (d == 1) __atomic_store_n(&s->busy[0], 0, __ATOMIC_RELEASE);
        return false;
      }
      sched_yield();
    }
  }
  return true;
}

void Start(int fd, protocols::Protocol protocol, bool client) {
  if (__atomic_load_n(&g_fd_stream[fd], __ATOMIC_RELAXED) != 0) DetachProtocol(fd);  // stale
  uint32_t id = TakeSlot();
  ProtocolStream* s = StreamAt(id);
  if (s == nullptr) return;
  if (!TakeBoth(s)) return;  // leaked: a feed on a stale descriptor never ended
  s->references = 1;
  s->broken[0] = s->broken[1] = 0;
  s->offset[0] = s->offset[1] = 0;
  s->early_length = 0;
  s->held.start = s->held.length = 0;  // a mapping left by a stream freed while busy is reused
  s->held.given_thread = nullptr;
  s->held.nonblocking = -1;
  s->client = client;
  s->at_start = 3;
  s->tls_opaque = 0;
  s->search.valid = false;
  s->parser_slot[0] = 0;
  s->parser_slot[1] = 1;
  s->state = protocol == protocols::kNone ? kDetecting : kActive;
  InitParsers(s, protocol);
  __atomic_store_n(&s->busy[1], 0, __ATOMIC_RELEASE);
  __atomic_store_n(&s->busy[0], 0, __ATOMIC_RELEASE);
  // The table entry before the bit: a wrapper that sees the bit finds the stream.
  __atomic_store_n(&g_fd_stream[fd], id, __ATOMIC_RELEASE);
  __atomic_fetch_or(&g_fd_kind[fd], kProtocolBit, __ATOMIC_RELEASE);
}

// The bytes of one call, segment by segment: `data` or the first `bytes` of `iov`.
template <typename Visit>
void ForEachSegment(const void* data, const struct iovec* iov, int iovcnt, size_t bytes,
                    Visit visit) {
  if (data != nullptr) {
    visit(static_cast<const uint8_t*>(data), bytes);
    return;
  }
  for (int i = 0; i < iovcnt && bytes > 0; ++i) {
    size_t n = iov[i].iov_len < bytes ? iov[i].iov_len : bytes;
    if (n > 0) visit(static_cast<const uint8_t*>(iov[i].iov_base), n);
    bytes -= n;
  }
}

// What the first bytes of a detecting stream's first request say it is: those kept from
// earlier calls, then this call's, copied into `first` (*have of them). kNone when they
// name no protocol, or one the selection does not detect.
protocols::Protocol DetectFirstBytes(const ProtocolStream* s, const void* data,
                                     const struct iovec* iov, int iovcnt, size_t bytes,
                                     uint8_t (&first)[kDetectBytes], size_t* have) {
  size_t n = s->early_length;
  memcpy(first, s->early, n);
  ForEachSegment(data, iov, iovcnt, bytes, [&](const uint8_t* p, size_t length) {
    size_t take = length < kDetectBytes - n ? length : kDetectBytes - n;
    memcpy(first + n, p, take);
    n += take;
  });
  *have = n;
  protocols::Protocol protocol = protocols::Detect(first, n);
  return protocol != protocols::kNone && (g_selection.detect & (1u << protocol)) != 0
             ? protocol
             : protocols::kNone;
}

// Decides a detecting stream's protocol from the first bytes of its first request: those
// kept from earlier calls and this call's. False when they are too few to tell: this
// call's bytes are then kept too (the stream stays detecting).
bool Decide(ProtocolStream* s, const void* data, const struct iovec* iov, int iovcnt,
            size_t bytes) {
  uint8_t first[kDetectBytes];
  size_t have = 0;
  protocols::Protocol protocol = DetectFirstBytes(s, data, iov, iovcnt, bytes, first, &have);
  bool allowed = protocol != protocols::kNone;
  if (!allowed && have < kEarlyBytes) {
    memcpy(s->early, first, have);
    s->early_length = uint32_t(have);
    return false;
  }
  uint8_t expected = kDetecting;
  if (!__atomic_compare_exchange_n(&s->state, &expected, uint8_t(kDeciding), false,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    return true;  // the server spoke first meanwhile: off
  }
  if (!allowed) {
    __atomic_store_n(&s->state, uint8_t(kOff), __ATOMIC_RELEASE);
    return true;
  }
  InitParsers(s, protocol);
  __atomic_store_n(&s->state, uint8_t(kActive), __ATOMIC_RELEASE);
  return true;
}

// A detecting stream whose server spoke first: decides HTTP/2 if the response's first
// bytes are a server's SETTINGS (protocols::DetectResponse) and the selection detects it,
// before the client's preface came (and while no request bytes are kept undecided).
// True if it decided.
bool DecideFromResponse(ProtocolStream* s, const void* data, const struct iovec* iov, int iovcnt,
                        size_t bytes) {
  if (s->early_length != 0) return false;
  uint8_t first[9];
  size_t have = 0;
  ForEachSegment(data, iov, iovcnt, bytes, [&](const uint8_t* p, size_t length) {
    size_t take = length < sizeof first - have ? length : sizeof first - have;
    memcpy(first + have, p, take);
    have += take;
  });
  protocols::Protocol protocol = protocols::DetectResponse(first, have);
  if (protocol == protocols::kNone || (g_selection.detect & (1u << protocol)) == 0) return false;
  uint8_t expected = kDetecting;
  if (!__atomic_compare_exchange_n(&s->state, &expected, uint8_t(kDeciding), false,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    return true;  // the client's first bytes decided meanwhile
  }
  InitParsers(s, protocol);
  __atomic_store_n(&s->state, uint8_t(kActive), __ATOMIC_RELEASE);
  return true;
}

}  // namespace

uint16_t PortOf(const struct sockaddr* a, socklen_t length) {
  if (a == nullptr) return 0;
  if (a->sa_family == AF_INET && length >= sizeof(sockaddr_in)) {
    return ntohs(reinterpret_cast<const sockaddr_in*>(a)->sin_port);
  }
  if (a->sa_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(a)->sin6_port);
  }
  return 0;
}

void AttachProtocol(int fd, uint8_t kind, bool client, uint16_t port, const char* path,
                    size_t path_length) {
  if (!g_selection.enabled || fd < 0 || fd >= kFdTableSize) return;
  if (kind != wire::kKindTcp && kind != wire::kKindUnixStream) return;
  protocols::Protocol protocol = g_selection.program;
  for (int i = 0; i < g_selection.rule_count && protocol == protocols::kNone; ++i) {
    const Rule& r = g_selection.rules[i];
    bool match = r.port != 0
                     ? kind == wire::kKindTcp && r.port == port
                     : kind == wire::kKindUnixStream && path != nullptr &&
                           r.path_length == path_length && memcmp(r.path, path, path_length) == 0;
    if (match) protocol = r.protocol;
  }
  if (protocol == protocols::kNone && g_selection.detect == 0) return;
  Start(fd, protocol, client);
}

void DetachProtocol(int fd) {
  if (fd < 0 || fd >= kFdTableSize) return;
  __atomic_fetch_and(&g_fd_kind[fd], uint8_t(~kProtocolBit), __ATOMIC_RELAXED);
  uint32_t id = __atomic_exchange_n(&g_fd_stream[fd], 0, __ATOMIC_ACQ_REL);
  ProtocolStream* s = StreamAt(id);
  if (s == nullptr) return;
  if (__atomic_sub_fetch(&s->references, 1, __ATOMIC_ACQ_REL) == 0) {
    // Held bytes die with the open file description (as unread bytes in the kernel do).
    int d = s->client ? 1 : 0;
    if (s->held.data != nullptr && __atomic_exchange_n(&s->busy[d], 1, __ATOMIC_ACQUIRE) == 0) {
      if (s->held.length != 0) __atomic_sub_fetch(&g_held_streams, 1, __ATOMIC_RELAXED);
      munmap(s->held.data, s->held.capacity);
      s->held = HeldBytes{};
      __atomic_store_n(&s->busy[d], 0, __ATOMIC_RELEASE);
    } else if (s->held.length != 0) {  // a read still runs: the mapping stays with the slot
      __atomic_sub_fetch(&g_held_streams, 1, __ATOMIC_RELAXED);
      s->held.length = 0;
    }
    FreeSlot(id);
  }
}

void ShareProtocol(int old_fd, int new_fd) {
  if (old_fd < 0 || old_fd >= kFdTableSize || new_fd < 0 || new_fd >= kFdTableSize) return;
  uint32_t id = __atomic_load_n(&g_fd_stream[old_fd], __ATOMIC_ACQUIRE);
  ProtocolStream* s = StreamAt(id);
  if (s == nullptr) return;
  __atomic_add_fetch(&s->references, 1, __ATOMIC_ACQ_REL);
  __atomic_store_n(&g_fd_stream[new_fd], id, __ATOMIC_RELEASE);
  __atomic_store_n(&g_streams_shared, true, __ATOMIC_SEQ_CST);
}

namespace {

uint64_t g_tls_opaque_streams = 0;

// The first bytes of a call (`data` or the first of `iov`) are a TLS record header:
// content type 22 (handshake) or 21 (alert), version 3.0-3.4, a length a record can have.
bool StartsTlsRecord(const void* data, const struct iovec* iov, int iovcnt, size_t bytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  size_t n = bytes;
  if (p == nullptr) {
    if (iovcnt <= 0) return false;
    p = static_cast<const uint8_t*>(iov[0].iov_base);
    n = iov[0].iov_len < bytes ? iov[0].iov_len : bytes;
  }
  if (n < 5 || (p[0] != 0x16 && p[0] != 0x15) || p[1] != 0x03 || p[2] > 0x04) return false;
  return ((uint32_t(p[3]) << 8) | p[4]) <= 16384 + 2048;
}

// A system call's bytes on a stream no TLS library call was tied to begin with a TLS
// record where a message (or the stream) starts, early in the stream: a TLS library that
// capture cannot see (statically linked). Both directions stop, never fed ciphertext,
// and the stream is counted once.
bool OpaqueTls(ProtocolStream* s, int d, const void* data, const struct iovec* iov, int iovcnt,
               size_t bytes) {
  if (__atomic_load_n(&s->tls_opaque, __ATOMIC_RELAXED) != 0) return true;
  if ((s->at_start & (1u << d)) == 0 || ParserOf(s, d).messages > 1) return false;
  if (!StartsTlsRecord(data, iov, iovcnt, bytes)) return false;
  if (__atomic_exchange_n(&s->tls_opaque, 1, __ATOMIC_ACQ_REL) == 0) {
    __atomic_fetch_add(&g_tls_opaque_streams, 1, __ATOMIC_RELAXED);
  }
  __atomic_store_n(&s->broken[0], 1, __ATOMIC_RELAXED);
  __atomic_store_n(&s->broken[1], 1, __ATOMIC_RELAXED);
  return true;
}

// The first `bytes` of a call's bytes if they lie in one piece (`data`, or the first of
// `iov`), else nullptr.
const uint8_t* Contiguous(const void* data, const struct iovec* iov, int iovcnt, size_t bytes) {
  if (data != nullptr) return static_cast<const uint8_t*>(data);
  if (iovcnt > 0 && iov[0].iov_len >= bytes) return static_cast<const uint8_t*>(iov[0].iov_base);
  return nullptr;
}

// Feeds direction `d` of `s` from its boundary search (BoundarySearch) if that took these
// very bytes: logs what the feed's one Consume call would have (a header block, a
// boundary) and sets *ended. False (and the search is used up either way) if it cannot.
// The search belongs to the input direction, and is touched only with that one taken.
bool FeedFromSearch(ProtocolStream* s, int d, int fd, bool sending, int64_t entry, int64_t exit,
                    const void* data, const struct iovec* iov, int iovcnt, size_t bytes,
                    bool* ended) {
  BoundarySearch& search = s->search;
  if (d != (s->client ? 1 : 0) || !search.valid) return false;
  search.valid = false;
  protocols::Parser* parser = &ParserOf(s, d);
  const uint8_t* p = Contiguous(data, iov, iovcnt, bytes);
  if (search.consumed != parser->consumed || search.messages != parser->messages ||
      search.bytes != bytes || p == nullptr ||
      (search.hashed ? XXH3_64bits(p, bytes) != search.hash : p != search.source)) {
    return false;
  }
  s->parser_slot[d] = SpareSlot(s);
  parser = &ParserOf(s, d);
  LogHeaderBlock(fd, parser, sending, d == 0, entry, s->offset[d], p);
  s->offset[d] += bytes;
  *ended = search.ended;
  if (search.ended) {
    LogEnd(fd, parser, sending, d == 0, entry, exit, s->offset[d]);
  }
  return true;
}

// FeedStream's work with direction `d` of `s` taken (busy); leaves it taken. `raw`: the
// bytes of a system call (checked for TLS records), not a TLS library's plaintext.
void FeedTaken(ProtocolStream* s, int d, int fd, bool sending, int64_t entry, int64_t exit,
               const void* data, const struct iovec* iov, int iovcnt, size_t bytes,
               bool raw = true) {
  if (raw && OpaqueTls(s, d, data, iov, iovcnt, bytes)) return;
  uint8_t state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
  size_t early = 0;  // request bytes of earlier calls to feed before this call's
  if (state == kDetecting) {
    uint8_t expected = kDetecting;
    if (d == 0) {
      if (!Decide(s, data, iov, iovcnt, bytes)) {
        __atomic_store_n(&s->busy[d], 0, __ATOMIC_RELEASE);
        return;
      }
      early = s->early_length;
    } else if (!DecideFromResponse(s, data, iov, iovcnt, bytes)) {
      // The server spoke first: not a protocol Detect knows.
      __atomic_compare_exchange_n(&s->state, &expected, uint8_t(kOff), false, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE);
    }
    state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
  }
  if (state != kActive) {
    if (state == kOff) {
      // Held bytes (isolation.cc) are served only through the protocol bit's path: it
      // stays until they are gone.
      if (__atomic_load_n(&s->held.length, __ATOMIC_RELAXED) == 0) {
        __atomic_fetch_and(&g_fd_kind[fd], uint8_t(~kProtocolBit), __ATOMIC_RELAXED);
      }
    } else {
      __atomic_store_n(&s->broken[d], 1, __ATOMIC_RELAXED);  // bytes went by mid-decision
    }
    return;
  }
  protocols::Parser* parser = &ParserOf(s, d);
  bool at_start = false;
  auto feed = [&](const uint8_t* p, size_t n) {
    int stalls = 0;
    while (n > 0) {
      bool ended = false;
      size_t used = protocols::Consume(parser, p, n, &ended);
      if (used > n) used = n;  // defensive: never walk past the caller's bytes
      // A processor that takes nothing (twice, if it says a message ended) would loop
      // forever: the rest goes by unparsed and the direction stops.
      if (used == 0 && (!ended || ++stalls > 1)) {
        __atomic_store_n(&s->broken[d], 1, __ATOMIC_RELAXED);
        break;
      }
      LogHeaderBlock(fd, parser, sending, d == 0, entry, s->offset[d], p);
      s->offset[d] += used;
      p += used;
      n -= used;
      at_start = ended;
      // A message that ended in the kept bytes is logged with this call's times: only its
      // offset matters to reconcile.
      if (ended) {
        LogEnd(fd, parser, sending, d == 0, entry, exit, s->offset[d]);
      }
    }
  };
  if (early > 0) feed(s->early, early);
  if (__atomic_load_n(&s->broken[d], __ATOMIC_RELAXED) == 0 &&
      (early > 0 ||
       !FeedFromSearch(s, d, fd, sending, entry, exit, data, iov, iovcnt, bytes, &at_start))) {
    ForEachSegment(data, iov, iovcnt, bytes, feed);
  }
  // Only this direction's bit changes, and only its holder changes it: read first, so
  // that the locked update is made only when it does change.
  const uint8_t bit = uint8_t(1u << d);
  const bool was = (__atomic_load_n(&s->at_start, __ATOMIC_RELAXED) & bit) != 0;
  if (at_start && !was) {
    __atomic_fetch_or(&s->at_start, bit, __ATOMIC_RELAXED);
  } else if (!at_start && was) {
    __atomic_fetch_and(&s->at_start, uint8_t(~bit), __ATOMIC_RELAXED);
  }
}

}  // namespace

namespace {

void Feed(int fd, bool sending, int64_t entry, int64_t exit, const void* data,
          const struct iovec* iov, int iovcnt, size_t bytes, bool raw) {
  if (bytes == 0 || fd < 0 || fd >= kFdTableSize) return;
  if (sending && Isolating()) SentOn(fd);
  ProtocolStream* s = StreamAt(__atomic_load_n(&g_fd_stream[fd], __ATOMIC_ACQUIRE));
  if (s == nullptr) return;
  int d = sending == s->client ? 0 : 1;  // the client sends requests, the server receives them
  if (__atomic_load_n(&s->broken[d], __ATOMIC_RELAXED) != 0) return;
  // Two threads moving bytes the same way at once: which went first is not known here,
  // so the direction's parser stops rather than guess.
  if (__atomic_exchange_n(&s->busy[d], 1, __ATOMIC_ACQUIRE) != 0) {
    __atomic_store_n(&s->broken[d], 1, __ATOMIC_RELAXED);
    return;
  }
  FeedTaken(s, d, fd, sending, entry, exit, data, iov, iovcnt, bytes, raw);
  __atomic_store_n(&s->busy[d], 0, __ATOMIC_RELEASE);
}

}  // namespace

void FeedStream(int fd, bool sending, int64_t entry, int64_t exit, const void* data,
                const struct iovec* iov, int iovcnt, size_t bytes) {
  Feed(fd, sending, entry, exit, data, iov, iovcnt, bytes, true);
}

void FeedTlsPlaintext(int fd, bool sending, int64_t entry, int64_t exit, const void* data,
                      size_t bytes) {
  Feed(fd, sending, entry, exit, data, nullptr, 0, bytes, false);
}

uint64_t TlsOpaqueStreams() { return __atomic_load_n(&g_tls_opaque_streams, __ATOMIC_RELAXED); }

// --- event isolation's access to a stream's input side (isolation.cc) -------------------

uint32_t g_held_streams = 0;
uint64_t g_held_fds[kHeldFdBits / 64];
bool g_streams_shared = false;

void StartHolding(int fd) {
  __atomic_add_fetch(&g_held_streams, 1, __ATOMIC_RELAXED);
  // After the bytes were stored: a wait that clears a stale bit looks at the bytes again
  // after clearing it (isolation_waits.cc), so the two cannot both miss them.
  if (fd >= 0 && fd < kHeldFdBits) {
    __atomic_fetch_or(&g_held_fds[fd >> 6], uint64_t(1) << (fd & 63), __ATOMIC_SEQ_CST);
  }
}

bool LockInput(int fd, InputSide* side) {
  if (fd < 0 || fd >= kFdTableSize) return false;
  ProtocolStream* s = StreamAt(__atomic_load_n(&g_fd_stream[fd], __ATOMIC_ACQUIRE));
  if (s == nullptr) return false;
  int d = s->client ? 1 : 0;  // a client reads responses, a server requests
  // Holders never block (a copy, a parse, a record), so a short wait is enough; one that
  // does not end is a signal handler reading inside a read on this thread: no isolation.
  for (int spins = 0; __atomic_exchange_n(&s->busy[d], 1, __ATOMIC_ACQUIRE) != 0; ++spins) {
    if (spins > 1000) return false;
    sched_yield();
  }
  side->stream = s;
  side->direction = d;
  side->held = &s->held;
  return true;
}

void UnlockInput(const InputSide& side) {
  auto* s = static_cast<ProtocolStream*>(side.stream);
  __atomic_store_n(&s->busy[side.direction], 0, __ATOMIC_RELEASE);
}

size_t InputBoundary(const InputSide& side, const void* data, const struct iovec* iov, int iovcnt,
                     size_t n) {
  auto* s = static_cast<ProtocolStream*>(side.stream);
  int d = side.direction;
  s->search.valid = false;
  if (__atomic_load_n(&s->broken[d], __ATOMIC_RELAXED) != 0) return n;
  uint8_t state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
  // A copy of the parser finds the end without logging it: the bytes are fed (and the
  // boundary logged) after the call's record, once the program gets them. The copy is
  // the stream's boundary search, which the feed may take (BoundarySearch).
  protocols::Parser local;
  protocols::Parser& copy = state == kActive ? s->parsers[SpareSlot(s)] : local;
  protocols::Protocol detected = protocols::kNone;
  size_t early_bytes = 0;
  if (state == kActive) {
    s->search.consumed = ParserOf(s, d).consumed;
    s->search.messages = ParserOf(s, d).messages;
    protocols::CopyParser(&copy, &ParserOf(s, d));
  } else if (state == kDetecting && d == 0) {
    // The first request of a detected stream: decide as FeedStream will (Decide), on a
    // parser of our own that has seen the bytes kept from earlier calls.
    uint8_t first[kDetectBytes];
    size_t have = 0;
    protocols::Protocol protocol = DetectFirstBytes(s, data, iov, iovcnt, n, first, &have);
    if (protocol == protocols::kNone) return n;
    detected = protocol;
    early_bytes = s->early_length;
    InitParser(&copy, protocol, protocols::Direction::kRequest);
    for (size_t i = 0; i < s->early_length;) {
      bool ended = false;
      size_t used = protocols::Consume(&copy, s->early + i, s->early_length - i, &ended);
      if (used == 0) return n;
      i += used;
    }
  } else {
    return n;
  }
  size_t at = 0;
  bool done = false, found = false;
  int calls = 0;
  bool first_ended = false;
  ForEachSegment(data, iov, iovcnt, n, [&](const uint8_t* p, size_t length) {
    size_t i = 0;
    while (!done && i < length) {
      bool ended = false;
      size_t used = protocols::Consume(&copy, p + i, length - i, &ended);
      if (used > length - i) used = length - i;
      if (++calls == 1) first_ended = ended;
      i += used;
      at += used;
      // An end with no byte before it in this call gives nothing to stop at.
      if (ended && at > 0) {
        found = done = true;
      } else if (used == 0) {
        done = true;  // a stalled processor: no end to stop at
      }
    }
  });
  if (found && detected != protocols::kNone) {
    // FeedStream decides on the bytes the program gets (Decide): cut only where those
    // bytes alone detect the same protocol, so the decision cannot differ.
    uint8_t first[kDetectBytes];
    size_t have = early_bytes < kDetectBytes ? early_bytes : kDetectBytes;
    memcpy(first, s->early, have);
    size_t limit = at;
    ForEachSegment(data, iov, iovcnt, n, [&](const uint8_t* p, size_t length) {
      size_t take = length < limit ? length : limit;
      if (take > kDetectBytes - have) take = kDetectBytes - have;
      memcpy(first + have, p, take);
      have += take;
      limit -= take < limit ? take : limit;
    });
    if (protocols::Detect(first, have) != detected) return n;
  }
  // One Consume call took what the program gets (up to the end found, or everything): the
  // feed of those bytes may take the copy instead of parsing them again.
  const uint8_t* p = Contiguous(data, iov, iovcnt, at);
  if (state == kActive && calls == 1 && at > 0 && p != nullptr && (found || at == n)) {
    const HeldBytes& held = s->held;
    s->search.ended = first_ended;
    s->search.bytes = at;
    s->search.source = p;
    s->search.hashed = held.data != nullptr && p >= held.data && p < held.data + held.capacity;
    if (s->search.hashed) s->search.hash = XXH3_64bits(p, at);
    s->search.valid = true;
  }
  return found ? at : n;
}

void FeedInputTaken(const InputSide& side, int fd, int64_t entry, int64_t exit, const void* data,
                    const struct iovec* iov, int iovcnt, size_t bytes) {
  auto* s = static_cast<ProtocolStream*>(side.stream);
  if (bytes == 0 || __atomic_load_n(&s->broken[side.direction], __ATOMIC_RELAXED) != 0) return;
  FeedTaken(s, side.direction, fd, false, entry, exit, data, iov, iovcnt, bytes);
}

bool FdIsInput(int fd) {
  if (fd < 0 || fd >= kFdTableSize) return false;
  ProtocolStream* s = StreamAt(__atomic_load_n(&g_fd_stream[fd], __ATOMIC_ACQUIRE));
  if (s == nullptr || __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == kOff) return false;
  return __atomic_load_n(&s->broken[s->client ? 1 : 0], __ATOMIC_RELAXED) == 0;
}

bool FdHasHeld(int fd) {
  if (fd < 0 || fd >= kFdTableSize) return false;
  ProtocolStream* s = StreamAt(__atomic_load_n(&g_fd_stream[fd], __ATOMIC_ACQUIRE));
  return s != nullptr && __atomic_load_n(&s->held.length, __ATOMIC_RELAXED) != 0;
}

void AbandonStream(int fd, bool sending) {
  if (fd < 0 || fd >= kFdTableSize) return;
  ProtocolStream* s = StreamAt(__atomic_load_n(&g_fd_stream[fd], __ATOMIC_ACQUIRE));
  if (s != nullptr) __atomic_store_n(&s->broken[sending == s->client ? 0 : 1], 1, __ATOMIC_RELAXED);
}

void AttachDatagramProtocol(int fd, uint16_t port, bool bound) {
  if (fd < 0 || fd >= kFdTableSize || !IsDnsPort(port)) return;
  __atomic_store_n(&g_fd_stream[fd], bound ? kDnsServerSocket : kDnsClientSocket, __ATOMIC_RELEASE);
  __atomic_fetch_or(&g_fd_kind[fd], kProtocolBit, __ATOMIC_RELEASE);
}

void FeedDatagram(int fd, bool sending, int64_t entry, int64_t exit, const void* data,
                  const struct iovec* iov, int iovcnt, size_t bytes, const struct sockaddr* peer,
                  socklen_t peer_length) {
  if (g_selection.dns_port_count == 0 || fd < 0 || fd >= kFdTableSize) return;
  uint32_t marker = __atomic_load_n(&g_fd_stream[fd], __ATOMIC_RELAXED);
  bool request;  // a query: to a DNS port, or arriving at a socket bound to one
  uint16_t peer_port = PortOf(peer, peer_length);
  if (peer_port != 0 && IsDnsPort(peer_port)) {
    request = sending;
    // A socket that sent a query is a resolver's: answers it receives without asking
    // for their source (recv, read) are DNS too.
    if (sending && marker == 0) AttachDatagramProtocol(fd, peer_port, false);
  } else if (marker == kDnsServerSocket || marker == kDnsClientSocket) {
    request = (marker == kDnsClientSocket) == sending;
  } else {
    return;
  }
  uint8_t copy[1500];  // the usual datagram fits; a longer one is read in its first 1500 bytes
  size_t have = 0;
  ForEachSegment(data, iov, iovcnt, bytes, [&](const uint8_t* p, size_t n) {
    size_t take = n < sizeof copy - have ? n : sizeof copy - have;
    memcpy(copy + have, p, take);
    have += take;
  });
  protocols::Parser parser;
  protocols::Init(&parser, protocols::kDns,
                  request ? protocols::Direction::kRequest : protocols::Direction::kResponse);
  protocols::ConsumeDatagram(&parser, copy, have);
  LogBoundary(fd, protocols::kDns, sending, request, entry, exit, 0, &parser.attributes);
}

void ResetProtocolsAfterFork() {
  g_pool_lock = 0;
  // Feeds other threads were running at the fork never end here.
  for (uint32_t id = 1; id <= g_slots_used; ++id) {
    ProtocolStream* s = StreamAt(id);
    for (int d = 0; d < 2; ++d) {
      if (s->busy[d] != 0) {
        s->busy[d] = 0;
        s->broken[d] = 1;
      }
    }
  }
}

}  // namespace weft_preload
