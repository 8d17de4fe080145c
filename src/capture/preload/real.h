// The C library's own functions behind the ones the preload library interposes, found
// with dlsym(RTLD_NEXT). Every wrapper calls Real().name; the pointers are resolved once
// (lazily too: a wrapper may run before the library's constructor, from another
// library's constructor).
#pragma once

#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/types.h>
#include <sys/uio.h>

namespace weft_preload {

// X(name, return type, parameter list)
#define WEFT_PRELOAD_REAL_FUNCTIONS(X)                                                        \
  X(socket, int, (int, int, int))                                                             \
  X(socketpair, int, (int, int, int, int*))                                                   \
  X(pipe, int, (int*))                                                                        \
  X(pipe2, int, (int*, int))                                                                  \
  X(connect, int, (int, const struct sockaddr*, socklen_t))                                   \
  X(accept, int, (int, struct sockaddr*, socklen_t*))                                         \
  X(accept4, int, (int, struct sockaddr*, socklen_t*, int))                                   \
  X(bind, int, (int, const struct sockaddr*, socklen_t))                                      \
  X(listen, int, (int, int))                                                                  \
  X(close, int, (int))                                                                        \
  X(shutdown, int, (int, int))                                                                \
  X(dup, int, (int))                                                                          \
  X(dup2, int, (int, int))                                                                    \
  X(dup3, int, (int, int, int))                                                               \
  X(fcntl, int, (int, int, ...))                                                              \
  X(read, ssize_t, (int, void*, size_t))                                                      \
  X(readv, ssize_t, (int, const struct iovec*, int))                                          \
  X(write, ssize_t, (int, const void*, size_t))                                               \
  X(writev, ssize_t, (int, const struct iovec*, int))                                         \
  X(send, ssize_t, (int, const void*, size_t, int))                                           \
  X(sendto, ssize_t, (int, const void*, size_t, int, const struct sockaddr*, socklen_t))      \
  X(sendmsg, ssize_t, (int, const struct msghdr*, int))                                       \
  X(sendmmsg, int, (int, struct mmsghdr*, unsigned int, int))                                 \
  X(recv, ssize_t, (int, void*, size_t, int))                                                 \
  X(recvfrom, ssize_t, (int, void*, size_t, int, struct sockaddr*, socklen_t*))               \
  X(recvmsg, ssize_t, (int, struct msghdr*, int))                                             \
  X(recvmmsg, int, (int, struct mmsghdr*, unsigned int, int, struct timespec*))               \
  X(sendfile, ssize_t, (int, int, off_t*, size_t))                                            \
  X(poll, int, (struct pollfd*, nfds_t, int))                                                 \
  X(ppoll, int, (struct pollfd*, nfds_t, const struct timespec*, const sigset_t*))            \
  X(select, int, (int, fd_set*, fd_set*, fd_set*, struct timeval*))                           \
  X(pselect, int, (int, fd_set*, fd_set*, fd_set*, const struct timespec*, const sigset_t*))  \
  X(epoll_ctl, int, (int, int, int, struct epoll_event*))                                     \
  X(epoll_wait, int, (int, struct epoll_event*, int, int))                                    \
  X(epoll_pwait, int, (int, struct epoll_event*, int, int, const sigset_t*))                  \
  X(fork, pid_t, (void))                                                                      \
  X(execve, int, (const char*, char* const*, char* const*))                                   \
  X(execvpe, int, (const char*, char* const*, char* const*))                                  \
  X(fexecve, int, (int, char* const*, char* const*))                                          \
  X(posix_spawn, int,                                                                         \
    (pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*,        \
     char* const*, char* const*))                                                             \
  X(posix_spawnp, int,                                                                        \
    (pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*,        \
     char* const*, char* const*))                                                             \
  X(_exit, void, (int))                                                                       \
  X(pthread_create, int, (pthread_t*, const pthread_attr_t*, void* (*)(void*), void*))        \
  X(pthread_setname_np, int, (pthread_t, const char*))                                        \
  X(prctl, int, (int, ...))                                                                   \
  X(sigaction, int, (int, const struct sigaction*, struct sigaction*))                        \
  X(signal, sighandler_t, (int, sighandler_t))                                                \
  X(_Exit, void, (int))                                                                       \
  X(__read_chk, ssize_t, (int, void*, size_t, size_t))                                        \
  X(__recv_chk, ssize_t, (int, void*, size_t, size_t, int))                                   \
  X(__recvfrom_chk, ssize_t, (int, void*, size_t, size_t, int, struct sockaddr*, socklen_t*)) \
  X(pthread_mutex_lock, int, (pthread_mutex_t*))                                              \
  X(pthread_mutex_trylock, int, (pthread_mutex_t*))                                           \
  X(pthread_mutex_unlock, int, (pthread_mutex_t*))                                            \
  X(pthread_cond_wait, int, (pthread_cond_t*, pthread_mutex_t*))                              \
  X(pthread_cond_timedwait, int, (pthread_cond_t*, pthread_mutex_t*, const struct timespec*)) \
  X(pthread_cond_clockwait, int,                                                              \
    (pthread_cond_t*, pthread_mutex_t*, clockid_t, const struct timespec*))                   \
  X(pthread_cond_signal, int, (pthread_cond_t*))                                              \
  X(pthread_cond_broadcast, int, (pthread_cond_t*))                                           \
  X(sem_post, int, (sem_t*))                                                                  \
  X(sem_wait, int, (sem_t*))                                                                  \
  X(sem_timedwait, int, (sem_t*, const struct timespec*))                                     \
  X(sem_trywait, int, (sem_t*))                                                               \
  X(eventfd, int, (unsigned int, int))                                                        \
  X(timerfd_create, int, (int, int))                                                          \
  X(timerfd_settime, int, (int, int, const struct itimerspec*, struct itimerspec*))

struct RealFunctions {
#define WEFT_PRELOAD_DECLARE(name, ret, params) ret(*name) params;
  WEFT_PRELOAD_REAL_FUNCTIONS(WEFT_PRELOAD_DECLARE)
#undef WEFT_PRELOAD_DECLARE
};

extern RealFunctions g_real;
extern bool g_real_resolved;
void ResolveRealFunctions();

inline const RealFunctions& Real() {
  if (__builtin_expect(!__atomic_load_n(&g_real_resolved, __ATOMIC_ACQUIRE), 0)) {
    ResolveRealFunctions();
  }
  return g_real;
}

}  // namespace weft_preload
