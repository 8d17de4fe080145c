// TLS plaintext: wrappers for OpenSSL's and GnuTLS's record calls (docs/capture.md "TLS").
//
// Behind TLS the socket calls move ciphertext, in which no processor finds a message.
// The eBPF tracers hook SSL_read/SSL_write with uprobes; a preloaded library can simply
// interpose them. Each call is tied to its socket (SSL_get_rfd/SSL_get_wfd,
// gnutls_transport_get_int); from the first TLS call on a socket, the socket's entry in
// the descriptor table carries kTlsBit, and then:
//   - the TLS library's record calls are the connection's data: logged as kOpTlsRead and
//     kOpTlsWrite with the plaintext byte count (and payload prefix), counted in the
//     stream offsets, and fed to the stream's protocol processor;
//   - the system calls on the socket (the library's own, made inside these calls, and any
//     other) move ciphertext: io_calls.cc logs them as kOpTlsTransport, never as data.
// Bytes the program moved before TLS began (PostgreSQL's SSLRequest and its answer) stay
// ordinary data, and the plaintext offsets go on after them.
//
// The handshake functions are interposed only to tie the socket before the library's
// first ciphertext moves (the ClientHello must not be logged as data).
//
// The library links neither libssl nor GnuTLS: each real function is found with
// dlsym(RTLD_NEXT) the first time its wrapper runs, which can only happen in a program
// that has the library loaded; a program that never loads it pays nothing and gets
// nothing loaded by us (a library loaded RTLD_LOCAL is found with RTLD_NOLOAD).
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <sys/types.h>

#include "capture/preload/isolation.h"
#include "capture/preload/protocol_streams.h"
#include "capture/preload/runtime.h"

using namespace weft_preload;

namespace {

// OpenSSL's and GnuTLS's values, from their public headers (not included: the library
// must build without them).
constexpr int kSslErrorWantRead = 2;
constexpr int kSslErrorWantWrite = 3;
constexpr int kSslErrorSyscall = 5;
constexpr int kSslErrorZeroReturn = 6;
constexpr long kGnutlsAgain = -28;
constexpr long kGnutlsInterrupted = -52;

enum Library : int { kOpenssl = 0, kGnutls = 1 };
constexpr const char* kLibraryFiles[] = {"libssl.so.3", "libgnutls.so.30"};

// A TLS library's function, found on first use. Null if it cannot be found.
void* Find(int library, const char* name, void** slot) {
  void* f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (__builtin_expect(f != nullptr, 1)) return f;
  int saved_errno = errno;
  f = dlsym(RTLD_NEXT, name);
  if (f == nullptr) {
    // Loaded with RTLD_LOCAL (by a plugin): not in the global scope. Never loads it.
    if (void* handle = dlopen(kLibraryFiles[library], RTLD_LAZY | RTLD_NOLOAD)) {
      f = dlsym(handle, name);
      dlclose(handle);
    }
  }
  if (f != nullptr) __atomic_store_n(slot, f, __ATOMIC_RELEASE);
  errno = saved_errno;
  return f;
}

#define WEFT_TLS_FUNCTION(library, name, ret, params)                  \
  using name##_type = ret(*) params;                                   \
  name##_type Real_##name() {                                          \
    static void* slot = nullptr;                                       \
    return reinterpret_cast<name##_type>(Find(library, #name, &slot)); \
  }

WEFT_TLS_FUNCTION(kOpenssl, SSL_read, int, (void*, void*, int))
WEFT_TLS_FUNCTION(kOpenssl, SSL_write, int, (void*, const void*, int))
WEFT_TLS_FUNCTION(kOpenssl, SSL_read_ex, int, (void*, void*, size_t, size_t*))
WEFT_TLS_FUNCTION(kOpenssl, SSL_write_ex, int, (void*, const void*, size_t, size_t*))
WEFT_TLS_FUNCTION(kOpenssl, SSL_peek, int, (void*, void*, int))
WEFT_TLS_FUNCTION(kOpenssl, SSL_peek_ex, int, (void*, void*, size_t, size_t*))
WEFT_TLS_FUNCTION(kOpenssl, SSL_do_handshake, int, (void*))
WEFT_TLS_FUNCTION(kOpenssl, SSL_connect, int, (void*))
WEFT_TLS_FUNCTION(kOpenssl, SSL_accept, int, (void*))
WEFT_TLS_FUNCTION(kOpenssl, SSL_shutdown, int, (void*))
WEFT_TLS_FUNCTION(kOpenssl, SSL_get_rfd, int, (const void*))
WEFT_TLS_FUNCTION(kOpenssl, SSL_get_wfd, int, (const void*))
WEFT_TLS_FUNCTION(kOpenssl, SSL_get_error, int, (const void*, int))
WEFT_TLS_FUNCTION(kGnutls, gnutls_record_recv, ssize_t, (void*, void*, size_t))
WEFT_TLS_FUNCTION(kGnutls, gnutls_record_send, ssize_t, (void*, const void*, size_t))
WEFT_TLS_FUNCTION(kGnutls, gnutls_handshake, int, (void*))
WEFT_TLS_FUNCTION(kGnutls, gnutls_bye, int, (void*, int))
WEFT_TLS_FUNCTION(kGnutls, gnutls_transport_get_int, int, (void*))
#undef WEFT_TLS_FUNCTION

// Depth of TLS calls on this thread: a TLS call made inside another (a BIO that calls
// SSL_read_ex under SSL_read) is the outer one's business, not logged again.
__thread int t_tls_depth __attribute__((tls_model("initial-exec"))) = 0;

uint64_t g_tls_streams = 0;  // sockets tied to a TLS library (the end record's tls_streams)

// Ties `fd` to TLS: from now on its system calls are transport. -1 if `fd` is not a
// traced stream socket (a BIO pair, a memory BIO, a socket opened untraced): then the
// call is not logged at all.
int Tie(int fd) {
  uint8_t entry = FdEntry(fd);
  uint8_t kind = entry & uint8_t(~kFlagBits);
  if (kind != wire::kKindTcp && kind != wire::kKindUnixStream) return -1;
  if ((entry & kTlsBit) == 0) {
    uint8_t before = __atomic_fetch_or(&g_fd_kind[fd], kTlsBit, __ATOMIC_RELEASE);
    if ((before & kTlsBit) == 0) __atomic_fetch_add(&g_tls_streams, 1, __ATOMIC_RELAXED);
  }
  return fd;
}

// The socket an OpenSSL object reads from (`reading`) or writes to, tied; -1 if none.
// The program's errno is kept: the library's getters are not asked to.
int OpensslFd(const void* ssl, bool reading) {
  if (ssl == nullptr) return -1;
  int saved_errno = errno;
  auto get = reading ? Real_SSL_get_rfd() : Real_SSL_get_wfd();
  int fd = get != nullptr ? Tie(get(ssl)) : -1;
  errno = saved_errno;
  return fd;
}
void TieOpenssl(const void* ssl) {
  OpensslFd(ssl, true);
  OpensslFd(ssl, false);
}
int GnutlsFd(void* session) {
  int saved_errno = errno;
  auto get = Real_gnutls_transport_get_int();
  int fd = session != nullptr && get != nullptr ? Tie(get(session)) : -1;
  errno = saved_errno;
  return fd;
}

// What an OpenSSL call that returned `r` <= 0 did, as a record's result: 0 for the end of
// the stream, -errno otherwise (want read/write: -EAGAIN, as a non-blocking socket's).
long OpensslFailure(const void* ssl, int r, int error) {
  auto get_error = Real_SSL_get_error();
  int code = get_error != nullptr ? get_error(ssl, r) : 0;
  switch (code) {
    case kSslErrorZeroReturn:
      return 0;
    case kSslErrorWantRead:
    case kSslErrorWantWrite:
      return -EAGAIN;
    case kSslErrorSyscall:
      return error != 0 ? -error : 0;  // 0: the peer closed without close_notify
    default:
      return -EPROTO;
  }
}
long GnutlsResult(ssize_t r) {
  if (r >= 0) return long(r);
  if (r == kGnutlsAgain) return -EAGAIN;
  if (r == kGnutlsInterrupted) return -EINTR;
  return -EPROTO;
}

// Logs one record call that moved `bytes` (result > 0) of plaintext at `data`, and feeds
// them to the stream's processor.
void LogPlaintext(uint8_t op, int fd, int64_t entry, long result, int function, const void* data) {
  int64_t exit = NowNs();
  LogCallWithPayload(op, fd, entry, exit, result, function, data, nullptr, 0);
  if (result > 0 && FdHasProtocol(fd)) {
    FeedTlsPlaintext(fd, op == wire::kOpTlsWrite, entry, exit, data, size_t(result));
  }
}

// Whether to log this call: logging on, and not inside another TLS call.
bool Watched() { return t_tls_depth == 0 && Logging(); }

// The OpenSSL object whose last read on this thread was told want-read by isolation
// (isolation.h, "TLS"): SSL_get_error says SSL_ERROR_WANT_READ for it until the thread's
// next record call.
__thread const void* t_again_ssl __attribute__((tls_model("initial-exec"))) = nullptr;

// The reader IsolatedTlsRead calls: `call(buffer, n, &moved)` is the library's read, its
// result and errno kept when it moved nothing, and `failure(result, errno)` what that was
// (-EAGAIN: it would block).
template <typename Call, typename Failure>
struct Reader {
  Call* call;
  Failure* failure;
  long last = 0;
  int error = 0;
  static long Read(void* context, void* buffer, size_t n) {
    auto* self = static_cast<Reader*>(context);
    size_t moved = 0;
    ++t_tls_depth;
    long r = (*self->call)(buffer, n, &moved);
    self->error = errno;
    --t_tls_depth;
    if (moved > 0) return long(moved);
    self->last = r;
    return (*self->failure)(r, self->error) == -EAGAIN ? 0 : -1;
  }
};

// An isolated record read (isolation.h, "TLS") on `fd`, whose call was entered at `entry`:
// true if isolation handled it, with what the program gets in *r (`ok`: the library's
// result for bytes moved, `again`: its want-read result), the bytes in *moved, and
// *told_again set if the program is told want-read without the library saying so.
template <typename Call, typename Failure>
bool IsolatedRecordRead(int fd, int64_t entry, int function, void* buffer, size_t n, Call& call,
                        long ok, long again, Failure failure, long* r, size_t* moved,
                        bool* told_again) {
  *told_again = false;
  if ((FdEntry(fd) & kProtocolBit) == 0 || !Isolating()) return false;
  Reader<Call, Failure> reader{&call, &failure};
  size_t bytes = 0;
  TlsRead outcome = IsolatedTlsRead(fd, buffer, n, {&Reader<Call, Failure>::Read, &reader}, &bytes);
  if (outcome == TlsRead::kNotIsolated) return false;
  ResumeCall(entry);
  switch (outcome) {
    case TlsRead::kBytes:
      LogPlaintext(wire::kOpTlsRead, fd, entry, long(bytes), function, buffer);
      *moved = bytes;
      *r = ok < 0 ? long(bytes) : ok;  // ok < 0: the result is the byte count
      return true;
    case TlsRead::kAgain:
      LogPlaintext(wire::kOpTlsRead, fd, entry, -EAGAIN, function, buffer);
      *told_again = true;
      *r = again;
      errno = EAGAIN;
      return true;
    default:
      LogPlaintext(wire::kOpTlsRead, fd, entry, failure(reader.last, reader.error), function,
                   buffer);
      *r = reader.last;
      errno = reader.error;
      return true;
  }
}

// An OpenSSL read (SSL_read, SSL_read_ex): `call(buffer, n, &moved)` is the library's.
// `ex`: SSL_read_ex's results (1 for bytes, 0 for none) rather than SSL_read's.
template <typename Call>
int OpensslRead(void* ssl, int function, void* buffer, size_t n, bool ex, Call call,
                size_t* moved) {
  *moved = 0;
  t_again_ssl = nullptr;
  int fd = Watched() ? OpensslFd(ssl, true) : -1;
  if (fd < 0) {
    ++t_tls_depth;
    int r = int(call(buffer, n, moved));
    --t_tls_depth;
    return r;
  }
  int64_t entry = BeginCall();
  long r = 0;
  auto failure = [ssl](long last, int error) { return OpensslFailure(ssl, int(last), error); };
  bool told_again = false;
  if (IsolatedRecordRead(fd, entry, function, buffer, n, call, ex ? 1 : -1, ex ? 0 : -1, failure,
                         &r, moved, &told_again)) {
    // Only isolation's own want-read: the library's failures are its SSL_get_error's.
    if (told_again) t_again_ssl = ssl;
    return int(r);
  }
  ++t_tls_depth;
  r = call(buffer, n, moved);
  int error = errno;
  --t_tls_depth;
  ResumeCall(entry);
  long result = *moved > 0 ? long(*moved) : OpensslFailure(ssl, int(r), error);
  LogPlaintext(wire::kOpTlsRead, fd, entry, result, function, buffer);
  errno = error;
  return int(r);
}

// The shape every OpenSSL record wrapper shares: tie, call, log.
template <typename Call>
int OpensslRecord(void* ssl, bool reading, int function, const void* data, Call call,
                  size_t* moved) {
  t_again_ssl = nullptr;
  int fd = Watched() ? OpensslFd(ssl, reading) : -1;
  if (fd < 0) {
    ++t_tls_depth;
    int r = call();
    --t_tls_depth;
    return r;
  }
  int64_t entry = BeginCall();
  ++t_tls_depth;
  int r = call();
  int error = errno;
  --t_tls_depth;
  ResumeCall(entry);  // the system calls inside ended the mark BeginCall set
  long result = r > 0 ? long(moved != nullptr ? *moved : size_t(r)) : OpensslFailure(ssl, r, error);
  LogPlaintext(reading ? wire::kOpTlsRead : wire::kOpTlsWrite, fd, entry, result, function, data);
  errno = error;
  return r;
}

// A handshake or shutdown: ties the socket first, so that its ciphertext is transport.
template <typename Call>
int Handshake(void* ssl, Call call) {
  t_again_ssl = nullptr;
  if (Watched()) TieOpenssl(ssl);
  ++t_tls_depth;
  int r = call();
  --t_tls_depth;
  return r;
}

// A GnuTLS record call: the plaintext it moved, logged on the socket it is tied to.
template <typename Call>
ssize_t GnutlsRecord(void* session, bool reading, const void* buffer, size_t n, Call call) {
  int fd = Watched() ? GnutlsFd(session) : -1;
  if (fd < 0) {
    ++t_tls_depth;
    ssize_t r = call();
    --t_tls_depth;
    return r;
  }
  int64_t entry = BeginCall();
  if (reading) {
    auto read = [&](void* into, size_t length, size_t* moved) -> long {
      ssize_t got = Real_gnutls_record_recv()(session, into, length);
      *moved = got > 0 ? size_t(got) : 0;
      return long(got);
    };
    long r = 0;
    size_t moved = 0;
    bool told_again = false;
    auto failure = [](long last, int) { return GnutlsResult(ssize_t(last)); };
    if (IsolatedRecordRead(fd, entry, wire::kTlsGnutls, const_cast<void*>(buffer), n, read, -1,
                           kGnutlsAgain, failure, &r, &moved, &told_again)) {
      return ssize_t(r);
    }
  }
  ++t_tls_depth;
  ssize_t r = call();
  int error = errno;
  --t_tls_depth;
  ResumeCall(entry);
  LogPlaintext(reading ? wire::kOpTlsRead : wire::kOpTlsWrite, fd, entry, GnutlsResult(r),
               wire::kTlsGnutls, buffer);
  errno = error;
  return r;
}

}  // namespace

namespace weft_preload {
uint64_t TlsStreams() { return __atomic_load_n(&g_tls_streams, __ATOMIC_RELAXED); }
}  // namespace weft_preload

// --- OpenSSL (libssl 1.1 and 3) ------------------------------------------------------------

WEFT_EXPORT int SSL_read(void* ssl, void* buffer, int n) {
  auto real = Real_SSL_read();
  if (real == nullptr) return -1;
  size_t moved = 0;
  return OpensslRead(
      ssl, wire::kTlsOpensslPlain, buffer, n > 0 ? size_t(n) : 0, false,
      [&](void* into, size_t length, size_t* got) -> long {
        int r = real(ssl, into, int(length));
        *got = r > 0 ? size_t(r) : 0;
        return r;
      },
      &moved);
}

WEFT_EXPORT int SSL_write(void* ssl, const void* buffer, int n) {
  auto real = Real_SSL_write();
  if (real == nullptr) return -1;
  return OpensslRecord(
      ssl, false, wire::kTlsOpensslPlain, buffer, [&] { return real(ssl, buffer, n); }, nullptr);
}

WEFT_EXPORT int SSL_read_ex(void* ssl, void* buffer, size_t n, size_t* read_bytes) {
  auto real = Real_SSL_read_ex();
  if (real == nullptr) return 0;
  size_t moved = 0;
  int r = OpensslRead(
      ssl, wire::kTlsOpensslEx, buffer, n, true,
      [&](void* into, size_t length, size_t* got) -> long {
        *got = 0;
        int done = real(ssl, into, length, got);
        if (done <= 0) *got = 0;
        return done;
      },
      &moved);
  if (read_bytes != nullptr) *read_bytes = moved;
  return r;
}

WEFT_EXPORT int SSL_write_ex(void* ssl, const void* buffer, size_t n, size_t* written) {
  auto real = Real_SSL_write_ex();
  if (real == nullptr) return 0;
  size_t moved = 0;
  int r = OpensslRecord(
      ssl, false, wire::kTlsOpensslEx, buffer, [&] { return real(ssl, buffer, n, &moved); },
      &moved);
  if (written != nullptr) *written = moved;
  return r;
}

// After a read isolation told want-read (OpensslRead), the program asks why.
WEFT_EXPORT int SSL_get_error(const void* ssl, int ret) {
  if (ssl != nullptr && ssl == t_again_ssl && ret <= 0) return kSslErrorWantRead;
  auto real = Real_SSL_get_error();
  return real != nullptr ? real(ssl, ret) : kSslErrorSyscall;
}

// A peek moves no plaintext (the next read moves it again), but may read ciphertext.
WEFT_EXPORT int SSL_peek(void* ssl, void* buffer, int n) {
  auto real = Real_SSL_peek();
  if (real == nullptr) return -1;
  return Handshake(ssl, [&] { return real(ssl, buffer, n); });
}

WEFT_EXPORT int SSL_peek_ex(void* ssl, void* buffer, size_t n, size_t* read_bytes) {
  auto real = Real_SSL_peek_ex();
  if (real == nullptr) return 0;
  return Handshake(ssl, [&] { return real(ssl, buffer, n, read_bytes); });
}

WEFT_EXPORT int SSL_do_handshake(void* ssl) {
  auto real = Real_SSL_do_handshake();
  if (real == nullptr) return -1;
  return Handshake(ssl, [&] { return real(ssl); });
}

WEFT_EXPORT int SSL_connect(void* ssl) {
  auto real = Real_SSL_connect();
  if (real == nullptr) return -1;
  return Handshake(ssl, [&] { return real(ssl); });
}

WEFT_EXPORT int SSL_accept(void* ssl) {
  auto real = Real_SSL_accept();
  if (real == nullptr) return -1;
  return Handshake(ssl, [&] { return real(ssl); });
}

WEFT_EXPORT int SSL_shutdown(void* ssl) {
  auto real = Real_SSL_shutdown();
  if (real == nullptr) return -1;
  return Handshake(ssl, [&] { return real(ssl); });
}

// --- GnuTLS (3.x) ------------------------------------------------------------------------

WEFT_EXPORT ssize_t gnutls_record_recv(void* session, void* buffer, size_t n) {
  auto real = Real_gnutls_record_recv();
  if (real == nullptr) return -1;
  return GnutlsRecord(session, true, buffer, n, [&] { return real(session, buffer, n); });
}

WEFT_EXPORT ssize_t gnutls_record_send(void* session, const void* buffer, size_t n) {
  auto real = Real_gnutls_record_send();
  if (real == nullptr) return -1;
  return GnutlsRecord(session, false, buffer, n, [&] { return real(session, buffer, n); });
}

WEFT_EXPORT int gnutls_handshake(void* session) {
  auto real = Real_gnutls_handshake();
  if (real == nullptr) return -1;
  if (Watched()) GnutlsFd(session);
  ++t_tls_depth;
  int r = real(session);
  --t_tls_depth;
  return r;
}

WEFT_EXPORT int gnutls_bye(void* session, int how) {
  auto real = Real_gnutls_bye();
  if (real == nullptr) return -1;
  if (Watched()) GnutlsFd(session);
  ++t_tls_depth;
  int r = real(session, how);
  --t_tls_depth;
  return r;
}
