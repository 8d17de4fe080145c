// Thread buffers, records and the life of the process for libweft-preload.so (see
// runtime.h for the cost rules). WAP5 §3: one log per process, fork followed.
#include "capture/preload/runtime.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "capture/go_image.h"
#include "capture/preload/isolation.h"
#include "capture/preload/log_file.h"
#include "capture/preload/protocol_streams.h"
#include "capture/preload/real.h"

namespace weft_preload {

uint8_t g_fd_kind[kFdTableSize];
RealFunctions g_real;
bool g_real_resolved = false;

void ResolveRealFunctions() {
#define WEFT_PRELOAD_RESOLVE(name, ret, params) \
  g_real.name = reinterpret_cast<ret(*) params>(dlsym(RTLD_NEXT, #name));
  WEFT_PRELOAD_REAL_FUNCTIONS(WEFT_PRELOAD_RESOLVE)
#undef WEFT_PRELOAD_RESOLVE
  __atomic_store_n(&g_real_resolved, true, __ATOMIC_RELEASE);
}

namespace {

constexpr uint32_t kChunkSize = 64 * 1024;  // the largest piece of the log a thread maps
constexpr uint32_t kMaxPayloadPrefix = 4096;
constexpr int kMaxThreads = 4096;

// kEnded: the end record is written (exit, exec, a terminating signal) but the process
// still runs: other threads, later exit handlers. Their records go on into the log, so
// that nothing the program does before it is gone is missing.
enum State : int { kOff = 0, kOn = 1, kEnded = 2 };
int g_state = kOff;
int g_dying = 0;  // BeginDying: a terminating signal is ending the process
uint64_t g_dropped = 0;
uint64_t g_failed_writes = 0;
uint64_t g_untraced_io = 0;
pthread_key_t g_thread_key;

enum BufferHold : uint32_t { kFree = 0, kHeldByOwner = 1, kHeldByEnd = 2 };

// A thread's place in the log: the chunk it appends to, and its segment there (see
// wire::SegmentHeader). Records go straight into the chunk's shared mapping of the file,
// so a record is in the page cache the moment it is committed, and only the record being
// written when the process is killed can be lost. A thread that ends leaves its chunk
// here for the next new thread, which starts its own segment after the sealed one.
struct ThreadBuffer {
  uint32_t busy;  // kHeldByOwner while its thread (or a signal handler on it) writes a
                  // record or changes chunk; kHeldByEnd while the end of the log seals it
  int32_t tid;
  pthread_t self;  // for pthread_setname_np of another thread (name_calls.cc)
  int slot;
  uint32_t idle;       // 1: its thread ended; the next new thread takes it over
  int64_t call_since;  // entry time of a byte-moving call in progress (BeginCall), or 0
  uint64_t untraced_io;
  MappedChunk chunk;  // start == nullptr: none yet (the next record maps one)
  uint32_t segment;   // where this thread's segment starts in the chunk (if open)
  uint32_t used;      // record bytes in it; 0: no open segment (the next record starts one)
};

// Every buffer, for exit and exec. Buffers are never unmapped while the process runs (a
// thread ending hands its buffer on to the next new thread), so the exit path may touch
// any of them at any time.
ThreadBuffer* g_threads[kMaxThreads];
__thread ThreadBuffer* t_buffer __attribute__((tls_model("initial-exec"))) = nullptr;
__thread uint64_t t_untraced_io __attribute__((tls_model("initial-exec"))) = 0;
// weft_capture_set_untraced's mark: the thread is weft's own, and nothing it does is logged.
__thread int t_untraced __attribute__((tls_model("initial-exec"))) = 0;

void AddDropped(uint64_t n) { __atomic_fetch_add(&g_dropped, n, __ATOMIC_RELAXED); }

// Takes `b` for `holder` if it is free; returns what held it (kFree: now taken).
uint32_t TryHold(ThreadBuffer* b, BufferHold holder) {
  uint32_t held = kFree;
  __atomic_compare_exchange_n(&b->busy, &held, holder, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
  return held;
}
void Release(ThreadBuffer* b) { __atomic_store_n(&b->busy, kFree, __ATOMIC_RELEASE); }

// Copies all but the first 8 bytes of a record (or segment header) to `at`; Commit then
// stores the first 8 bytes, released: a reader of the file (even after a SIGKILL) sees the
// whole of it or, where its first 8 bytes are still zero, nothing.
void WriteBody(uint8_t* at, const void* item, uint32_t size) {
  memcpy(at + 8, static_cast<const uint8_t*>(item) + 8, size - 8);
}
void Commit(uint8_t* at, const void* item) {
  uint64_t head;
  memcpy(&head, item, 8);
  __atomic_store_n(reinterpret_cast<uint64_t*>(at), head, __ATOMIC_RELEASE);
}

// Starts a segment for `tid` at `at` in `chunk`.
void StartSegment(uint8_t* at, int32_t tid) {
  wire::SegmentHeader h;
  memset(&h, 0, sizeof h);
  h.magic = wire::kSegmentMagic;
  h.tid = tid;
  h.dropped_events = __atomic_load_n(&g_dropped, __ATOMIC_RELAXED);
  h.header_checksum = uint32_t(XXH3_64bits(&h, 16));
  WriteBody(at, &h, sizeof h);
  Commit(at, &h);
}

// Seals the segment at `at` holding `used` record bytes: checksum, then size (released).
void SealSegment(uint8_t* at, uint32_t used) {
  auto* h = reinterpret_cast<wire::SegmentHeader*>(at);
  h->sealed_checksum = uint32_t(XXH3_64bits(at + sizeof *h, used));
  __atomic_store_n(&h->sealed_size, used, __ATOMIC_RELEASE);
}

// Where the next segment may start in b's chunk.
uint32_t ChunkUsed(const ThreadBuffer* b) {
  return b->used == 0 ? b->segment : b->segment + uint32_t(sizeof(wire::SegmentHeader)) + b->used;
}

// Seals b's open segment, if any; the chunk stays b's. Called with b->busy held.
void SealOwnSegment(ThreadBuffer* b) {
  if (b->untraced_io != 0) {
    __atomic_fetch_add(&g_untraced_io, b->untraced_io, __ATOMIC_RELAXED);
    b->untraced_io = 0;
  }
  if (b->used == 0) return;
  SealSegment(b->chunk.start + b->segment, b->used);
  b->segment = ChunkUsed(b);
  b->used = 0;
}

// Room for a segment header and `size` record bytes in b's chunk (a new one if need be):
// returns where the records go, or nullptr (the log cannot grow). Called with b->busy held.
uint8_t* MakeRoom(ThreadBuffer* b, uint32_t size, int32_t tid) {
  uint32_t header = b->used == 0 ? uint32_t(sizeof(wire::SegmentHeader)) : 0;
  if (b->chunk.start == nullptr || ChunkUsed(b) + header + size > b->chunk.size) {
    SealOwnSegment(b);
    ReleaseChunk(&b->chunk);
    b->segment = b->used = 0;
    if (!MapNewChunk(&b->chunk)) {
      __atomic_fetch_add(&g_failed_writes, 1, __ATOMIC_RELAXED);
      return nullptr;
    }
  }
  if (b->used == 0) StartSegment(b->chunk.start + b->segment, tid);
  return b->chunk.start + b->segment + sizeof(wire::SegmentHeader) + b->used;
}

void OnThreadExit(void* p) {
  auto* b = static_cast<ThreadBuffer*>(p);
  if (TryHold(b, kHeldByOwner) != kFree) return;  // the end of the log seals it
  SealOwnSegment(b);
  t_buffer = nullptr;
  // Released before it is offered: a thread adopting it (NewThreadBuffer) in between would
  // find it still held and drop its first record, the THREAD record that links it to its
  // creator (the testbed's spawn model starts thousands of short threads a second).
  Release(b);
  __atomic_store_n(&b->idle, 1, __ATOMIC_RELEASE);
}

ThreadBuffer* AdoptBuffer(ThreadBuffer* b) {
  b->tid = SysGetTid();
  __atomic_store_n(&b->self, pthread_self(), __ATOMIC_RELAXED);
  b->call_since = 0;
  b->untraced_io += t_untraced_io;
  t_untraced_io = 0;
  pthread_setspecific(g_thread_key, b);
  t_buffer = b;
  return b;
}

ThreadBuffer* NewThreadBuffer() {
  for (int i = 0; i < kMaxThreads; ++i) {  // a buffer whose thread ended
    ThreadBuffer* b = __atomic_load_n(&g_threads[i], __ATOMIC_ACQUIRE);
    if (b == nullptr) break;
    uint32_t idle = 1;
    if (__atomic_compare_exchange_n(&b->idle, &idle, 0, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED)) {
      return AdoptBuffer(b);
    }
  }
  void* memory = mmap(nullptr, sizeof(ThreadBuffer), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return nullptr;
  auto* b = static_cast<ThreadBuffer*>(memory);
  b->slot = -1;
  for (int i = 0; i < kMaxThreads && b->slot < 0; ++i) {
    ThreadBuffer* expected = nullptr;
    if (__atomic_compare_exchange_n(&g_threads[i], &expected, b, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED)) {
      b->slot = i;
    }
  }
  if (b->slot < 0) {  // more live threads than slots: this one is not logged
    munmap(memory, sizeof *b);
    return nullptr;
  }
  return AdoptBuffer(b);
}

// Takes the calling thread's own buffer for a record. Held by this thread already, a
// signal handler interrupted a record: the new one is dropped. Held by the end of the log
// (another thread sealing every segment at exit or exec), it is free again within
// microseconds: wait, up to 50 ms, rather than lose the record.
bool TakeOwnBuffer(ThreadBuffer* b) {
  int64_t deadline = 0;
  for (;;) {
    uint32_t held = TryHold(b, kHeldByOwner);
    if (held == kFree) return true;
    if (held != kHeldByEnd) return false;
    if (deadline == 0) {
      deadline = NowNs() + 50'000'000;
    } else if (NowNs() > deadline) {
      return false;
    }
    sched_yield();
  }
}

// A name record for thread `tid`: `name`, or the calling thread's own name if null.
wire::NameRecord NameRecordOf(int32_t tid, uint8_t reason, const char* name) {
  wire::NameRecord r;
  memset(&r, 0, sizeof r);
  r.type = wire::kNameRecord;
  r.reason = reason;
  r.size = sizeof r;
  r.tid = tid;
  r.time_ns = NowNs();
  if (name == nullptr) {
    syscall(SYS_prctl, PR_GET_NAME, r.name, 0, 0, 0);  // at most 16 bytes, NUL included
  } else {
    CopyString(r.name, sizeof r.name, name);
  }
  r.name[sizeof r.name - 1] = '\0';
  return r;
}

// Appends one record, and optionally a second one that must stay right after it (and is
// committed with it: second, then first, so a reader never sees it without the first).
void Append(const void* first, uint32_t first_size, const void* second, uint32_t second_size) {
  ThreadBuffer* b = t_buffer;
  if (__builtin_expect(b == nullptr, 0)) b = NewThreadBuffer();
  uint32_t count = second_size != 0 ? 2 : 1;
  if (b == nullptr || !TakeOwnBuffer(b)) {
    AddDropped(count);
    return;
  }
  __atomic_store_n(&b->call_since, 0, __ATOMIC_RELAXED);
  uint8_t* at = b->chunk.start + b->segment + sizeof(wire::SegmentHeader) + b->used;
  uint32_t end =
      b->segment + uint32_t(sizeof(wire::SegmentHeader)) + b->used + first_size + second_size;
  if (__builtin_expect(b->used == 0 || end > b->chunk.size, 0)) {
    // A new segment: it opens with the thread's name, so that every segment (and a
    // forked child's first) says whose records follow.
    at = MakeRoom(b, sizeof(wire::NameRecord) + first_size + second_size, b->tid);
    if (at == nullptr) {
      AddDropped(count);
      Release(b);
      return;
    }
    wire::NameRecord name = NameRecordOf(b->tid, wire::kNameFirstSeen, nullptr);
    WriteBody(at, &name, sizeof name);
    Commit(at, &name);
    b->used += sizeof name;
    at += sizeof name;
  }
  WriteBody(at, first, first_size);
  if (second_size != 0) {
    WriteBody(at + first_size, second, second_size);
    Commit(at + first_size, second);
  }
  Commit(at, first);
  b->used += first_size + second_size;
  Release(b);
}

// The first min(prefix, bytes) bytes of `data` or `iov` as a payload record in `out`.
uint32_t BuildPayload(uint8_t* out, uint8_t op, int fd, const void* data, const struct iovec* iov,
                      int iovcnt, size_t bytes) {
  size_t want = PayloadPrefix();
  if (want > bytes) want = bytes;
  uint8_t* text = out + sizeof(wire::PayloadRecord);
  size_t copied = 0;
  if (data != nullptr) {
    memcpy(text, data, want);
    copied = want;
  } else {
    for (int i = 0; i < iovcnt && copied < want; ++i) {
      size_t n = iov[i].iov_len < want - copied ? iov[i].iov_len : want - copied;
      memcpy(text + copied, iov[i].iov_base, n);
      copied += n;
    }
  }
  uint32_t size = wire::RoundUp8(uint32_t(sizeof(wire::PayloadRecord) + copied));
  memset(text + copied, 0, size - sizeof(wire::PayloadRecord) - copied);
  wire::PayloadRecord r{wire::kPayloadRecord, op, uint16_t(size), fd, uint32_t(copied), 0};
  memcpy(out, &r, sizeof r);
  return size;
}

// Fills `w` from a socket address; a Unix path goes to `path` (returns its length).
void FillAddress(wire::WireAddress& w, const struct sockaddr* a, socklen_t length, char* path) {
  memset(&w, 0, sizeof w);
  if (a == nullptr || length < sizeof(sa_family_t)) return;
  if (a->sa_family == AF_INET && length >= sizeof(sockaddr_in)) {
    auto* in = reinterpret_cast<const sockaddr_in*>(a);
    w.family = wire::kFamilyIpv4;
    w.port = ntohs(in->sin_port);
    memcpy(w.addr, &in->sin_addr, 4);
  } else if (a->sa_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(a);
    w.port = ntohs(in6->sin6_port);
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {  // dual-stack: name the IPv4 peer as such
      w.family = wire::kFamilyIpv4;
      memcpy(w.addr, in6->sin6_addr.s6_addr + 12, 4);
    } else {
      w.family = wire::kFamilyIpv6;
      w.scope_id = in6->sin6_scope_id;
      memcpy(w.addr, &in6->sin6_addr, 16);
    }
  } else if (a->sa_family == AF_UNIX) {
    w.family = wire::kFamilyUnix;
    size_t n =
        length > offsetof(sockaddr_un, sun_path) ? length - offsetof(sockaddr_un, sun_path) : 0;
    const char* p = reinterpret_cast<const sockaddr_un*>(a)->sun_path;
    if (n > sizeof(sockaddr_un::sun_path)) n = sizeof(sockaddr_un::sun_path);
    if (n > 0 && p[0] != '\0') n = strnlen(p, n);  // a pathname, not an abstract name
    memcpy(path, p, n);
    w.path_length = uint8_t(n);
  }
}

uint64_t InodeOf(int fd) {
  struct stat st;
  return syscall(SYS_fstat, fd, &st) == 0 ? uint64_t(st.st_ino) : 0;
}

void AtExit() { EndLog(wire::kOpNone); }
__attribute__((destructor)) void AtUnload() { EndLog(wire::kOpNone); }

// Every socket and pipe open now (inherited through fork or exec) gets an endpoint record.
void NameOpenDescriptors() {
  int dir = SysOpen("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dir < 0) return;
  alignas(8) char buffer[4096];
  long n;
  while ((n = syscall(SYS_getdents64, dir, buffer, sizeof buffer)) > 0) {
    for (long at = 0; at < n;) {
      auto* entry = reinterpret_cast<::dirent64*>(buffer + at);
      at += entry->d_reclen;
      int fd = 0;
      const char* p = entry->d_name;
      if (*p < '0' || *p > '9') continue;
      for (; *p >= '0' && *p <= '9'; ++p) fd = fd * 10 + (*p - '0');
      if (fd == dir) continue;
      struct stat st;
      if (syscall(SYS_fstat, fd, &st) != 0) continue;
      uint8_t kind = 0;
      if (S_ISFIFO(st.st_mode)) {
        kind = wire::kKindPipe;
      } else if (S_ISSOCK(st.st_mode)) {
        int domain = 0, type = 0;
        socklen_t length = sizeof domain;
        getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length);
        length = sizeof type;
        getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length);
        kind = SocketKindOf(domain, type);
      }
      // A forked child keeps the parent's protocol streams (their memory was copied).
      SetFdKind(fd, uint8_t(kind | (FdEntry(fd) & (kProtocolBit | kTlsBit))));
      if (kind != 0) LogEndpoint(wire::kOpNone, fd, kind, nullptr, 0, NowNs());
    }
  }
  SysClose(dir);
}

void AfterForkInChild() {
  int state = __atomic_load_n(&g_state, __ATOMIC_RELAXED);
  if (state == kEnded) g_state = kOff;  // forked while exiting: the parent's log is not ours
  if (state != kOn) return;
  ResetLogLockAfterFork();
  // The parent's chunks are the parent's: the mappings this child inherited are shared
  // with the parent's log, so they are unmapped unwritten (never sealed here). Only this
  // thread lives on: slots are filled from the front and never emptied, so its buffer
  // moves to slot 0 and the rest are unmapped (no other thread exists here to use them).
  ThreadBuffer* own = t_buffer;
  for (int i = 0; i < kMaxThreads; ++i) {
    ThreadBuffer* b = g_threads[i];
    g_threads[i] = nullptr;
    if (b == nullptr) continue;
    if (b->chunk.mapping != nullptr) munmap(b->chunk.mapping, b->chunk.mapping_size);
    b->chunk = MappedChunk{};
    if (b != own) munmap(b, sizeof *b);
  }
  if (own != nullptr) {
    own->used = own->segment = 0;
    own->untraced_io = 0;
    own->busy = kFree;
    own->idle = 0;
    own->call_since = 0;
    own->slot = 0;
    own->tid = SysGetTid();
    own->self = pthread_self();
    g_threads[0] = own;
  }
  g_dropped = g_failed_writes = g_untraced_io = 0;
  ResetProtocolsAfterFork();
  ResetIsolationAfterFork();
  ForgetLog();
  if (!OpenLog(kChunkSize)) {
    g_state = kOff;
    return;
  }
  NameOpenDescriptors();
}

// Whether the program's own image (the first object dl_iterate_phdr reports) was built by
// the Go toolchain (go_image.h). Reads only notes that lie inside a loaded segment, so a
// note segment the loader did not map is never touched.
int GoNotesOfMainImage(struct dl_phdr_info* info, size_t, void* found) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& note = info->dlpi_phdr[i];
    if (note.p_type != PT_NOTE || note.p_filesz == 0) continue;
    bool mapped = false;
    for (int j = 0; j < info->dlpi_phnum && !mapped; ++j) {
      const ElfW(Phdr)& load = info->dlpi_phdr[j];
      mapped = load.p_type == PT_LOAD && note.p_vaddr >= load.p_vaddr &&
               note.p_vaddr + note.p_filesz <= load.p_vaddr + load.p_filesz;
    }
    const auto* notes = reinterpret_cast<const uint8_t*>(info->dlpi_addr + note.p_vaddr);
    if (mapped && weft::capture::NotesNameGo(notes, note.p_filesz, note.p_align)) {
      *static_cast<bool*>(found) = true;
    }
  }
  return 1;  // the main image only
}

// Marks a Go program's log (event_log_format.h, ImageRecord): its I/O never passes through
// the wrappers, and reconcile says so.
void LogImageRuntime() {
  bool go = false;
  dl_iterate_phdr(GoNotesOfMainImage, &go);
  if (!go) return;
  wire::ImageRecord r;
  memset(&r, 0, sizeof r);
  r.type = wire::kImageRecord;
  r.runtime = wire::kRuntimeGo;
  r.size = sizeof r;
  r.time_ns = NowNs();
  Append(&r, sizeof r, nullptr, 0);
}

__attribute__((constructor(101))) void Start() {
  int saved_errno = errno;
  ResolveRealFunctions();
  const char* dir = getenv("WEFT_CAPTURE_DIR");
  if (dir != nullptr && dir[0] != '\0' && pthread_key_create(&g_thread_key, OnThreadExit) == 0) {
    CopyString(g_settings.dir, sizeof g_settings.dir, dir);
    const char* prefix = getenv("WEFT_PAYLOAD_PREFIX");
    uint32_t n = 0;
    for (; prefix != nullptr && *prefix >= '0' && *prefix <= '9'; ++prefix) {
      n = n * 10 + uint32_t(*prefix - '0');
      if (n > kMaxPayloadPrefix) n = kMaxPayloadPrefix;
    }
    g_settings.payload_prefix = n;
    if (const char* spec = getenv("WEFT_PROTOCOLS")) {
      CopyString(g_settings.protocols, sizeof g_settings.protocols, spec);
    }
    ConfigureProtocols(g_settings.protocols);
    const char* isolate = getenv("WEFT_ISOLATE");
    g_settings.isolate = isolate != nullptr && isolate[0] == '1';
    ConfigureIsolation(g_settings.isolate && ProtocolsEnabled());
    const char* sync = getenv("WEFT_SYNC");
    g_settings.sync = sync == nullptr            ? kSyncQueues
                      : strcmp(sync, "all") == 0 ? kSyncAll
                      : strcmp(sync, "off") == 0 ? kSyncOff
                                                 : kSyncQueues;
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&Start), &info) != 0 && info.dli_fname != nullptr) {
      CopyString(g_settings.preload_path, sizeof g_settings.preload_path, info.dli_fname);
    }
    if (OpenLog(kChunkSize)) {
      __atomic_store_n(&g_state, kOn, __ATOMIC_RELEASE);
      atexit(AtExit);
      pthread_atfork(nullptr, nullptr, AfterForkInChild);
      NameOpenDescriptors();
      InstallTerminationHandlers();
      LogImageRuntime();
    }
  }
  errno = saved_errno;
}

}  // namespace

uint8_t SocketKindOf(int domain, int type) {
  type &= ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (domain == AF_INET || domain == AF_INET6) {
    if (type == SOCK_STREAM) return wire::kKindTcp;
    if (type == SOCK_DGRAM) return wire::kKindUdp;
    return wire::kKindOtherSocket;
  }
  if (domain == AF_UNIX) {
    if (type == SOCK_STREAM) return wire::kKindUnixStream;
    if (type == SOCK_DGRAM) return wire::kKindUnixDatagram;
    if (type == SOCK_SEQPACKET) return wire::kKindUnixSeqpacket;
  }
  return wire::kKindOtherSocket;
}

bool Logging() { return __atomic_load_n(&g_state, __ATOMIC_RELAXED) != kOff && t_untraced == 0; }
bool LogOpen() { return __atomic_load_n(&g_state, __ATOMIC_RELAXED) != kOff; }
int ThreadUntraced() { return t_untraced; }
void SetThreadUntraced(int untraced) { t_untraced = untraced != 0; }
uint32_t PayloadPrefix() { return g_settings.payload_prefix; }
int SyncMode() { return g_settings.sync; }

namespace {

// A call begun while the process dies of a terminating signal would race the end: the
// kernel could move its bytes and the process be gone before the record is written (a
// reply a server sent as it was stopped, with no record of it in its log). The thread
// waits for the end instead; the program cannot tell this from the thread not having been
// scheduled in time. Bounded, in case the process outlives the signal after all.
void AwaitDeath() {
  for (int i = 0; i < 100 && __atomic_load_n(&g_dying, __ATOMIC_ACQUIRE); ++i) {
    struct timespec millisecond = {0, 1'000'000};
    nanosleep(&millisecond, nullptr);
  }
}

}  // namespace

void BeginDying() { __atomic_store_n(&g_dying, 1, __ATOMIC_RELEASE); }
void EndDying() { __atomic_store_n(&g_dying, 0, __ATOMIC_RELEASE); }

int64_t BeginCall() {
  if (__builtin_expect(__atomic_load_n(&g_dying, __ATOMIC_RELAXED), 0)) AwaitDeath();
  int64_t now = NowNs();
  ThreadBuffer* b = t_buffer;
  if (__builtin_expect(b == nullptr, 0)) b = NewThreadBuffer();
  if (b != nullptr) __atomic_store_n(&b->call_since, now, __ATOMIC_RELAXED);
  return now;
}

void ResumeCall(int64_t entry) {
  if (ThreadBuffer* b = t_buffer) __atomic_store_n(&b->call_since, entry, __ATOMIC_RELAXED);
}

void CountUntracedIo() {
  if (ThreadBuffer* b = t_buffer) {
    ++b->untraced_io;
  } else {
    ++t_untraced_io;
  }
}

void LogCall(uint8_t op, int fd, int64_t entry, int64_t exit, long result, int arg) {
  wire::CallRecord r{wire::kCallRecord, op, sizeof r, fd, entry, exit, int32_t(result), arg};
  Append(&r, sizeof r, nullptr, 0);
}

void LogCallWithPayload(uint8_t op, int fd, int64_t entry, int64_t exit, long result, int arg,
                        const void* data, const struct iovec* iov, int iovcnt) {
  wire::CallRecord r{wire::kCallRecord, op, sizeof r, fd, entry, exit, int32_t(result), arg};
  if (result <= 0 || PayloadPrefix() == 0) {
    Append(&r, sizeof r, nullptr, 0);
    return;
  }
  alignas(8) uint8_t payload[sizeof(wire::PayloadRecord) + kMaxPayloadPrefix + 8];
  uint32_t size = BuildPayload(payload, op, fd, data, iov, iovcnt, size_t(result));
  Append(&r, sizeof r, payload, size);
}

void LogDatagram(uint8_t op, int fd, int64_t entry, int64_t exit, long result, int arg,
                 const void* data, const struct iovec* iov, int iovcnt, size_t bytes,
                 const struct sockaddr* peer, socklen_t peer_length) {
  alignas(8) uint8_t record[sizeof(wire::DatagramRecord) + sizeof(sockaddr_un)];
  wire::DatagramRecord r;
  char path[sizeof(sockaddr_un::sun_path)];
  FillAddress(r.peer, peer, peer_length, path);
  uint32_t size = wire::RoundUp8(uint32_t(sizeof r + r.peer.path_length));
  r.call = {wire::kDatagramRecord, op, uint16_t(size), fd, entry, exit, int32_t(result), arg};
  r.payload_hash = 0;
  if (result >= 0) {
    if (data != nullptr) {
      r.payload_hash = XXH3_64bits(data, bytes);
    } else {
      XXH3_state_t state;
      XXH3_64bits_reset(&state);
      size_t left = bytes;
      for (int i = 0; i < iovcnt && left > 0; ++i) {
        size_t n = iov[i].iov_len < left ? iov[i].iov_len : left;
        XXH3_64bits_update(&state, iov[i].iov_base, n);
        left -= n;
      }
      r.payload_hash = XXH3_64bits_digest(&state);
    }
  }
  memcpy(record, &r, sizeof r);
  memcpy(record + sizeof r, path, r.peer.path_length);
  memset(record + sizeof r + r.peer.path_length, 0, size - sizeof r - r.peer.path_length);
  if (result <= 0 || PayloadPrefix() == 0) {
    Append(record, size, nullptr, 0);
    return;
  }
  alignas(8) uint8_t payload[sizeof(wire::PayloadRecord) + kMaxPayloadPrefix + 8];
  uint32_t payload_size = BuildPayload(payload, op, fd, data, iov, iovcnt, bytes);
  Append(record, size, payload, payload_size);
}

void LogSync(uint8_t op, uint64_t object, uint64_t second, int64_t entry, int64_t exit,
             int32_t result) {
  wire::SyncRecord r{wire::kSyncRecord, op, sizeof r, result, entry, exit, object, second};
  Append(&r, sizeof r, nullptr, 0);
}

void LogEndpoint(uint8_t op, int fd, uint8_t kind, const struct sockaddr* peer,
                 socklen_t peer_length, int64_t time, EndpointNames* names) {
  wire::EndpointRecord r;
  memset(&r, 0, sizeof r);
  char local_path[sizeof(sockaddr_un::sun_path)];
  char peer_path[sizeof(sockaddr_un::sun_path)];
  if (kind != wire::kKindPipe) {
    struct sockaddr_storage name;
    socklen_t length = sizeof name;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&name), &length) == 0) {
      FillAddress(r.local, reinterpret_cast<sockaddr*>(&name), length, local_path);
    }
    if (peer != nullptr) {
      FillAddress(r.peer, peer, peer_length, peer_path);
    } else {
      length = sizeof name;
      if (getpeername(fd, reinterpret_cast<sockaddr*>(&name), &length) == 0) {
        FillAddress(r.peer, reinterpret_cast<sockaddr*>(&name), length, peer_path);
      }
    }
    if (kind == wire::kKindUnixStream || kind == wire::kKindUnixSeqpacket ||
        kind == wire::kKindUnixDatagram) {
      struct ucred credentials;
      length = sizeof credentials;
      if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0) {
        r.peer_pid = credentials.pid;
      }
    }
  }
  if (kind == wire::kKindPipe || kind >= wire::kKindUnixStream) r.inode = InodeOf(fd);
  // A connected Unix socket: the other end's inode pairs the two exactly. Not at connect:
  // the other end is an embryo without an inode until the server accepts it.
  if ((kind == wire::kKindUnixStream || kind == wire::kKindUnixSeqpacket) &&
      r.peer.family != wire::kFamilyNone && op != wire::kOpConnect) {
    r.peer_inode = UnixPeerInode(r.inode);
  }
  // A Unix datagram socket connected to a peer without a path is a socketpair end (one
  // inherited through fork or exec, here): its datagrams go to that peer's inode, which
  // only the kernel can name. Ends with a path are named by the path; not asked for.
  if (kind == wire::kKindUnixDatagram && r.peer.family == wire::kFamilyUnix &&
      r.peer.path_length == 0) {
    r.peer_inode = UnixPeerInode(r.inode);
  }
  int listening = 0;
  socklen_t length = sizeof listening;
  if (kind != wire::kKindPipe &&
      getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0) {
    r.listening = listening != 0;
  }
  uint32_t paths = uint32_t(r.local.path_length) + r.peer.path_length;
  uint32_t size = wire::RoundUp8(uint32_t(sizeof r) + paths);
  r.type = wire::kEndpointRecord;
  r.op = op;
  r.size = uint16_t(size);
  r.fd = fd;
  r.time_ns = time;
  r.kind = kind;
  alignas(8) uint8_t record[sizeof r + 2 * sizeof(sockaddr_un::sun_path) + 8];
  memcpy(record, &r, sizeof r);
  memcpy(record + sizeof r, local_path, r.local.path_length);
  memcpy(record + sizeof r + r.local.path_length, peer_path, r.peer.path_length);
  memset(record + sizeof r + paths, 0, size - sizeof r - paths);
  Append(record, size, nullptr, 0);
  SetFdKind(fd, uint8_t(kind | kNamedBit | (FdEntry(fd) & (kProtocolBit | kTlsBit))));
  if (names != nullptr) {
    names->local = r.local;
    names->peer = r.peer;
    memcpy(names->local_path, local_path, r.local.path_length);
    memcpy(names->peer_path, peer_path, r.peer.path_length);
  }
}

void AppendRecord(const void* record, uint32_t size, int64_t /*time*/) {
  Append(record, size, nullptr, 0);
}

void LogThreadRenamed(pthread_t thread, const char* name) {
  int32_t tid = 0;
  if (pthread_equal(thread, pthread_self())) {
    tid = SysGetTid();
  } else {
    for (int i = 0; i < kMaxThreads && tid == 0; ++i) {
      ThreadBuffer* b = __atomic_load_n(&g_threads[i], __ATOMIC_ACQUIRE);
      if (b == nullptr) break;
      if (__atomic_load_n(&b->idle, __ATOMIC_ACQUIRE) == 0 &&
          pthread_equal(__atomic_load_n(&b->self, __ATOMIC_RELAXED), thread)) {
        tid = b->tid;
      }
    }
  }
  // A thread that has logged nothing yet names itself in its first segment.
  if (tid == 0) return;
  wire::NameRecord r = NameRecordOf(tid, wire::kNameRenamed, name);
  Append(&r, sizeof r, nullptr, 0);
}

void LogPairEndpoints(uint8_t op, const int fds[2], uint8_t kind, int64_t time) {
  uint64_t inodes[2] = {InodeOf(fds[0]), InodeOf(fds[1])};
  for (int i = 0; i < 2; ++i) {
    wire::EndpointRecord r;
    memset(&r, 0, sizeof r);
    r.type = wire::kEndpointRecord;
    r.op = op;
    r.size = sizeof r;
    r.fd = fds[i];
    r.time_ns = time;
    r.kind = kind;
    r.inode = inodes[i];
    r.peer_inode = inodes[1 - i];
    if (kind != wire::kKindPipe) {
      r.local.family = r.peer.family = wire::kFamilyUnix;  // unnamed
      r.peer_pid = SysGetPid();
    }
    Append(&r, sizeof r, nullptr, 0);
    SetFdKind(fds[i], uint8_t(kind | kNamedBit));
  }
}

namespace {

// The end record, in a segment of thread 0: in this thread's chunk, which is then given
// up and, if it is the last chunk of the file, cut right after the record (a clean end
// keeps no unused room). A thread that logs after this maps a new chunk. When this
// thread's buffer is held (the end came from a signal handler that interrupted a record
// on this thread), a chunk of its own.
void WriteEndRecord(const wire::EndRecord& end) {
  ThreadBuffer* b = t_buffer;
  if (b == nullptr) b = NewThreadBuffer();
  bool own = b != nullptr && TryHold(b, kHeldByOwner) == kFree;
  ThreadBuffer scratch{};
  ThreadBuffer* place = own ? b : &scratch;
  SealOwnSegment(place);
  uint8_t* at = MakeRoom(place, sizeof end, 0);
  if (at != nullptr) {
    WriteBody(at, &end, sizeof end);
    Commit(at, &end);
    SealSegment(place->chunk.start + place->segment, sizeof end);
    uint64_t file_end =
        place->chunk.offset + place->segment + sizeof(wire::SegmentHeader) + sizeof end;
    ReleaseChunk(&place->chunk);
    place->segment = place->used = 0;
    TrimLog(file_end);
  }
  if (own) Release(b);
}

}  // namespace

void EndLog(uint8_t op) {
  int expected = kOn;
  if (!__atomic_compare_exchange_n(&g_state, &expected, kEnded, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_RELAXED)) {
    return;
  }
  int saved_errno = errno;
  // Calls that were moving bytes when the end came finish within microseconds (unless
  // they block, like a receive waiting for data): give them 10 ms to commit their records,
  // before the end record and before a terminating signal ends the process.
  int64_t end_start = NowNs();
  for (int i = 0; i < kMaxThreads; ++i) {
    ThreadBuffer* b = __atomic_load_n(&g_threads[i], __ATOMIC_ACQUIRE);
    if (b == nullptr) break;
    while (b != t_buffer && NowNs() < end_start + 10'000'000) {
      int64_t since = __atomic_load_n(&b->call_since, __ATOMIC_RELAXED);
      if (since == 0 || since > end_start) break;
      sched_yield();
    }
  }
  // Every record is in the file already; sealing checksums each segment. A thread writing
  // a record now is done within microseconds: wait for it, up to 50 ms. This thread's own
  // segment, when the end comes from a signal handler that interrupted a record, stays
  // open: the reader takes its committed records. Threads that go on after the end start
  // new segments.
  for (int i = 0; i < kMaxThreads; ++i) {
    ThreadBuffer* b = __atomic_load_n(&g_threads[i], __ATOMIC_ACQUIRE);
    if (b == nullptr) break;
    bool taken = TryHold(b, kHeldByEnd) == kFree;
    for (int64_t deadline = NowNs() + 50'000'000; !taken && b != t_buffer && NowNs() < deadline;) {
      sched_yield();
      taken = TryHold(b, kHeldByEnd) == kFree;
    }
    if (!taken) continue;
    SealOwnSegment(b);
    Release(b);
  }
  __atomic_fetch_add(&g_untraced_io, t_untraced_io, __ATOMIC_RELAXED);
  t_untraced_io = 0;
  wire::EndRecord end = {wire::kEndRecord,
                         op,
                         sizeof(wire::EndRecord),
                         0,
                         NowNs(),
                         __atomic_load_n(&g_dropped, __ATOMIC_RELAXED),
                         __atomic_load_n(&g_untraced_io, __ATOMIC_RELAXED),
                         __atomic_load_n(&g_failed_writes, __ATOMIC_RELAXED),
                         0,
                         0,
                         0,
                         0,
                         TlsStreams(),
                         TlsOpaqueStreams()};
  IsolationCounters(&end.isolated_reads, &end.held_reads, &end.held_bytes, &end.split_waits);
  WriteEndRecord(end);
  errno = saved_errno;
}

void ResumeAfterFailedExec() {
  int expected = kEnded;
  __atomic_compare_exchange_n(&g_state, &expected, kOn, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

}  // namespace weft_preload
