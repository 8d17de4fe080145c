// A traced program for the tests of what a log keeps when its process is stopped
// (durable_log_test.cc): it writes numbered 32-byte messages ("message 0000000042", padded
// with spaces, ending in a newline) to descriptor FD, one send() each, and the test counts
// what the other end received.
//
//   sender_probe FD MODE COUNT [MARKER]
//
// After COUNT messages it creates the file MARKER (if given) and sits in a blocking recv()
// on FD until a signal ends it. MODE says how SIGTERM ends it:
//   default     SIGTERM left at its default action
//   exit-group  its own SIGTERM handler ends the process with the exit_group system call,
//               as a runtime that bypasses the C library does (no atexit, no _exit)
//   blocked     SIGTERM blocked in the sending thread; a second thread, sitting in
//               pause(), is the one the signal can be delivered to
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

void OnTermExitGroup(int) { syscall(SYS_exit_group, 0); }

void* SitInPause(void*) {
  for (;;) pause();
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: sender_probe FD default|exit-group|blocked COUNT [MARKER]\n");
    return 2;
  }
  int fd = std::atoi(argv[1]);
  std::string mode = argv[2];
  long count = std::atol(argv[3]);
  if (mode == "exit-group") {
    struct sigaction action {};
    action.sa_handler = OnTermExitGroup;
    sigaction(SIGTERM, &action, nullptr);
  } else if (mode == "blocked") {
    pthread_t thread;
    pthread_create(&thread, nullptr, SitInPause, nullptr);  // inherits SIGTERM unblocked
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
  } else if (mode != "default") {
    std::fprintf(stderr, "sender_probe: unknown mode %s\n", mode.c_str());
    return 2;
  }
  char message[33];
  for (long i = 0; i < count; ++i) {
    std::memset(message, ' ', 32);
    int n = std::snprintf(message, sizeof message, "message %010ld", i);
    message[n] = ' ';
    message[31] = '\n';
    if (send(fd, message, 32, MSG_NOSIGNAL) != 32) return 1;
  }
  if (argc > 4) close(open(argv[4], O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  for (;;) {
    char byte;
    if (recv(fd, &byte, 1, 0) <= 0) pause();
  }
}
