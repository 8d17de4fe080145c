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
};

void* StartLoggedThread(void* p) {
  ThreadStart start = *static_cast<ThreadStart*>(p);
  free(p);
  if (Logging()) {
    int error = errno;
    LogCall(wire::kOpThread, -1, start.created_ns, NowNs(), start.creator, 0);
    errno = error;
  }
  return start.routine(start.arg);
}

}  // namespace

WEFT_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attributes,
                               void* (*routine)(void*), void* arg) noexcept {
  if (!Logging()) return Real().pthread_create(thread, attributes, routine, arg);
  int error = errno;
  int64_t entry = NowNs();
  auto* start = static_cast<ThreadStart*>(malloc(sizeof(ThreadStart)));
  if (start == nullptr) {  // not logged, but the program still gets its thread
    errno = error;
    return Real().pthread_create(thread, attributes, routine, arg);
  }
  *start = {routine, arg, entry, SysGetTid()};
  int r = Real().pthread_create(thread, attributes, StartLoggedThread, start);
  if (r != 0) free(start);  // no thread runs the trampoline
  errno = error;
  return r;
}
