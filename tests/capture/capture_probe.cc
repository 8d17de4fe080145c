// A small real program for the capture tests (capture_test.cc runs it under weft capture):
// each scenario makes a known number of socket calls with known sizes, so the test can
// assert exact counts and bytes in the logs. It prints one line of results on stdout.
//
//   capture_probe tcp N          fork: the child connects and sends requests of 1..N bytes,
//                                the parent answers each with twice as many bytes
//   capture_probe autobind       listen without bind, print the port the kernel chose
//   capture_probe udp N          N datagrams "datagram-<i>" between two bound sockets
//   capture_probe unix PATH N    fork: the child sends N x "ping" over a Unix socket, the
//                                parent answers "pong"
//   capture_probe unixdgram PATH N [LOGGER]
//                                Unix datagram sockets, N datagrams of each kind: a server
//                                bound to PATH; a forked child bound to PATH.c and connected
//                                to it sends "req-<i>", answered "answer-<i>" (sendto the
//                                source); then, unbound, sends "note-<i>" with sendto (as
//                                syslog(3) does to /dev/log); then "pair-<i>" over a
//                                datagram socketpair, answered "back-<i>". With LOGGER (a
//                                path to util-linux logger), N runs of `LOGGER -u PATH`
//                                follow, each read by the server. Prints the bytes the
//                                server got from logger.
//   capture_probe threads T N    T threads, each N one-byte round trips on its socketpair
//   capture_probe churn T N      T threads one after another, N round trips each
//   capture_probe names          names: a round trip, then the process renames itself
//                                "gateway" (prctl); a thread that names itself "worker-a"
//                                before its round trip (pthread_setname_np), and one the
//                                main thread names "worker-b" after its first round trip
//   capture_probe dup2 N         dup2 a socket over descriptors 3..1100 (the log's too),
//                                close them, then N round trips
//   capture_probe nonblock       non-blocking writes until EAGAIN (partial), reads until EAGAIN
//   capture_probe eintr          a blocking recv interrupted by a signal (EINTR)
//   capture_probe exec           exec itself with an empty environment ("exec-target")
//   capture_probe spawn          posix_spawn itself with an empty environment, and wait
//   capture_probe kill K L       K sends (K + L < 200: nobody reads), a pause, one send (flushed by
//   age), "ready", L
//                                more sends (still buffered), then waits to be killed
//   capture_probe signals N      N round trips while a timer signal's handler sends too
//   capture_probe sigterm N [set-default]   N sends, "ready", then waits for SIGTERM
//   capture_probe fsize N        N round trips with RLIMIT_FSIZE at 100 KB (log cut short)
//   capture_probe dns PORT       a DNS query for example.com (id 4660) to a socket bound to
//                                127.0.0.1:PORT, and its answer
//   capture_probe one-input      poll, select and epoll (level- and edge-triggered) over
//                                connections with requests waiting: what each wait reports
//   capture_probe http N [C]     fork: the child writes N pipelined HTTP requests in one
//                                write; the parent reads them C (7) bytes at a time, answers
//                                all N in one write through a dup of the accepted socket
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

void Die(const char* what) {
  std::perror(what);
  std::exit(2);
}

void SendAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t r = send(fd, data, n, 0);
    if (r < 0) Die("send");
    data += r;
    n -= size_t(r);
  }
}

void RecvExactly(int fd, char* data, size_t n) {
  ssize_t r = recv(fd, data, n, MSG_WAITALL);
  if (r != ssize_t(n)) Die("recv");
}

// One-byte round trips on a socketpair: 2 sends and 2 receives each.
void RoundTrips(int n) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) Die("socketpair");
  char c = 'x';
  for (int i = 0; i < n; ++i) {
    SendAll(sv[0], &c, 1);
    RecvExactly(sv[1], &c, 1);
    SendAll(sv[1], &c, 1);
    RecvExactly(sv[0], &c, 1);
  }
  close(sv[0]);
  close(sv[1]);
}

int Tcp(int n) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) Die("bind");
  if (listen(listener, 8) != 0) Die("listen");
  socklen_t length = sizeof address;
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  pid_t child = fork();
  if (child == 0) {
    close(listener);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) Die("connect");
    std::vector<char> buffer(2 * n);
    for (int i = 1; i <= n; ++i) {
      SendAll(fd, std::string(i, 'q').data(), i);
      RecvExactly(fd, buffer.data(), 2 * i);
    }
    close(fd);
    std::exit(0);
  }
  int fd = accept(listener, nullptr, nullptr);  // the peer is recorded all the same
  if (fd < 0) Die("accept");
  std::vector<char> buffer(2 * n);
  long bytes = 0;
  for (int i = 1; i <= n; ++i) {
    RecvExactly(fd, buffer.data(), i);
    SendAll(fd, std::string(2 * i, 'r').data(), 2 * i);
    bytes += 3 * i;
  }
  int status = 0;
  waitpid(child, &status, 0);
  close(fd);
  close(listener);
  std::printf("tcp %d round trips, %ld bytes, child %d\n", n, bytes, WEXITSTATUS(status));
  return 0;
}

// listen without bind: the kernel picks the port, and the log must say which.
int Autobind() {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  if (listen(listener, 8) != 0) Die("listen");
  sockaddr_in address{};
  socklen_t length = sizeof address;
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  std::printf("listening on port %d\n", ntohs(address.sin_port));
  close(listener);
  return 0;
}

int Udp(int n) {
  int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(b, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) Die("bind");
  socklen_t length = sizeof address;
  getsockname(b, reinterpret_cast<sockaddr*>(&address), &length);
  char buffer[64];
  for (int i = 0; i < n; ++i) {
    std::string datagram = "datagram-" + std::to_string(i);
    if (sendto(a, datagram.data(), datagram.size(), 0, reinterpret_cast<sockaddr*>(&address),
               sizeof address) != ssize_t(datagram.size())) {
      Die("sendto");
    }
    if (recvfrom(b, buffer, sizeof buffer, 0, nullptr, nullptr) != ssize_t(datagram.size())) {
      Die("recvfrom");
    }
  }
  std::printf("udp %d datagrams\n", n);
  return 0;
}

int Unix(const char* path, int n) {
  unlink(path);
  int listener = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path, sizeof address.sun_path - 1);
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) Die("bind");
  if (listen(listener, 8) != 0) Die("listen");
  pid_t child = fork();
  if (child == 0) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) Die("connect");
    for (int i = 0; i < n; ++i) SendAll(fd, "ping", 4);
    char pong[4];
    RecvExactly(fd, pong, 4);  // alive until the server has accepted and answered
    close(fd);
    _exit(0);  // _exit skips atexit: the library must still write the child's log
  }
  int fd = accept(listener, nullptr, nullptr);
  char buffer[4];
  for (int i = 0; i < n; ++i) RecvExactly(fd, buffer, 4);
  SendAll(fd, "pong", 4);
  waitpid(child, nullptr, 0);
  close(fd);
  close(listener);
  unlink(path);
  std::printf("unix %d pings from %d\n", n, child);
  return 0;
}

sockaddr_un UnixAddress(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  return address;
}

int UnixDatagrams(const char* path, int n, const char* logger) {
  std::string client_path = std::string(path) + ".c";
  unlink(path);
  unlink(client_path.c_str());
  sockaddr_un address = UnixAddress(path), client_address = UnixAddress(client_path);
  auto* server_name = reinterpret_cast<sockaddr*>(&address);
  int server = socket(AF_UNIX, SOCK_DGRAM, 0);
  if (bind(server, server_name, sizeof address) != 0) Die("bind");
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_DGRAM, 0, pair) != 0) Die("socketpair");
  char buffer[512];
  pid_t child = fork();
  if (child == 0) {
    close(server);
    close(pair[0]);
    int client = socket(AF_UNIX, SOCK_DGRAM, 0);
    if (bind(client, reinterpret_cast<sockaddr*>(&client_address), sizeof client_address) != 0)
      Die("bind");
    if (connect(client, server_name, sizeof address) != 0) Die("connect");
    for (int i = 0; i < n; ++i) {
      std::string request = "req-" + std::to_string(i);
      if (send(client, request.data(), request.size(), 0) != ssize_t(request.size())) Die("send");
      if (recv(client, buffer, sizeof buffer, 0) <= 0) Die("recv");
    }
    close(client);
    unlink(client_path.c_str());
    int unbound = socket(AF_UNIX, SOCK_DGRAM, 0);
    for (int i = 0; i < n; ++i) {
      std::string note = "note-" + std::to_string(i);
      if (sendto(unbound, note.data(), note.size(), 0, server_name, sizeof address) !=
          ssize_t(note.size())) {
        Die("sendto");
      }
    }
    close(unbound);
    for (int i = 0; i < n; ++i) {
      std::string datagram = "pair-" + std::to_string(i);
      if (write(pair[1], datagram.data(), datagram.size()) != ssize_t(datagram.size()))
        Die("write");
      if (read(pair[1], buffer, sizeof buffer) <= 0) Die("read");
    }
    close(pair[1]);
    _exit(0);
  }
  close(pair[1]);
  for (int i = 0; i < 2 * n; ++i) {
    sockaddr_un from{};
    socklen_t length = sizeof from;
    ssize_t got =
        recvfrom(server, buffer, sizeof buffer, 0, reinterpret_cast<sockaddr*>(&from), &length);
    if (got <= 0) Die("recvfrom");
    if (std::strncmp(buffer, "req-", 4) == 0) {
      std::string answer = "answer-" + std::string(buffer + 4, size_t(got) - 4);
      if (sendto(server, answer.data(), answer.size(), 0, reinterpret_cast<sockaddr*>(&from),
                 length) != ssize_t(answer.size())) {
        Die("sendto");
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    ssize_t got = read(pair[0], buffer, sizeof buffer);
    if (got <= 0) Die("read");
    std::string back = "back-" + std::string(buffer + 5, size_t(got) - 5);
    if (write(pair[0], back.data(), back.size()) != ssize_t(back.size())) Die("write");
  }
  waitpid(child, nullptr, 0);
  long logger_bytes = 0;
  for (int i = 0; logger != nullptr && i < n; ++i) {
    pid_t run = fork();
    if (run == 0) {
      std::string message = "logger-" + std::to_string(i);
      execl(logger, logger, "-u", path, message.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(run, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) Die("logger");
    ssize_t got = recv(server, buffer, sizeof buffer, 0);
    if (got <= 0) Die("recv");
    logger_bytes += got;
  }
  close(pair[0]);
  close(server);
  unlink(path);
  std::printf("unixdgram %d of each, logger bytes %ld\n", n, logger_bytes);
  return 0;
}

int Threads(int threads, int n) {
  std::vector<pthread_t> ids(threads);
  for (pthread_t& id : ids) {
    pthread_create(
        &id, nullptr,
        [](void* arg) -> void* {
          RoundTrips(*static_cast<int*>(arg));
          return nullptr;
        },
        &n);
  }
  for (pthread_t id : ids) pthread_join(id, nullptr);
  std::printf("threads %d x %d round trips\n", threads, n);
  return 0;
}

int Names() {
  RoundTrips(1);
  if (prctl(PR_SET_NAME, "gateway") != 0) Die("prctl");
  pthread_t a, b;
  pthread_create(
      &a, nullptr,
      [](void*) -> void* {
        pthread_setname_np(pthread_self(), "worker-a");
        RoundTrips(1);
        return nullptr;
      },
      nullptr);
  pthread_join(a, nullptr);
  // b does a round trip, waits for its name, and does another.
  static std::atomic<int> stage{0};
  pthread_create(
      &b, nullptr,
      [](void*) -> void* {
        RoundTrips(1);
        stage = 1;
        while (stage != 2) std::this_thread::yield();
        RoundTrips(1);
        return nullptr;
      },
      nullptr);
  while (stage != 1) std::this_thread::yield();
  if (pthread_setname_np(b, "worker-b") != 0) Die("pthread_setname_np");
  stage = 2;
  pthread_join(b, nullptr);
  std::printf("names\n");
  return 0;
}

// Threads one after another: each ends before the next starts (and takes over its buffer).
int Churn(int threads, int n) {
  for (int i = 0; i < threads; ++i) {
    pthread_t id;
    pthread_create(
        &id, nullptr,
        [](void* arg) -> void* {
          RoundTrips(*static_cast<int*>(arg));
          return nullptr;
        },
        &n);
    pthread_join(id, nullptr);
  }
  std::printf("churn %d x %d round trips\n", threads, n);
  return 0;
}

// pthread_create under the wrapper (thread_calls.cc): threads that return a value, end with
// pthread_exit, are cancelled, and create a thread of their own; a creation that fails (a
// stack no mapping can hold). Each reports its tid and its creator's; errno is kept.
pid_t Tid() { return pid_t(syscall(SYS_gettid)); }

int PthreadLife() {
  std::printf("main %d\n", Tid());
  pthread_t returns, exits, cancelled, parent;
  errno = 1234;
  static pid_t main_tid = Tid();
  int r = pthread_create(
      &returns, nullptr,
      [](void* arg) -> void* {
        std::printf("returns %d by %d\n", Tid(), main_tid);
        RoundTrips(2);
        return arg;
      },
      &main_tid);
  if (r != 0 || errno != 1234) Die("pthread_create returns");
  void* value = nullptr;
  pthread_join(returns, &value);
  if (value != &main_tid) Die("returned value");
  pthread_create(
      &exits, nullptr,
      [](void*) -> void* {
        std::printf("exits %d by %d\n", Tid(), main_tid);
        pthread_exit(reinterpret_cast<void*>(intptr_t(42)));
      },
      nullptr);
  pthread_join(exits, &value);
  if (value != reinterpret_cast<void*>(intptr_t(42))) Die("pthread_exit value");
  static std::atomic<bool> waiting{false};
  pthread_create(
      &cancelled, nullptr,
      [](void*) -> void* {
        std::printf("cancelled %d by %d\n", Tid(), main_tid);
        std::fflush(stdout);
        waiting = true;
        for (;;) pause();  // a cancellation point
      },
      nullptr);
  while (!waiting) sched_yield();
  pthread_cancel(cancelled);
  pthread_join(cancelled, &value);
  if (value != PTHREAD_CANCELED) Die("cancel");
  pthread_create(
      &parent, nullptr,
      [](void*) -> void* {
        static pid_t parent_tid = Tid();
        std::printf("parent %d by %d\n", parent_tid, main_tid);
        pthread_t child;
        pthread_create(
            &child, nullptr,
            [](void*) -> void* {
              std::printf("nested %d by %d\n", Tid(), parent_tid);
              return nullptr;
            },
            nullptr);
        pthread_join(child, nullptr);
        return nullptr;
      },
      nullptr);
  pthread_join(parent, nullptr);
  pthread_attr_t huge;
  pthread_attr_init(&huge);
  pthread_attr_setstacksize(&huge, size_t(1) << 62);
  pthread_t never;
  errno = 4321;
  r = pthread_create(
      &never, &huge, [](void*) -> void* { return nullptr; }, nullptr);
  if (r == 0 || errno != 4321) Die("pthread_create with a huge stack");
  pthread_attr_destroy(&huge);
  std::printf("pthreads ok, failed creation %d\n", r);
  return 0;
}

int Dup2(int n) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) Die("socketpair");
  int copies = 0;
  for (int fd = 3; fd <= 1100; ++fd) {
    if (fd == sv[0] || fd == sv[1]) continue;
    if (dup2(sv[0], fd) != fd) Die("dup2");
    ++copies;
  }
  for (int fd = 3; fd <= 1100; ++fd) {
    if (fd != sv[0] && fd != sv[1]) close(fd);
  }
  char c = 'd';
  for (int i = 0; i < n; ++i) {
    SendAll(sv[0], &c, 1);
    RecvExactly(sv[1], &c, 1);
  }
  std::printf("dup2 %d copies, %d sends\n", copies, n);
  return 0;
}

// Non-blocking: writes of 100,000 bytes until the socket is full (the last ones partial,
// then EAGAIN), then reads of 65,536 until it is empty (EAGAIN).
int Nonblocking() {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0) Die("socketpair");
  std::vector<char> chunk(100'000, 'n');
  long written = 0, partial = 0;
  int write_calls = 0;
  while (true) {
    ssize_t r = write(sv[0], chunk.data(), chunk.size());
    ++write_calls;
    if (r < 0) {
      if (errno != EAGAIN) Die("write");
      break;
    }
    written += r;
    partial += r < ssize_t(chunk.size());
  }
  long got = 0;
  int read_calls = 0;
  while (true) {
    ssize_t r = read(sv[1], chunk.data(), 65'536);
    ++read_calls;
    if (r < 0) {
      if (errno != EAGAIN) Die("read");
      break;
    }
    got += r;
  }
  std::printf("nonblock %d writes %ld bytes %ld partial, %d reads %ld bytes\n", write_calls,
              written, partial, read_calls, got);
  return 0;
}

// A blocking receive interrupted by a signal whose handler does not restart calls.
// True once thread `tid` of this process sleeps in the kernel (state S in its stat file).
bool IsSleeping(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", int(tid));
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  char buffer[512];
  size_t n = std::fread(buffer, 1, sizeof buffer - 1, f);
  std::fclose(f);
  buffer[n] = 0;
  const char* state = std::strrchr(buffer, ')');  // the name may hold spaces and ')'
  return state && state[1] == ' ' && state[2] == 'S';
}

// A recv blocked for at least 20 ms, then interrupted by a signal without SA_RESTART. The
// signal is sent only once the thread sleeps in recv (on a loaded machine it could
// otherwise come before the call and leave it blocked), and again every 20 ms until the
// call returns.
int Interrupted() {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) Die("socketpair");
  struct sigaction action {};
  action.sa_handler = [](int) {};
  sigaction(SIGUSR1, &action, nullptr);  // no SA_RESTART
  pthread_t self = pthread_self();
  const pid_t tid = pid_t(syscall(SYS_gettid));
  std::atomic<bool> returned{false};
  std::thread interrupter([self, tid, &returned] {
    while (!IsSleeping(tid)) usleep(1'000);
    while (!returned.load()) {
      usleep(20'000);
      pthread_kill(self, SIGUSR1);
    }
  });
  char c;
  ssize_t r = recv(sv[1], &c, 1, 0);
  int error = errno;
  returned.store(true);
  interrupter.join();
  std::printf("recv %zd errno %d\n", r, error);
  return 0;
}

int Exec(const char* self) {
  char* const argv[] = {const_cast<char*>("capture_probe"), const_cast<char*>("exec-target"),
                        nullptr};
  char* const envp[] = {nullptr};  // no LD_PRELOAD: the library must put itself back
  std::fflush(stdout);
  execve(self, argv, envp);
  Die("execve");
  return 2;
}

int Spawn(const char* self) {
  char* const argv[] = {const_cast<char*>("capture_probe"), const_cast<char*>("exec-target"),
                        nullptr};
  char* const envp[] = {nullptr};
  pid_t child = 0;
  std::fflush(stdout);
  if (posix_spawn(&child, self, nullptr, nullptr, argv, envp) != 0) Die("posix_spawn");
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("spawned %d, status %d\n", child, WEXITSTATUS(status));
  return 0;
}

int Kill(int before, int after) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) Die("socketpair");
  char c = 'k';
  for (int i = 0; i < before; ++i) SendAll(sv[0], &c, 1);
  usleep(1'100'000);  // the next record finds the buffer older than a second: flushed
  SendAll(sv[0], &c, 1);
  for (int i = 0; i < after; ++i) SendAll(sv[0], &c, 1);
  std::printf("ready\n");
  std::fflush(stdout);
  pause();
  return 0;
}

// Servers stopped by SIGTERM at its default action: the records must reach the log.
int Sigterm(int n, bool set_default) {
  if (set_default) signal(SIGTERM, SIG_DFL);  // as the testbed's servers do
  struct sigaction current {};
  sigaction(SIGTERM, nullptr, &current);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) Die("socketpair");
  char c = 't';
  for (int i = 0; i < n; ++i) SendAll(sv[0], &c, 1);
  std::printf("ready, SIGTERM %s\n", current.sa_handler == SIG_DFL ? "default" : "handled");
  std::fflush(stdout);
  pause();
  return 0;
}

int g_signal_fd = -1;
volatile sig_atomic_t g_handler_sends = 0;

int Signals(int n) {
  int sv[2], handler_sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) Die("socketpair");
  if (socketpair(AF_UNIX, SOCK_DGRAM, 0, handler_sv) != 0) Die("socketpair");
  g_signal_fd = handler_sv[0];
  struct sigaction action {};
  action.sa_handler = [](int) {
    int saved = errno;
    send(g_signal_fd, "s", 1, MSG_DONTWAIT);  // EAGAIN once nobody reads: still a call
    g_handler_sends = g_handler_sends + 1;
    errno = saved;
  };
  action.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &action, nullptr);
  itimerval timer{{0, 50}, {0, 50}};
  setitimer(ITIMER_REAL, &timer, nullptr);
  char c = 'm';
  for (int i = 0; i < n; ++i) {
    SendAll(sv[0], &c, 1);
    RecvExactly(sv[1], &c, 1);
  }
  itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
  std::printf("signals %d round trips, %d handler sends\n", n, int(g_handler_sends));
  return 0;
}

// "GET /<i> HTTP/1.1\r\nHost: probe\r\n\r\n": 33 bytes for i < 10.
std::string HttpRequest(int i) {
  return "GET /" + std::to_string(i) + " HTTP/1.1\r\nHost: probe\r\n\r\n";
}
constexpr char kHttpResponse[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

int Http(int n, size_t chunk_size) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) Die("bind");
  if (listen(listener, 8) != 0) Die("listen");
  socklen_t length = sizeof address;
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  std::string requests, responses;
  for (int i = 0; i < n; ++i) {
    requests += HttpRequest(i);
    responses += kHttpResponse;
  }
  pid_t child = fork();
  if (child == 0) {
    close(listener);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) Die("connect");
    SendAll(fd, requests.data(), requests.size());
    std::vector<char> buffer(responses.size());
    RecvExactly(fd, buffer.data(), buffer.size());
    close(fd);
    std::exit(0);
  }
  int fd = accept(listener, nullptr, nullptr);
  if (fd < 0) Die("accept");
  char chunk[64];
  chunk_size = std::min(chunk_size, sizeof chunk);
  for (size_t got = 0; got < requests.size();) {
    ssize_t r = read(fd, chunk, std::min(chunk_size, requests.size() - got));
    if (r <= 0) Die("read");
    got += size_t(r);
  }
  int copy = dup(fd);  // the copy shares the connection, and its protocol state
  close(fd);
  SendAll(copy, responses.data(), responses.size());
  int status = 0;
  waitpid(child, &status, 0);
  close(copy);
  close(listener);
  std::printf("http %d requests, %zu + %zu bytes, child %d\n", n, requests.size(), responses.size(),
              WEXITSTATUS(status));
  return 0;
}

// Event isolation (capture --isolate) seen from the program: three 32-byte HTTP requests
// arrive together, three times over, and the server reads them with every kind of call.
// Prints what each call returned; under --isolate each stops at a request's end, the rest
// is served from held bytes, and waits report the held bytes readable though the kernel
// has none. Untraced, the same calls return other counts but the same bytes in all.
void WaitForBytes(int fd, int n) {
  for (int i = 0; i < 5000; ++i) {
    int available = 0;
    ioctl(fd, FIONREAD, &available);
    if (available >= n) return;
    usleep(1000);
  }
}
std::string Head(const char* p, ssize_t n) { return n >= 6 ? std::string(p + 4, 2) : "?"; }

int Isolate() {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) Die("bind");
  if (listen(listener, 8) != 0) Die("listen");
  socklen_t length = sizeof address;
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  auto batch = [](int first) {
    std::string b;
    for (int i = first; i < first + 3; ++i) b += HttpRequest(i);
    return b;
  };
  pid_t child = fork();
  if (child == 0) {
    close(listener);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) Die("connect");
    char go;
    for (int b = 0; b < 3; ++b) {
      if (b > 0) RecvExactly(fd, &go, 1);
      std::string requests = batch(3 * b);
      SendAll(fd, requests.data(), requests.size());
    }
    while (read(fd, &go, 1) > 0) {
    }
    close(fd);
    std::exit(0);
  }
  int fd = accept(listener, nullptr, nullptr);
  if (fd < 0) Die("accept");
  // Non-blocking: untraced, the calls that isolation serves from held bytes find nothing.
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::string out = "isolate";
  char buffer[256];
  size_t total = 0;
  auto note = [&](const char* what, ssize_t r, const char* p) {
    out += std::string(" ") + what + " " + std::to_string(r < 0 && errno == EAGAIN ? -EAGAIN : r);
    if (r > 0 && p != nullptr) out += " " + Head(p, r);
  };
  // Batch 1: one read takes the kernel's 96 bytes.
  WaitForBytes(fd, 96);
  ssize_t r = read(fd, buffer, sizeof buffer);
  total += size_t(std::max<ssize_t>(r, 0));
  note("read", r, buffer);
  pollfd p{fd, POLLIN, 0};
  note("poll", poll(&p, 1, 200), nullptr);
  r = recv(fd, buffer, sizeof buffer, MSG_PEEK);
  note("peek", r, buffer);
  char a[10], b[246];
  iovec iov[2] = {{a, sizeof a}, {b, sizeof b}};
  r = readv(fd, iov, 2);
  total += size_t(std::max<ssize_t>(r, 0));
  note("readv", r, a);
  int copy = dup(fd);
  close(fd);
  r = read(copy, buffer, sizeof buffer);
  total += size_t(std::max<ssize_t>(r, 0));
  note("dup-read", r, buffer);
  r = read(copy, buffer, sizeof buffer);
  note("drained", r, nullptr);
  // Batch 2: select and epoll while bytes are held, recvmsg from held bytes.
  SendAll(copy, "1", 1);
  WaitForBytes(copy, 96);
  r = recv(copy, buffer, sizeof buffer, 0);
  total += size_t(std::max<ssize_t>(r, 0));
  note("recv", r, buffer);
  fd_set readable;
  FD_ZERO(&readable);
  FD_SET(copy, &readable);
  timeval tv{0, 200000};
  note("select", select(copy + 1, &readable, nullptr, nullptr, &tv), nullptr);
  int ep = epoll_create1(0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 77;
  epoll_ctl(ep, EPOLL_CTL_ADD, copy, &ev);
  epoll_event got[4];
  int n = epoll_wait(ep, got, 4, 200);
  note("epoll", n, nullptr);
  if (n > 0) out += " data " + std::to_string(got[0].data.u64);
  iovec one = {buffer, sizeof buffer};
  msghdr m{};
  m.msg_iov = &one;
  m.msg_iovlen = 1;
  r = recvmsg(copy, &m, 0);
  total += size_t(std::max<ssize_t>(r, 0));
  note("recvmsg", r, buffer);
  r = recv(copy, buffer, sizeof buffer, 0);
  total += size_t(std::max<ssize_t>(r, 0));
  note("recv", r, buffer);
  note("epoll-empty", epoll_wait(ep, got, 4, 0), nullptr);
  close(ep);
  // Batch 3: MSG_WAITALL is never cut at a message's end; held bytes die with the stream.
  SendAll(copy, "2", 1);
  WaitForBytes(copy, 96);
  r = recv(copy, buffer, sizeof buffer, 0);
  total += size_t(std::max<ssize_t>(r, 0));
  note("recv", r, buffer);
  r = recv(copy, buffer, 40, MSG_WAITALL);
  total += size_t(std::max<ssize_t>(r, 0));
  note("waitall", r, buffer);
  close(copy);  // 24 bytes still held
  int status = 0;
  waitpid(child, &status, 0);
  close(listener);
  std::printf("%s; %zu bytes read, child %d\n", out.c_str(), total, WEXITSTATUS(status));
  return 0;
}

// One isolated input per wait (capture --isolate, BorderPatrol §3.2), seen from the
// program. Connections to its own listener, each with HTTP requests whole in the kernel
// before the first wait; the server side waits and reads one request from each connection
// a wait reports readable. Prints, per wait, the connections it reported readable ("0+1+2"
// when one wait reported three), until a wait reports none:
//   poll: three connections with two requests each (level-triggered; the second request
//     of each is held back by the read);
//   select: two connections, one request each;
//   epoll-lt: two connections, one request each, level-triggered;
//   epoll-et: six connections, one request each, registered as nginx does
//     (EPOLLIN|EPOLLOUT|EPOLLET|EPOLLRDHUP, epoll_data not the descriptor), with the
//     listener (a connection waiting to be accepted) in the same set. After the second
//     wait the first connection not yet reported is closed and the next one taken out of
//     the set (EPOLL_CTL_DEL): neither may be reported while so; a new connection with a
//     request is accepted on the closed one's descriptor number and registered with data of
//     its own (reported as "new"), and after the fourth wait the one taken out is added
//     back (reported again, as the kernel finds it readable).
//     Each epoll_wait (timeout 0) follows a poll of the epoll descriptor itself, which
//     must say readable while events are waiting. Also prints how many connections the
//     first wait reported writable, whether it reported the listener, and the polls.
struct Pair {
  int client, server;
};
std::vector<Pair> Connect(int listener, int n, int requests) {
  sockaddr_in address{};
  socklen_t length = sizeof address;
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  std::vector<Pair> pairs;
  for (int i = 0; i < n; ++i) {
    Pair p{socket(AF_INET, SOCK_STREAM, 0), -1};
    if (connect(p.client, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
      Die("connect");
    p.server = accept(listener, nullptr, nullptr);
    if (p.server < 0) Die("accept");
    fcntl(p.server, F_SETFL, fcntl(p.server, F_GETFL) | O_NONBLOCK);
    pairs.push_back(p);
  }
  for (int i = 0; i < n; ++i) {
    std::string batch;
    for (int k = 0; k < requests; ++k) batch += HttpRequest(i);
    SendAll(pairs[size_t(i)].client, batch.data(), batch.size());
  }
  for (const Pair& p : pairs) WaitForBytes(p.server, 32 * requests);
  return pairs;
}

// Appends " 0+2" for a wait that reported connections 0 and 2, and reads one request
// from each. False when it reported none.
bool NoteWait(std::string* out, const std::vector<Pair>& pairs, const std::vector<int>& ready) {
  if (ready.empty()) return false;
  std::string wait;
  char buffer[256];
  for (int i : ready) {
    wait += (wait.empty() ? "" : "+") + std::to_string(i);
    if (read(pairs[size_t(i)].server, buffer, sizeof buffer) <= 0) Die("read");
  }
  *out += " " + wait;
  return true;
}

void CloseAll(const std::vector<Pair>& pairs) {
  for (const Pair& p : pairs) {
    close(p.client);
    if (p.server >= 0) close(p.server);
  }
}

int OneInput() {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) Die("bind");
  if (listen(listener, 16) != 0) Die("listen");
  std::string out = "one-input poll";
  std::vector<Pair> pairs = Connect(listener, 3, 2);
  for (int wait = 0; wait < 20; ++wait) {
    pollfd fds[3];
    for (int i = 0; i < 3; ++i) fds[i] = {pairs[size_t(i)].server, POLLIN, 0};
    poll(fds, 3, 100);
    std::vector<int> ready;
    for (int i = 0; i < 3; ++i) {
      if (fds[i].revents & POLLIN) ready.push_back(i);
    }
    if (!NoteWait(&out, pairs, ready)) break;
  }
  CloseAll(pairs);

  out += "; select";
  pairs = Connect(listener, 2, 1);
  for (int wait = 0; wait < 20; ++wait) {
    fd_set readable;
    FD_ZERO(&readable);
    int top = 0;
    for (const Pair& p : pairs) {
      FD_SET(p.server, &readable);
      top = std::max(top, p.server);
    }
    timeval tv{0, 100000};
    select(top + 1, &readable, nullptr, nullptr, &tv);
    std::vector<int> ready;
    for (int i = 0; i < 2; ++i) {
      if (FD_ISSET(pairs[size_t(i)].server, &readable)) ready.push_back(i);
    }
    if (!NoteWait(&out, pairs, ready)) break;
  }
  CloseAll(pairs);

  out += "; epoll-lt";
  pairs = Connect(listener, 2, 1);
  int ep = epoll_create1(0);
  for (int i = 0; i < 2; ++i) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = uint64_t(100 + i);
    epoll_ctl(ep, EPOLL_CTL_ADD, pairs[size_t(i)].server, &ev);
  }
  for (int wait = 0; wait < 20; ++wait) {
    epoll_event got[8];
    int n = epoll_wait(ep, got, 8, 100);
    std::vector<int> ready;
    for (int k = 0; k < n; ++k) ready.push_back(int(got[k].data.u64 - 100));
    if (!NoteWait(&out, pairs, ready)) break;
  }
  close(ep);
  CloseAll(pairs);

  out += "; epoll-et";
  pairs = Connect(listener, 6, 1);
  ep = epoll_create1(0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 999;
  epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
  auto add = [&](int i) {
    epoll_event e{};
    e.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP;
    e.data.u64 = uint64_t(100 + i);
    epoll_ctl(ep, EPOLL_CTL_ADD, pairs[size_t(i)].server, &e);
  };
  for (int i = 0; i < 6; ++i) add(i);
  int waiting = socket(AF_INET, SOCK_STREAM, 0);  // a connection for the listener
  socklen_t length = sizeof address;
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  if (connect(waiting, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) Die("connect");
  std::vector<bool> reported(6, false);
  int closed = -1, deleted = -1, first_writable = 0;
  bool first_listener = false;
  std::string set_readable;  // per wait: did poll on the epoll descriptor say readable
  for (int wait = 0; wait < 20; ++wait) {
    // As an event loop nested in another would: poll the epoll descriptor, then take
    // its events without waiting.
    pollfd set{ep, POLLIN, 0};
    set_readable += poll(&set, 1, 100) == 1 ? "1" : "0";
    epoll_event got[16];
    int n = epoll_wait(ep, got, 16, 0);
    std::vector<int> ready;
    for (int k = 0; k < n; ++k) {
      if (got[k].data.u64 == 999) {
        first_listener = first_listener || wait == 0;
        int accepted = accept(listener, nullptr, nullptr);
        if (accepted >= 0) close(accepted);
        continue;
      }
      int i = int(got[k].data.u64 - 100);
      if (wait == 0 && (got[k].events & EPOLLOUT)) ++first_writable;
      if (got[k].events & EPOLLIN) {
        ready.push_back(i);
        reported[size_t(i)] = true;
      }
    }
    if (!NoteWait(&out, pairs, ready) && wait > 0) break;
    if (wait == 1) {
      for (int i = 0; i < 6; ++i) {
        if (reported[size_t(i)]) continue;
        if (closed < 0) {
          closed = i;
        } else if (deleted < 0) {
          deleted = i;
        }
      }
      if (deleted >= 0) {
        Pair fresh{socket(AF_INET, SOCK_STREAM, 0), -1};
        if (connect(fresh.client, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
          Die("connect");
        const int fd = pairs[size_t(closed)].server;
        close(fd);
        pairs[size_t(closed)].server = -1;
        epoll_ctl(ep, EPOLL_CTL_DEL, pairs[size_t(deleted)].server, nullptr);
        // The lowest free descriptor number: the closed connection's.
        fresh.server = accept(listener, nullptr, nullptr);
        if (fresh.server != fd) Die("the new connection did not reuse the descriptor");
        fcntl(fresh.server, F_SETFL, fcntl(fresh.server, F_GETFL) | O_NONBLOCK);
        const std::string request = HttpRequest(6);
        SendAll(fresh.client, request.data(), request.size());
        WaitForBytes(fresh.server, 32);
        pairs.push_back(fresh);
        reported.push_back(false);
        add(6);
        out += " (closed " + std::to_string(closed) + ", deleted " + std::to_string(deleted) +
               ", new 6 on " + std::to_string(closed) + "'s descriptor)";
      }
    }
    if (wait == 3 && deleted >= 0) {
      add(deleted);
      out += " (added " + std::to_string(deleted) + ")";
    }
  }
  out += "; first wait: " + std::to_string(first_writable) + " writable, listener " +
         (first_listener ? "yes" : "no") + "; set readable " + set_readable;
  close(ep);
  close(waiting);
  CloseAll(pairs);
  close(listener);
  std::printf("%s\n", out.c_str());
  return 0;
}

// A query for example.com, type A, class IN, with `id` (RFC 1035 §4.1); as an answer with
// the response bit set and no records.
std::string DnsMessage(uint16_t id, bool answer) {
  std::string m = {char(id >> 8),
                   char(id & 0xff),
                   char(answer ? 0x81 : 0x01),
                   char(answer ? 0x80 : 0x00),
                   0,
                   1,
                   0,
                   0,
                   0,
                   0,
                   0,
                   0};
  m += std::string(
           "\x07"
           "example"
           "\x03"
           "com",
           12) +
       std::string(1, '\0');
  m += std::string("\x00\x01\x00\x01", 4);
  return m;
}

int Dns(int port) {
  int server = socket(AF_INET, SOCK_DGRAM, 0), client = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(uint16_t(port));
  if (bind(server, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) Die("bind");
  std::string query = DnsMessage(4660, false), answer = DnsMessage(4660, true);
  if (sendto(client, query.data(), query.size(), 0, reinterpret_cast<sockaddr*>(&address),
             sizeof address) != ssize_t(query.size())) {
    Die("sendto");
  }
  char buffer[512];
  sockaddr_in from{};
  socklen_t length = sizeof from;
  ssize_t n =
      recvfrom(server, buffer, sizeof buffer, 0, reinterpret_cast<sockaddr*>(&from), &length);
  if (n != ssize_t(query.size())) Die("recvfrom");
  sendto(server, answer.data(), answer.size(), 0, reinterpret_cast<sockaddr*>(&from), length);
  n = recv(client, buffer, sizeof buffer, 0);
  close(client);
  close(server);
  std::printf("dns %zd-byte answer\n", n);
  return 0;
}

int FileSizeLimit(int n) {
  signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG, like a full disk
  rlimit limit{100 * 1024, 100 * 1024};
  setrlimit(RLIMIT_FSIZE, &limit);
  RoundTrips(n);
  std::printf("fsize %d round trips\n", n);
  return 0;
}

// A thread marks itself weft's own (docs/capture.md "Weft's own threads are never traced")
// through the symbol the preload library exports, found as the pivot library finds it:
// its round trips, its new thread's and the traced main thread's use of a socketpair it
// made are not logged; after it unmarks itself its round trips are.
int Untraced() {
  using SetUntraced = int (*)(int);
  auto set = reinterpret_cast<SetUntraced>(dlsym(RTLD_DEFAULT, "weft_capture_set_untraced"));
  if (set == nullptr) {
    std::printf("untraced: no preload library\n");
    return 1;
  }
  RoundTrips(1);
  int sv[2] = {-1, -1};
  int first = -1, second = -1;
  std::thread marked([&] {
    first = set(1);
    RoundTrips(2);
    std::thread inner([] { RoundTrips(3); });
    inner.join();
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) Die("socketpair");
    second = set(0);
    RoundTrips(4);
  });
  marked.join();
  char c = 'x';
  SendAll(sv[0], &c, 1);
  RecvExactly(sv[1], &c, 1);
  close(sv[0]);
  close(sv[1]);
  std::printf("untraced ok, marks %d %d\n", first, second);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = argc > 1 ? argv[1] : "";
  auto arg = [&](int i) { return argc > i ? std::atoi(argv[i]) : 0; };
  // A scenario that hangs (a test bug) must not outlive its test. The signals scenario
  // has the timer (and SIGALRM) for itself.
  if (scenario != "signals") alarm(60);
  if (scenario == "tcp") return Tcp(arg(2));
  if (scenario == "udp") return Udp(arg(2));
  if (scenario == "autobind") return Autobind();
  if (scenario == "unix" && argc > 3) return Unix(argv[2], arg(3));
  if (scenario == "unixdgram" && argc > 3)
    return UnixDatagrams(argv[2], arg(3), argc > 4 ? argv[4] : nullptr);
  if (scenario == "threads") return Threads(arg(2), arg(3));
  if (scenario == "churn") return Churn(arg(2), arg(3));
  if (scenario == "names") return Names();
  if (scenario == "pthreads") return PthreadLife();
  if (scenario == "dup2") return Dup2(arg(2));
  if (scenario == "nonblock") return Nonblocking();
  if (scenario == "eintr") return Interrupted();
  if (scenario == "exec") return Exec(argv[0]);
  if (scenario == "spawn") return Spawn(argv[0]);
  if (scenario == "exec-target") {
    RoundTrips(3);
    std::printf("exec-target ok\n");
    return 0;
  }
  if (scenario == "kill") return Kill(arg(2), arg(3));
  if (scenario == "signals") return Signals(arg(2));
  if (scenario == "sigterm")
    return Sigterm(arg(2), argc > 3 && std::string(argv[3]) == "set-default");
  if (scenario == "fsize") return FileSizeLimit(arg(2));
  if (scenario == "http") return Http(arg(2), argc > 3 ? size_t(arg(3)) : 7);
  if (scenario == "dns") return Dns(arg(2));
  if (scenario == "isolate") return Isolate();
  if (scenario == "one-input") return OneInput();
  if (scenario == "untraced") return Untraced();
  std::fprintf(stderr,
               "usage: capture_probe tcp|udp|unix|threads|dup2|exec|kill|signals|fsize ...\n");
  return 2;
}
