// The wrappers that see a thread renamed: prctl(PR_SET_NAME) and pthread_setname_np. A
// thread's name (comm) is what people know a process by ("web0", "postgres", "nginx"), and
// `weft reconcile --nodes name` names nodes by it; each segment of the log opens with its
// thread's name already (runtime.cc), so these only catch a name given after the thread
// logged its first record. Renaming itself is never changed or delayed.
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/prctl.h>

#include "capture/preload/real.h"
#include "capture/preload/runtime.h"

using namespace weft_preload;

// prctl takes up to four more arguments, as unsigned long, whatever the option; like the C
// library's own prctl, the wrapper reads four and passes them on.
WEFT_EXPORT int prctl(int option, ...) noexcept {
  va_list list;
  va_start(list, option);
  unsigned long a2 = va_arg(list, unsigned long);
  unsigned long a3 = va_arg(list, unsigned long);
  unsigned long a4 = va_arg(list, unsigned long);
  unsigned long a5 = va_arg(list, unsigned long);
  va_end(list);
  int r = Real().prctl(option, a2, a3, a4, a5);
  if (r == 0 && option == PR_SET_NAME && Logging()) {
    int error = errno;
    LogThreadRenamed(pthread_self(), reinterpret_cast<const char*>(a2));
    errno = error;
  }
  return r;
}

WEFT_EXPORT int pthread_setname_np(pthread_t thread, const char* name) noexcept {
  int r = Real().pthread_setname_np(thread, name);
  if (r == 0 && Logging()) {
    int error = errno;
    LogThreadRenamed(thread, name);
    errno = error;
  }
  return r;
}
