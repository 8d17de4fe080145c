// The wrapper for thread creation: pthread_create (std::thread, std::async and every thread
// pool start threads with it). BorderPatrol §5.5 follows a request into the processes a
// module spawns; a thread a request handler starts is the same kind of helper, so its
// start is logged for reconcile to link the new thread to the one that created it.
//
// The new thread logs the record itself (op kOpThread, fd -1, entry = the creator's call
// entry, exit = the new thread's start, result = the creator's tid), so the record sits in
// the new thread's block, with its tid, before anything else the thread does. The creator
// hands it that through a small heap block given to a trampoline that runs first in the
// new thread; the block is freed before the program's start routine runs, so
// pthread_exit or cancellation in that routine leaves nothing behind, and the routine's
// value is returned as is. Without logging the call goes straight through.
//
// Weft's own threads (the live-query agent and its bus, docs/pivot.md) mark themselves
// untraced through weft_capture_set_untraced, which the pivot library finds with dlsym so
// that nothing links against this library: the capture never records weft's own tracing
// traffic as the program's. A thread created by a marked thread is marked too (libnats
// starts its own threads), and logs no thread record.
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "capture/preload/log_file.h"
#include "capture/preload/real.h"
#include "capture/preload/runtime.h"

using namespace weft_preload;

namespace {

struct ThreadStart {
  void* (*routine)(void*);
  void* arg;
  int64_t created_ns;  // the creator's pthread_create entry
  pid_t creator;
  int untraced;  // the creator's mark
};

void* StartLoggedThread(void* p) {
  ThreadStart start = *static_cast<ThreadStart*>(p);
  free(p);
  SetThreadUntraced(start.untraced);
  if (Logging()) {
    int error = errno;
    LogCall(wire::kOpThread, -1, start.created_ns, NowNs(), start.creator, 0);
    errno = error;
  }
  return start.routine(start.arg);
}

}  // namespace

// Marks the calling thread as weft's own (1) or the program's (0); returns its previous
// mark. Any thread, any time, logging or not; it only sets a thread-local flag.
WEFT_EXPORT int weft_capture_set_untraced(int untraced) noexcept {
  int previous = ThreadUntraced();
  SetThreadUntraced(untraced);
  return previous;
}

WEFT_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attributes,
                               void* (*routine)(void*), void* arg) noexcept {
  // A marked thread's new thread goes through the trampoline too, to be marked.
  if (!LogOpen()) return Real().pthread_create(thread, attributes, routine, arg);
  int error = errno;
  int64_t entry = NowNs();
  auto* start = static_cast<ThreadStart*>(malloc(sizeof(ThreadStart)));
  if (start == nullptr) {  // not logged, but the program still gets its thread
    errno = error;
    return Real().pthread_create(thread, attributes, routine, arg);
  }
  *start = {routine, arg, entry, SysGetTid(), ThreadUntraced()};
  int r = Real().pthread_create(thread, attributes, StartLoggedThread, start);
  if (r != 0) free(start);  // no thread runs the trampoline
  errno = error;
  return r;
}
