// gRPC C++ programs: the application's side of each call (docs/capture.md "gRPC").
//
// gRPC reads and writes HTTP/2 frames on threads of its own and hands each call to the
// application's threads through internal queues (abseil's Mutex and CondVar, lock-free
// queues) that capture cannot follow, so the wire alone loses which request a server's
// outgoing call was made for. libgrpc++ calls libgrpc's C API through the PLT, as a
// program calls SSL_read, and at that boundary the application's threads are visible:
//   - a server call comes out of a completion queue to the thread that will handle it:
//     grpc_server_request_call / _registered_call name the tag and where the call and
//     its request metadata will be, grpc_completion_queue_next / _pluck hand the tag out
//     (kOpGrpcTake, with the request metadata's hash); a callback server's queue runs the
//     tag as a functor instead, which is wrapped for the one run;
//   - a client call is made (kOpGrpcCreate) and its initial metadata sent by the thread
//     that calls grpc_call_start_batch (kOpGrpcStart, with the metadata's hash).
// Reconcile ties each to the HTTP/2 stream that carried the same metadata in the same
// process and links the wire threads to the application's (HANDOFF links).
//
// Nothing of gRPC is linked or included: the functions are found with dlsym(RTLD_NEXT)
// on first use, which can only happen in a program that has libgrpc loaded, and the few
// structures read are declared here as gRPC's public C ABI defines them (grpc_types.h,
// slice.h), read only in the versions that have these layouts (LayoutKnown). The wrappers never
// block: the table of requested calls is lock-free and bounded; what does not fit is counted and
// not logged.
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture/grpc_metadata.h"
#include "capture/preload/runtime.h"

using namespace weft_preload;

namespace {

// --- gRPC's public C ABI, as far as it is read here --------------------------------------

struct GrpcSlice {  // grpc_slice
  void* refcount;
  union {
    struct {
      size_t length;
      uint8_t* bytes;
    } refcounted;
    struct {
      uint8_t length;
      uint8_t bytes[sizeof(size_t) + 2 * sizeof(uint8_t*) - 1];  // + GRPC_SLICE_INLINE_EXTRA_SIZE
    } inlined;
  } data;
};
const char* SliceBytes(const GrpcSlice& s) {
  return reinterpret_cast<const char*>(s.refcount != nullptr ? s.data.refcounted.bytes
                                                             : s.data.inlined.bytes);
}
size_t SliceLength(const GrpcSlice& s) {
  return s.refcount != nullptr ? s.data.refcounted.length : s.data.inlined.length;
}
struct GrpcMetadata {  // grpc_metadata
  GrpcSlice key, value;
  void* internal_data[4];
};
struct GrpcMetadataArray {  // grpc_metadata_array
  size_t count, capacity;
  GrpcMetadata* metadata;
};
struct GrpcOp {  // grpc_op; data.send_initial_metadata is {count, metadata, ...}
  int op;
  uint32_t flags;
  void* reserved;
  union {
    void* reserved[8];
    struct {
      size_t count;
      GrpcMetadata* metadata;
    } send_initial_metadata;
  } data;
};
constexpr int kGrpcOpSendInitialMetadata = 0;
struct GrpcTimespec {  // gpr_timespec
  int64_t tv_sec;
  int32_t tv_nsec;
  int clock_type;
};
struct GrpcEvent {  // grpc_event
  int type;
  int success;
  void* tag;
};
constexpr int kGrpcOpComplete = 2;  // GRPC_OP_COMPLETE
struct GrpcFunctor {                // grpc_completion_queue_functor
  void (*functor_run)(GrpcFunctor*, int);
  int inlineable;
  int internal_success;
  GrpcFunctor* internal_next;
};
struct GrpcCqAttributes {  // grpc_completion_queue_attributes
  int version;
  int cq_completion_type;  // GRPC_CQ_NEXT, GRPC_CQ_PLUCK, GRPC_CQ_CALLBACK
  int cq_polling_type;
};
constexpr int kGrpcCqCallback = 2;

void* Find(const char* name, void** slot) {
  void* f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (__builtin_expect(f != nullptr, 1)) return f;
  int saved_errno = errno;
  f = dlsym(RTLD_NEXT, name);
  if (f != nullptr) __atomic_store_n(slot, f, __ATOMIC_RELEASE);
  errno = saved_errno;
  return f;
}

#define WEFT_GRPC_FUNCTION(name, ret, params)                 \
  using name##_type = ret(*) params;                          \
  name##_type Real_##name() {                                 \
    static void* slot = nullptr;                              \
    return reinterpret_cast<name##_type>(Find(#name, &slot)); \
  }

WEFT_GRPC_FUNCTION(grpc_server_request_call, int,
                   (void*, void**, void*, GrpcMetadataArray*, void*, void*, void*))
WEFT_GRPC_FUNCTION(grpc_server_request_registered_call, int,
                   (void*, void*, void**, GrpcTimespec*, GrpcMetadataArray*, void**, void*, void*,
                    void*))
WEFT_GRPC_FUNCTION(grpc_completion_queue_next, GrpcEvent, (void*, GrpcTimespec, void*))
WEFT_GRPC_FUNCTION(grpc_completion_queue_pluck, GrpcEvent, (void*, void*, GrpcTimespec, void*))
WEFT_GRPC_FUNCTION(grpc_completion_queue_create, void*,
                   (const void*, const GrpcCqAttributes*, void*))
WEFT_GRPC_FUNCTION(grpc_channel_create_call, void*,
                   (void*, void*, uint32_t, void*, GrpcSlice, const GrpcSlice*, GrpcTimespec,
                    void*))
WEFT_GRPC_FUNCTION(grpc_channel_create_registered_call, void*,
                   (void*, void*, uint32_t, void*, void*, GrpcTimespec, void*))
WEFT_GRPC_FUNCTION(grpc_call_start_batch, int, (void*, const GrpcOp*, size_t, void*, void*))
#undef WEFT_GRPC_FUNCTION

// The layouts above, and the server's call allocations below, are read only in a gRPC
// whose core has them: grpc_version_string() is gRPC core's version, 20 to 40 (its
// releases of about 2021 to 2024; verified with 29, gRPC 1.51). In any other version
// nothing is read or logged, and reconcile's summary shows its calls as not tied.
bool LayoutKnown() {
  static int known = -1;  // -1: not yet asked
  int k = __atomic_load_n(&known, __ATOMIC_ACQUIRE);
  if (__builtin_expect(k >= 0, 1)) return k != 0;
  static void* slot = nullptr;
  auto version = reinterpret_cast<const char* (*)()>(Find("grpc_version_string", &slot));
  const char* v = version != nullptr ? version() : nullptr;
  int major = -1;
  for (const char* c = v; c != nullptr && *c >= '0' && *c <= '9' && major < 1000; ++c)
    major = (major < 0 ? 0 : major * 10) + (*c - '0');
  k = major >= 20 && major <= 40;
  __atomic_store_n(&known, k, __ATOMIC_RELEASE);
  return k != 0;
}

uint64_t MetadataHash(const GrpcMetadata* fields, size_t count) {
  uint64_t h = 0;
  for (size_t i = 0; fields != nullptr && i < count; ++i) {
    const GrpcMetadata& m = fields[i];
    h += weft::capture::GrpcFieldHash(SliceBytes(m.key), SliceLength(m.key), SliceBytes(m.value),
                                      SliceLength(m.value));
  }
  return h;
}

// --- requested server calls, by tag ------------------------------------------------------

// A requested call: where gRPC will put the call and its metadata when the tag comes out,
// and, for a callback queue's functor, the run it had before it was wrapped. A slot is
// claimed by a compare-and-swap on `tag` and published by `ready`; lookups probe a fixed
// window, so that freeing a slot is clearing its tag.
struct Requested {
  void* tag;
  void** call;
  GrpcMetadataArray* metadata;
  void (*run)(GrpcFunctor*, int);
  int ready;
};
constexpr size_t kRequestedSlots = 8192;  // calls requested and not yet come out
constexpr size_t kProbe = 64;
Requested g_requested[kRequestedSlots];
uint64_t g_requested_full = 0;  // requests that found no slot: their calls are not logged

size_t SlotOf(const void* tag) {
  uint64_t h = uint64_t(reinterpret_cast<uintptr_t>(tag)) * 0x9e3779b97f4a7c15ull;
  return size_t(h >> 51) % kRequestedSlots;  // 13 bits
}

Requested* Remember(void* tag, void** call, GrpcMetadataArray* metadata) {
  if (tag == nullptr || call == nullptr) return nullptr;
  size_t first = SlotOf(tag);
  for (size_t i = 0; i < kProbe; ++i) {
    Requested& r = g_requested[(first + i) % kRequestedSlots];
    void* expected = nullptr;
    if (__atomic_compare_exchange_n(&r.tag, &expected, tag, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED)) {
      r.call = call;
      r.metadata = metadata;
      r.run = nullptr;
      __atomic_store_n(&r.ready, 1, __ATOMIC_RELEASE);
      return &r;
    }
  }
  __atomic_fetch_add(&g_requested_full, 1, __ATOMIC_RELAXED);
  return nullptr;
}

Requested* Lookup(const void* tag) {
  if (tag == nullptr) return nullptr;
  size_t first = SlotOf(tag);
  for (size_t i = 0; i < kProbe; ++i) {
    Requested& r = g_requested[(first + i) % kRequestedSlots];
    if (__atomic_load_n(&r.tag, __ATOMIC_ACQUIRE) == tag &&
        __atomic_load_n(&r.ready, __ATOMIC_ACQUIRE) != 0)
      return &r;
  }
  return nullptr;
}

void Forget(Requested* r) {
  __atomic_store_n(&r->ready, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&r->tag, nullptr, __ATOMIC_RELEASE);
}

// The requested call `r` came out to this thread (`ok`: a new RPC, not a shutdown).
void Took(Requested* r, bool ok, int64_t entry) {
  void* call = ok ? *r->call : nullptr;
  uint64_t hash =
      r->metadata != nullptr ? MetadataHash(r->metadata->metadata, r->metadata->count) : 0;
  Forget(r);
  if (call != nullptr && Logging()) {
    LogSync(wire::kOpGrpcTake, uint64_t(reinterpret_cast<uintptr_t>(call)), hash, entry, NowNs(),
            0);
  }
}

// Completion queues of the callback kind (a callback server's): few, never forgotten.
constexpr int kCallbackQueues = 64;
void* g_callback_queues[kCallbackQueues];
bool IsCallbackQueue(const void* cq) {
  for (int i = 0; i < kCallbackQueues; ++i) {
    void* q = __atomic_load_n(&g_callback_queues[i], __ATOMIC_ACQUIRE);
    if (q == nullptr) return false;
    if (q == cq) return true;
  }
  return false;
}
void AddCallbackQueue(void* cq) {
  for (int i = 0; i < kCallbackQueues; ++i) {
    void* expected = nullptr;
    if (__atomic_compare_exchange_n(&g_callback_queues[i], &expected, cq, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED))
      return;
  }
}

// The run of a wrapped functor: the call came out to this thread. The functor gets its own
// run back before it is called, so that whatever else it is used for is not ours.
// Every functor's run before wrapping, for a functor whose slot is gone (cannot happen
// while slots are freed only here, but the program must not be harmed if it does).
void (*g_any_run)(GrpcFunctor*, int) = nullptr;
void WrappedRun(GrpcFunctor* functor, int ok) {
  int64_t entry = NowNs();
  Requested* r = Lookup(functor);
  void (*run)(GrpcFunctor*, int) = r != nullptr ? r->run : g_any_run;
  functor->functor_run = run;
  if (r != nullptr) Took(r, ok != 0, entry);
  run(functor, ok);
}

// A request for a server call made: remembered, and a callback queue's functor wrapped.
void Requesting(void** call, GrpcMetadataArray* metadata, void* cq, void* tag) {
  if (!Logging() || !LayoutKnown()) return;
  Requested* r = Remember(tag, call, metadata);
  if (r == nullptr || !IsCallbackQueue(cq)) return;
  auto* functor = static_cast<GrpcFunctor*>(tag);
  if (functor->functor_run == nullptr || functor->functor_run == WrappedRun) {
    Forget(r);
    return;
  }
  r->run = functor->functor_run;
  if (g_any_run == nullptr) g_any_run = r->run;
  functor->functor_run = WrappedRun;
}

// A request gRPC refused: its slot is freed and a wrapped functor gets its own run back.
void Unrequest(void* tag) {
  Requested* r = Lookup(tag);
  if (r == nullptr) return;
  if (r->run != nullptr) static_cast<GrpcFunctor*>(tag)->functor_run = r->run;
  Forget(r);
}

// --- gRPC C++ servers: the allocators of server calls ------------------------------------
//
// gRPC C++ (1.3x on) does not request server calls with grpc_server_request_call: it gives
// the core an allocator per method (grpc_core::Server::SetRegisteredMethodAllocator, and
// SetBatchMethodAllocator for unknown methods), a std::function the core calls for each
// new RPC, which returns where the call and its metadata go and the tag that will come
// out of the completion queue. Those two functions are exported by libgrpc and called by
// libgrpc++ through the PLT; the allocator is wrapped so that each allocation is
// remembered as a request is. Both allocations begin {tag, call, initial_metadata}.
//
// A std::function is libstdc++'s (the names are those libstdc++'s mangling gives; a gRPC
// built with another standard library calls other names and is left alone): 16 bytes of
// functor storage, the manager, the invoker. Its state is relocatable bitwise (libstdc++
// keeps only trivially copyable functors inside), so the wrapper moves the program's
// function into a block of its own and puts itself in its place. The invoker returns the
// allocation through a hidden pointer (x86-64 only: the register it comes in differs
// elsewhere, and there nothing is wrapped).
struct StdFunction {
  void* storage[2];
  bool (*manager)(void* dest, const void* source, int operation);
  void* invoker;
};
constexpr int kGetTypeInfo = 0, kGetFunctorPointer = 1, kCloneFunctor = 2, kDestroyFunctor = 3;
struct Allocator {
  StdFunction inner;
  void* cq;
};
using AllocatorInvoker = void* (*)(void* allocation, const void* storage);

void* InvokeAllocator(void* allocation, const void* storage) {
  auto* a = *static_cast<Allocator* const*>(storage);
  void* r = reinterpret_cast<AllocatorInvoker>(a->inner.invoker)(allocation, a->inner.storage);
  auto** fields = static_cast<void**>(allocation);  // tag, call, initial_metadata, ...
  Requesting(static_cast<void**>(fields[1]), static_cast<GrpcMetadataArray*>(fields[2]), a->cq,
             fields[0]);
  return r;
}

bool ManageAllocator(void* dest, const void* source, int operation) {
  auto** out = static_cast<Allocator**>(dest);
  Allocator* from = *static_cast<Allocator* const*>(source);
  switch (operation) {
    case kGetTypeInfo:
      *out = nullptr;  // no type information (the wrapper has none)
      break;
    case kGetFunctorPointer:
      *out = from;
      break;
    case kCloneFunctor: {
      auto* copy = static_cast<Allocator*>(malloc(sizeof(Allocator)));
      if (copy == nullptr) abort();  // as libstdc++ would end a program built without exceptions
      copy->inner.manager = from->inner.manager;
      copy->inner.invoker = from->inner.invoker;
      copy->cq = from->cq;
      from->inner.manager(copy->inner.storage, from->inner.storage, kCloneFunctor);
      *out = copy;
      break;
    }
    case kDestroyFunctor: {
      Allocator* a = *out;
      a->inner.manager(a->inner.storage, a->inner.storage, kDestroyFunctor);
      free(a);
      break;
    }
  }
  return false;
}

// Wraps `f` (an allocator given for completion queue `cq`) in place; leaves it as it was
// when it is empty or memory is short.
void WrapAllocator(StdFunction* f, void* cq) {
#if defined(__x86_64__)
  if (f == nullptr || f->manager == nullptr || f->manager == ManageAllocator || !LayoutKnown())
    return;
  auto* a = static_cast<Allocator*>(malloc(sizeof(Allocator)));
  if (a == nullptr) return;
  memcpy(&a->inner, f, sizeof *f);
  a->cq = cq;
  memset(f->storage, 0, sizeof f->storage);
  f->storage[0] = a;
  f->manager = ManageAllocator;
  f->invoker = reinterpret_cast<void*>(&InvokeAllocator);
#else
  (void)f;
  (void)cq;
#endif
}

GrpcEvent Completed(GrpcEvent event, int64_t entry) {
  if (event.type == kGrpcOpComplete) {
    if (Requested* r = Lookup(event.tag); r != nullptr && r->run == nullptr) {
      Took(r, event.success != 0, entry);
    }
  }
  return event;
}

}  // namespace

// grpc_core::Server::SetRegisteredMethodAllocator(grpc_completion_queue*, void*,
// std::function<RegisteredCallAllocation()>) and SetBatchMethodAllocator(
// grpc_completion_queue*, std::function<BatchCallAllocation()>): member functions, so the
// server comes first; the std::function, not trivially copyable, by address.
using SetRegisteredAllocator_type = void (*)(void*, void*, void*, StdFunction*);
using SetBatchAllocator_type = void (*)(void*, void*, StdFunction*);
extern "C" __attribute__((visibility("default"))) void
SetRegisteredAllocator(void* server, void* cq, void* method, StdFunction* allocator) __asm__(
    "_ZN9grpc_core6Server28SetRegisteredMethodAllocatorEP21grpc_completion_queuePvSt8functionIFNS0_"
    "24RegisteredCallAllocationEvEE");
extern "C" __attribute__((visibility("default"))) void
SetBatchAllocator(void* server, void* cq, StdFunction* allocator) __asm__(
    "_ZN9grpc_core6Server23SetBatchMethodAllocatorEP21grpc_completion_queueSt8functionIFNS0_"
    "19BatchCallAllocationEvEE");

void SetRegisteredAllocator(void* server, void* cq, void* method, StdFunction* allocator) {
  static void* slot = nullptr;
  auto real = reinterpret_cast<SetRegisteredAllocator_type>(Find(
      "_ZN9grpc_core6Server28SetRegisteredMethodAllocatorEP21grpc_completion_queuePvSt8function"
      "IFNS0_24RegisteredCallAllocationEvEE",
      &slot));
  if (real == nullptr) abort();  // only libgrpc calls it, and libgrpc defines it
  WrapAllocator(allocator, cq);
  real(server, cq, method, allocator);
}

void SetBatchAllocator(void* server, void* cq, StdFunction* allocator) {
  static void* slot = nullptr;
  auto real = reinterpret_cast<SetBatchAllocator_type>(
      Find("_ZN9grpc_core6Server23SetBatchMethodAllocatorEP21grpc_completion_queueSt8functionIFNS"
           "0_19BatchCallAllocationEvEE",
           &slot));
  if (real == nullptr) abort();
  WrapAllocator(allocator, cq);
  real(server, cq, allocator);
}

WEFT_EXPORT void* grpc_completion_queue_create(const void* factory,
                                               const GrpcCqAttributes* attributes, void* reserved) {
  auto real = Real_grpc_completion_queue_create();
  if (real == nullptr) return nullptr;
  void* cq = real(factory, attributes, reserved);
  if (cq != nullptr && attributes != nullptr && attributes->cq_completion_type == kGrpcCqCallback)
    AddCallbackQueue(cq);
  return cq;
}

WEFT_EXPORT int grpc_server_request_call(void* server, void** call, void* details,
                                         GrpcMetadataArray* metadata, void* cq_bound,
                                         void* cq_notify, void* tag) {
  auto real = Real_grpc_server_request_call();
  if (real == nullptr) return 1;  // GRPC_CALL_ERROR
  Requesting(call, metadata, cq_notify, tag);
  int r = real(server, call, details, metadata, cq_bound, cq_notify, tag);
  if (r != 0) Unrequest(tag);
  return r;
}

WEFT_EXPORT int grpc_server_request_registered_call(void* server, void* method, void** call,
                                                    GrpcTimespec* deadline,
                                                    GrpcMetadataArray* metadata, void** payload,
                                                    void* cq_bound, void* cq_notify, void* tag) {
  auto real = Real_grpc_server_request_registered_call();
  if (real == nullptr) return 1;
  Requesting(call, metadata, cq_notify, tag);
  int r = real(server, method, call, deadline, metadata, payload, cq_bound, cq_notify, tag);
  if (r != 0) Unrequest(tag);
  return r;
}

WEFT_EXPORT GrpcEvent grpc_completion_queue_next(void* cq, GrpcTimespec deadline, void* reserved) {
  auto real = Real_grpc_completion_queue_next();
  if (real == nullptr) return GrpcEvent{0, 0, nullptr};  // GRPC_QUEUE_SHUTDOWN
  int64_t entry = NowNs();
  return Completed(real(cq, deadline, reserved), entry);
}

WEFT_EXPORT GrpcEvent grpc_completion_queue_pluck(void* cq, void* tag, GrpcTimespec deadline,
                                                  void* reserved) {
  auto real = Real_grpc_completion_queue_pluck();
  if (real == nullptr) return GrpcEvent{0, 0, nullptr};
  int64_t entry = NowNs();
  return Completed(real(cq, tag, deadline, reserved), entry);
}

WEFT_EXPORT void* grpc_channel_create_call(void* channel, void* parent, uint32_t mask, void* cq,
                                           GrpcSlice method, const GrpcSlice* host,
                                           GrpcTimespec deadline, void* reserved) {
  auto real = Real_grpc_channel_create_call();
  if (real == nullptr) return nullptr;
  int64_t entry = NowNs();
  void* call = real(channel, parent, mask, cq, method, host, deadline, reserved);
  if (call != nullptr && Logging())
    LogSync(wire::kOpGrpcCreate, uint64_t(reinterpret_cast<uintptr_t>(call)), 0, entry, NowNs(), 0);
  return call;
}

WEFT_EXPORT void* grpc_channel_create_registered_call(void* channel, void* parent, uint32_t mask,
                                                      void* cq, void* method, GrpcTimespec deadline,
                                                      void* reserved) {
  auto real = Real_grpc_channel_create_registered_call();
  if (real == nullptr) return nullptr;
  int64_t entry = NowNs();
  void* call = real(channel, parent, mask, cq, method, deadline, reserved);
  if (call != nullptr && Logging())
    LogSync(wire::kOpGrpcCreate, uint64_t(reinterpret_cast<uintptr_t>(call)), 0, entry, NowNs(), 0);
  return call;
}

WEFT_EXPORT int grpc_call_start_batch(void* call, const GrpcOp* ops, size_t nops, void* tag,
                                      void* reserved) {
  auto real = Real_grpc_call_start_batch();
  if (real == nullptr) return 1;
  if (!Logging() || !LayoutKnown()) return real(call, ops, nops, tag, reserved);
  int64_t entry = NowNs();
  const GrpcOp* initial = nullptr;
  for (size_t i = 0; ops != nullptr && i < nops; ++i) {
    if (ops[i].op == kGrpcOpSendInitialMetadata) initial = &ops[i];
  }
  uint64_t hash = 0;
  if (initial != nullptr) {
    hash = MetadataHash(initial->data.send_initial_metadata.metadata,
                        initial->data.send_initial_metadata.count);
  }
  int r = real(call, ops, nops, tag, reserved);
  if (initial != nullptr && r == 0 && Logging())
    LogSync(wire::kOpGrpcStart, uint64_t(reinterpret_cast<uintptr_t>(call)), hash, entry, NowNs(),
            0);
  return r;
}
