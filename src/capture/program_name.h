// The name a traced process's program goes by: reconcile's node names (`host:program`) and
// the preload library's `PROTO=PROGRAM` rules both use it, so that a rule matches the name
// a user sees. It is the basename of argv[0] when argv[0] is a plain command or path, the
// way the program was started: Debian's /usr/bin/redis-server is a link to
// redis-check-rdb (the binary picks its role from argv[0]) and /usr/bin/python3 one to
// python3.11, and a user knows them as redis-server and python3. Otherwise (no argv, or
// a command line the program rewrote: "nginx: worker process", "postgres: checkpointer",
// a login shell's "-bash") it is the executable's basename. Plain C++, no library: the
// preload library links it.
#pragma once

#include <stddef.h>

namespace weft::capture {

struct ProgramNameText {
  const char* data;
  size_t size;
};

// Where the basename of `path` starts.
constexpr size_t BasenameStart(const char* path, size_t size) {
  while (size > 0 && path[size - 1] != '/') --size;
  return size;
}

// Only letters, digits, '.', '_', '+', '-' and '/', with a basename that starts with a
// letter or digit.
constexpr bool IsPlainCommand(const char* argv0, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    char c = argv0[i];
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '+' || c == '-' || c == '/';
    if (!plain) return false;
  }
  size_t start = BasenameStart(argv0, size);
  if (start == size) return false;
  char first = argv0[start];
  return (first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') ||
         (first >= '0' && first <= '9');
}

// `argv0` is the first argument (empty when there is none), `executable` the path
// /proc/self/exe links to. The name points into one of them.
constexpr ProgramNameText ProgramName(const char* executable, size_t executable_size,
                                      const char* argv0, size_t argv0_size) {
  if (IsPlainCommand(argv0, argv0_size)) {
    size_t start = BasenameStart(argv0, argv0_size);
    return {argv0 + start, argv0_size - start};
  }
  size_t start = BasenameStart(executable, executable_size);
  return {executable + start, executable_size - start};
}

}  // namespace weft::capture
