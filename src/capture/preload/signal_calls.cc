// Termination signals left at their default action: SIGTERM, SIGINT, SIGHUP, SIGQUIT.
//
// Servers are usually stopped by SIGTERM with the default action, which ends the process
// without atexit. Every record a thread committed is in the file already (runtime.h), but
// the calls in flight would be missed and the log would have no end record (no counters,
// and nothing to tell a clean stop from a kill). So while a program leaves one of these
// signals at SIG_DFL, the library's handler stands in for it: it waits for the calls that
// are moving bytes, seals every segment and writes the end record, restores SIG_DFL and
// raises the signal again, so the process ends exactly as it would have (same signal,
// same status, core dump for SIGQUIT). sigaction and signal are interposed so the
// program never sees the difference: asking for SIG_DFL keeps the stand-in, any other
// handler (or SIG_IGN) replaces it, and a query reports SIG_DFL while it stands in.
// A signal that is blocked (sigwait, signalfd) is not affected: handlers do not run then.
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/preload/log_file.h"
#include "capture/preload/real.h"
#include "capture/preload/runtime.h"

using namespace weft_preload;

namespace {

constexpr int kWatched[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
bool g_standing_in[NSIG];  // the library's handler is installed in place of SIG_DFL

bool Watched(int signal) {
  for (int s : kWatched) {
    if (s == signal) return true;
  }
  return false;
}

void OnTerminatingSignal(int signal) {
  BeginDying();
  EndLog(wire::kOpNone);
  struct sigaction default_action;
  memset(&default_action, 0, sizeof default_action);
  default_action.sa_handler = SIG_DFL;
  Real().sigaction(signal, &default_action, nullptr);
  g_standing_in[signal] = false;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signal);
  syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &set, nullptr, _NSIG / 8);
  syscall(SYS_tgkill, SysGetPid(), SysGetTid(), signal);
  EndDying();  // still here: the signal did not end the process (an init process ignores it)
}

bool StandIn(int signal, const sigset_t* mask) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = OnTerminatingSignal;
  if (mask != nullptr) action.sa_mask = *mask;
  action.sa_flags = SA_RESTART;
  if (Real().sigaction(signal, &action, nullptr) != 0) return false;
  g_standing_in[signal] = true;
  return true;
}

}  // namespace

namespace weft_preload {

void InstallTerminationHandlers() {
  for (int signal : kWatched) {
    struct sigaction current;
    if (Real().sigaction(signal, nullptr, &current) == 0 && !(current.sa_flags & SA_SIGINFO) &&
        current.sa_handler == SIG_DFL) {
      StandIn(signal, nullptr);
    }
  }
}

}  // namespace weft_preload

WEFT_EXPORT int sigaction(int signal, const struct sigaction* action,
                          struct sigaction* old_action) noexcept {
  if (signal <= 0 || signal >= NSIG || !Watched(signal) || !LogOpen()) {
    return Real().sigaction(signal, action, old_action);
  }
  bool was_standing_in = g_standing_in[signal];
  struct sigaction previous;
  int r;
  if (action != nullptr && !(action->sa_flags & SA_SIGINFO) && action->sa_handler == SIG_DFL) {
    r = Real().sigaction(signal, nullptr, &previous);  // the default asked for: stand in
    if (r == 0 && !StandIn(signal, &action->sa_mask)) r = -1;
  } else {
    r = Real().sigaction(signal, action, &previous);
    if (r == 0 && action != nullptr) g_standing_in[signal] = false;
  }
  if (r == 0 && old_action != nullptr) {
    *old_action = previous;
    if (was_standing_in) {  // what the program set (or inherited): the default
      memset(old_action, 0, sizeof *old_action);
      old_action->sa_handler = SIG_DFL;
    }
  }
  return r;
}

// signal() has BSD semantics in glibc: the handler stays, interrupted calls restart, the
// signal is blocked while its handler runs.
WEFT_EXPORT sighandler_t signal(int signal, sighandler_t handler) noexcept {
  if (signal <= 0 || signal >= NSIG || !Watched(signal) || !LogOpen()) {
    return Real().signal(signal, handler);
  }
  struct sigaction action, old_action;
  memset(&action, 0, sizeof action);
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, signal);
  action.sa_flags = SA_RESTART;
  if (sigaction(signal, &action, &old_action) != 0) return SIG_ERR;
  return old_action.sa_handler;
}
