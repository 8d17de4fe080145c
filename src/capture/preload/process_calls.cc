// Wrappers for process life: fork and vfork (WAP5 §3: "monitors calls to fork so that it
// can maintain a separate log for each process"; BorderPatrol §5.1 follows causality
// through fork and exec), the exec family, and _exit.
//
// fork: the child's log is opened by the pthread_atfork handler (runtime.cc), so forks
// the C library makes itself are followed too. vfork is run as fork: a vfork child shares
// the parent's memory, and with it the parent's thread buffer, until it execs; departing
// from vfork's sharing is invisible to correct programs (they may only exec or _exit).
// exec: the buffers and an end record are written first (the image's memory is gone
// after), and the environment keeps LD_PRELOAD and WEFT_* even if the program dropped
// them, so the new image logs to a new file under the same pid.
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/preload/real.h"
#include "capture/preload/runtime.h"

using namespace weft_preload;

extern char** environ;

namespace {

pid_t Fork() {
  if (!Logging()) return Real().fork();
  int64_t entry = NowNs();
  // The child inherits the parent's chunks of the log, mapped shared: until the atfork
  // handler has unmapped them (inside fork), a signal handler in the child that logged a
  // call would write into the parent's log. Signals wait until then.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t r = Real().fork();
  int error = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (r != 0) LogCall(wire::kOpFork, -1, entry, NowNs(), r < 0 ? -error : r, 0);
  errno = error;
  return r;
}

enum class ExecKind { kPath, kSearch, kDescriptor };

int Exec(ExecKind kind, const char* file, int fd, char* const* argv, char* const* envp) {
  auto call = [&](char* const* env) {
    switch (kind) {
      case ExecKind::kPath:
        return Real().execve(file, argv, env);
      case ExecKind::kSearch:
        return Real().execvpe(file, argv, env);
      case ExecKind::kDescriptor:
        return Real().fexecve(fd, argv, env);
    }
    return -1;
  };
  // An exec ends the image's log whichever thread makes it.
  if (!LogOpen()) return call(envp);
  int64_t entry = NowNs();
  LogCall(wire::kOpExec, -1, entry, entry, 0, 0);
  ExecEnvironment environment = EnvironmentForExec(envp);
  EndLog(wire::kOpExec);
  int r = call(environment.envp);
  int error = errno;  // only reached when the exec failed
  ReleaseEnvironment(environment);
  ResumeAfterFailedExec();
  LogCall(wire::kOpExec, -1, entry, NowNs(), -error, 0);
  errno = error;
  return r;
}

// execl, execlp, execle: the variadic arguments up to the terminating null, in mapped
// memory (no allocator), then the vector form.
int ExecList(ExecKind kind, const char* file, const char* first, va_list args, bool with_env) {
  va_list count_args;
  va_copy(count_args, args);
  size_t count = 1;
  while (va_arg(count_args, const char*) != nullptr) ++count;
  va_end(count_args);
  size_t size = (count + 1) * sizeof(char*);
  void* memory = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    errno = ENOMEM;
    return -1;
  }
  auto** argv = static_cast<char**>(memory);
  argv[0] = const_cast<char*>(first);
  for (size_t i = 1; i <= count; ++i) argv[i] = va_arg(args, char*);  // argv[count] = null
  char* const* envp = with_env ? va_arg(args, char* const*) : environ;
  int r = Exec(kind, file, -1, argv, envp);
  int error = errno;
  munmap(memory, size);
  errno = error;
  return r;
}

}  // namespace

WEFT_EXPORT pid_t fork(void) { return Fork(); }
WEFT_EXPORT pid_t vfork(void) noexcept { return Fork(); }

WEFT_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) noexcept {
  return Exec(ExecKind::kPath, path, -1, argv, envp);
}
WEFT_EXPORT int execv(const char* path, char* const argv[]) noexcept {
  return Exec(ExecKind::kPath, path, -1, argv, environ);
}
WEFT_EXPORT int execvp(const char* file, char* const argv[]) noexcept {
  return Exec(ExecKind::kSearch, file, -1, argv, environ);
}
WEFT_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) noexcept {
  return Exec(ExecKind::kSearch, file, -1, argv, envp);
}
WEFT_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) noexcept {
  return Exec(ExecKind::kDescriptor, nullptr, fd, argv, envp);
}

WEFT_EXPORT int execl(const char* path, const char* arg, ...) noexcept {
  va_list args;
  va_start(args, arg);
  int r = ExecList(ExecKind::kPath, path, arg, args, false);
  va_end(args);
  return r;
}
WEFT_EXPORT int execlp(const char* file, const char* arg, ...) noexcept {
  va_list args;
  va_start(args, arg);
  int r = ExecList(ExecKind::kSearch, file, arg, args, false);
  va_end(args);
  return r;
}
WEFT_EXPORT int execle(const char* path, const char* arg, ...) noexcept {
  va_list args;
  va_start(args, arg);
  int r = ExecList(ExecKind::kPath, path, arg, args, true);
  va_end(args);
  return r;
}

// posix_spawn execs inside the C library (not through the wrappers above), so the child
// image gets the environment put right here; the spawn is logged as a fork.
WEFT_EXPORT int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                            const posix_spawnattr_t* attributes, char* const argv[],
                            char* const envp[]) {
  if (!Logging()) return Real().posix_spawn(pid, path, actions, attributes, argv, envp);
  pid_t child = 0;
  int64_t entry = NowNs();
  ExecEnvironment environment = EnvironmentForExec(envp);
  int r = Real().posix_spawn(&child, path, actions, attributes, argv, environment.envp);
  ReleaseEnvironment(environment);
  LogCall(wire::kOpFork, -1, entry, NowNs(), r == 0 ? child : -r, 1);
  if (r == 0 && pid != nullptr) *pid = child;
  return r;
}
WEFT_EXPORT int posix_spawnp(pid_t* pid, const char* file,
                             const posix_spawn_file_actions_t* actions,
                             const posix_spawnattr_t* attributes, char* const argv[],
                             char* const envp[]) {
  if (!Logging()) return Real().posix_spawnp(pid, file, actions, attributes, argv, envp);
  pid_t child = 0;
  int64_t entry = NowNs();
  ExecEnvironment environment = EnvironmentForExec(envp);
  int r = Real().posix_spawnp(&child, file, actions, attributes, argv, environment.envp);
  ReleaseEnvironment(environment);
  LogCall(wire::kOpFork, -1, entry, NowNs(), r == 0 ? child : -r, 1);
  if (r == 0 && pid != nullptr) *pid = child;
  return r;
}

// _exit skips atexit: write the buffers first (a forked child that ends with _exit).
WEFT_EXPORT void _exit(int status) {
  EndLog(wire::kOpNone);
  Real()._exit(status);
  __builtin_unreachable();
}
WEFT_EXPORT void _Exit(int status) noexcept {
  EndLog(wire::kOpNone);
  Real()._Exit(status);
  __builtin_unreachable();
}
