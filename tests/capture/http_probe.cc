// A real HTTP exchange gone wrong, for tests/capture/http_robustness_test.cc: one process
// forks a client that sends what the scenario says over loopback TCP, while the parent, a
// server, reads everything until the client closes, then answers with what it received
// (its size and an FNV-1a hash) and prints that line. Run untraced and under
// `weft capture --protocols http=PORT` (any port the kernel chose: "auto" detects HTTP
// from the bytes), the output must be the same: capture must not change what a program
// reads, however bad the bytes.
//
//   http_probe malformed     request lines and headers that break HTTP, then random bytes
//   http_probe half          half a request, a pause, the other half
//   http_probe big           a 1 GiB request body (Content-Length), in 1 MiB writes
//   http_probe cut           a request whose body stops short: the client closes mid-message
//   http_probe pipelined     50 pipelined requests with chunked bodies in one write
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

[[noreturn]] void Die(const char* what) {
  std::perror(what);
  std::exit(2);
}

void SendAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t r = send(fd, data, n, MSG_NOSIGNAL);
    if (r < 0) Die("send");
    data += r;
    n -= size_t(r);
  }
}
void SendAll(int fd, const std::string& s) { SendAll(fd, s.data(), s.size()); }

// What the client of each scenario sends.
void Client(int fd, const std::string& scenario) {
  if (scenario == "malformed") {
    SendAll(fd, "GET /x HTTP/1.1\r\nContent-Length: abc\r\n\r\n");
    SendAll(fd, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
    SendAll(fd, "\r\n\r\nHTTP/9 ???\r\n\r\n");
    std::string noise(65536, '\0');
    uint32_t x = 12345;
    for (char& c : noise) c = char((x = x * 1103515245 + 12345) >> 16);
    SendAll(fd, noise);
  } else if (scenario == "half") {
    std::string request =
        "POST /half HTTP/1.1\r\nHost: probe\r\nContent-Length: 10\r\n\r\n0123456789";
    SendAll(fd, request.substr(0, 30));
    usleep(200'000);
    SendAll(fd, request.substr(30));
  } else if (scenario == "big") {
    const size_t body = size_t(1) << 30;
    SendAll(fd, "POST /big HTTP/1.1\r\nContent-Length: " + std::to_string(body) + "\r\n\r\n");
    std::string chunk(1 << 20, 'b');
    for (size_t sent = 0; sent < body; sent += chunk.size()) SendAll(fd, chunk);
  } else if (scenario == "cut") {
    SendAll(fd, "POST /cut HTTP/1.1\r\nContent-Length: 1000\r\n\r\nonly-this-much");
  } else if (scenario == "pipelined") {
    std::string all;
    for (int i = 0; i < 50; ++i) {
      all += "POST /p/" + std::to_string(i) +
             " HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
    }
    SendAll(fd, all);
  } else {
    std::fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
    std::exit(2);
  }
  shutdown(fd, SHUT_WR);
  char answer[128];
  ssize_t n = recv(fd, answer, sizeof answer - 1, 0);
  if (n <= 0) Die("recv answer");
  std::exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: http_probe malformed|half|big|cut|pipelined\n");
    return 2;
  }
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) Die("bind");
  if (listen(listener, 1) != 0) Die("listen");
  socklen_t length = sizeof address;
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  pid_t child = fork();
  if (child == 0) {
    close(listener);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) Die("connect");
    Client(fd, argv[1]);
  }
  int fd = accept(listener, nullptr, nullptr);
  if (fd < 0) Die("accept");
  // Reads of odd sizes, so that message ends fall anywhere in them.
  static char buffer[70000];
  uint64_t total = 0, hash = 1469598103934665603ull;
  size_t sizes[] = {1, 7, 100, 4096, 65536, 70000}, k = 0;
  for (ssize_t n; (n = read(fd, buffer, sizes[k++ % 6])) != 0;) {
    if (n < 0) Die("read");
    for (ssize_t i = 0; i < n; ++i) hash = (hash ^ uint8_t(buffer[i])) * 1099511628211ull;
    total += uint64_t(n);
  }
  char answer[64];
  int len = std::snprintf(answer, sizeof answer, "%llu %016llx\n", (unsigned long long)total,
                          (unsigned long long)hash);
  SendAll(fd, answer, size_t(len));
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("%s %s", argv[1], answer);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
