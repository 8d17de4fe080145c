// A program with known TLS traffic for capture_tls_test, one process: a server thread
// with OpenSSL and a client (OpenSSL or GnuTLS) on a loopback TCP connection, HTTP/1.1
// requests and responses inside TLS.
//
//   tls_probe openssl N   N requests, OpenSSL client (SSL_write / SSL_read)
//   tls_probe ex N        N requests, OpenSSL client with SSL_write_ex / SSL_read_ex
//   tls_probe gnutls N    N requests, GnuTLS client (gnutls_record_send / _recv)
//   tls_probe gnutls-to PORT N
//                         the GnuTLS client alone, to a server on 127.0.0.1:PORT (nginx):
//                         N requests on one connection, any HTTP/1.1 response with a
//                         Content-Length
//   tls_probe opaque      no TLS library: writes a TLS handshake record and an alert with
//                         write(), as a statically linked TLS library would
//   tls_probe opaque-pg   the same after PostgreSQL's SSLRequest and its 'S' answer, sent
//                         in the clear
//   tls_probe bio         OpenSSL over a pair of memory BIOs, no socket at all
//
// Request i is "GET /tls/<i, 3 digits> HTTP/1.1" with a Host header (38 bytes), its
// response "HTTP/1.1 200 OK" with a 5-byte body (43 bytes). Prints "tls_probe MODE: N
// requests, A + B bytes" at the end. The server's certificate and key are named by
// TLS_PROBE_CERT and TLS_PROBE_KEY.
#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

namespace {

[[noreturn]] void Die(const char* what) {
  fprintf(stderr, "tls_probe: %s\n", what);
  ERR_print_errors_fp(stderr);
  exit(1);
}

std::string Request(int i) {
  char text[64];
  snprintf(text, sizeof text, "GET /tls/%03d HTTP/1.1\r\nHost: probe\r\n\r\n", i);
  return text;
}
constexpr char kResponse[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
constexpr size_t kResponseLength = sizeof kResponse - 1;

// A connected loopback TCP pair: client and accepted server socket.
void Connect(int* client, int* server) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof a;
  if (bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&a), &length) != 0) {
    Die("listen");
  }
  *client = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(*client, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) Die("connect");
  *server = accept(listener, nullptr, nullptr);
  if (*server < 0) Die("accept");
  close(listener);
}

// Reads one request (up to its blank line) with `read_some`; false at the end.
template <typename ReadSome>
bool ReadRequest(ReadSome read_some, std::string* request) {
  request->clear();
  char buffer[256];
  while (request->find("\r\n\r\n") == std::string::npos) {
    int n = read_some(buffer, sizeof buffer);
    if (n <= 0) return false;
    request->append(buffer, size_t(n));
  }
  return true;
}

// The server: OpenSSL on `fd`, answers every request until the client closes.
void Serve(SSL_CTX* context, int fd) {
  SSL* ssl = SSL_new(context);
  SSL_set_fd(ssl, fd);
  if (SSL_accept(ssl) != 1) Die("SSL_accept");
  std::string request;
  while (ReadRequest([&](char* b, int n) { return SSL_read(ssl, b, n); }, &request)) {
    if (SSL_write(ssl, kResponse, int(kResponseLength)) != int(kResponseLength)) Die("SSL_write");
  }
  SSL_shutdown(ssl);
  SSL_free(ssl);
  close(fd);
}

SSL_CTX* ServerContext(const char* cert, const char* key) {
  SSL_CTX* context = SSL_CTX_new(TLS_server_method());
  if (SSL_CTX_use_certificate_file(context, cert, SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) != 1) {
    Die("server certificate");
  }
  return context;
}

// Reads one response with `read_some`.
template <typename ReadSome>
void ReadResponse(ReadSome read_some) {
  size_t have = 0;
  char buffer[128];
  while (have < kResponseLength) {
    int n = read_some(buffer, sizeof buffer);
    if (n <= 0) Die("response cut short");
    have += size_t(n);
  }
}

int OpensslClient(int fd, int requests, bool ex) {
  SSL_CTX* context = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(context);
  SSL_set_fd(ssl, fd);
  if (SSL_connect(ssl) != 1) Die("SSL_connect");
  for (int i = 0; i < requests; ++i) {
    std::string r = Request(i);
    if (ex) {
      size_t written = 0;
      if (SSL_write_ex(ssl, r.data(), r.size(), &written) != 1) Die("SSL_write_ex");
      ReadResponse([&](char* b, int n) {
        size_t got = 0;
        return SSL_read_ex(ssl, b, size_t(n), &got) == 1 ? int(got) : -1;
      });
    } else {
      if (SSL_write(ssl, r.data(), int(r.size())) != int(r.size())) Die("SSL_write");
      ReadResponse([&](char* b, int n) { return SSL_read(ssl, b, n); });
    }
  }
  SSL_shutdown(ssl);
  SSL_free(ssl);
  SSL_CTX_free(context);
  return 0;
}

// Reads one HTTP/1.1 response with a Content-Length with `read_some`.
template <typename ReadSome>
void ReadHttpResponse(ReadSome read_some) {
  std::string response;
  char buffer[4096];
  size_t end = std::string::npos, length = 0;
  while (end == std::string::npos || response.size() < end + 4 + length) {
    int n = read_some(buffer, sizeof buffer);
    if (n <= 0) Die("response cut short");
    response.append(buffer, size_t(n));
    if (end == std::string::npos && (end = response.find("\r\n\r\n")) != std::string::npos) {
      size_t at = response.find("Content-Length: ");
      if (at == std::string::npos || at > end) Die("response without Content-Length");
      length = size_t(atol(response.c_str() + at + 16));
    }
  }
}

int GnutlsClient(int fd, int requests, bool any_response) {
  gnutls_global_init();
  gnutls_certificate_credentials_t credentials;
  gnutls_certificate_allocate_credentials(&credentials);
  gnutls_session_t session;
  gnutls_init(&session, GNUTLS_CLIENT);
  gnutls_set_default_priority(session);
  gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, credentials);
  gnutls_transport_set_int(session, fd);
  int r;
  do {
    r = gnutls_handshake(session);
  } while (r < 0 && gnutls_error_is_fatal(r) == 0);
  if (r < 0) Die("gnutls_handshake");
  for (int i = 0; i < requests; ++i) {
    std::string request = Request(i);
    if (gnutls_record_send(session, request.data(), request.size()) != ssize_t(request.size())) {
      Die("gnutls_record_send");
    }
    auto read_some = [&](char* b, int n) {
      ssize_t got;
      do {  // TLS 1.3 post-handshake messages (session tickets) interrupt a read
        got = gnutls_record_recv(session, b, size_t(n));
      } while (got == GNUTLS_E_AGAIN || got == GNUTLS_E_INTERRUPTED);
      if (got < 0)
        fprintf(stderr, "tls_probe: gnutls_record_recv: %s\n", gnutls_strerror(int(got)));
      return int(got);
    };
    if (any_response) {
      ReadHttpResponse(read_some);
    } else {
      ReadResponse(read_some);
    }
  }
  gnutls_bye(session, GNUTLS_SHUT_WR);
  gnutls_deinit(session);
  gnutls_certificate_free_credentials(credentials);
  return 0;
}

// What a statically linked TLS library does on the wire: the client's first bytes are a
// handshake record, the server's an alert; nothing goes through an interposed call.
int Opaque(bool postgres) {
  int client, server;
  Connect(&client, &server);
  if (postgres) {
    const unsigned char ssl_request[] = {0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f};
    unsigned char answer[8];
    if (write(client, ssl_request, sizeof ssl_request) != ssize_t(sizeof ssl_request) ||
        read(server, answer, sizeof answer) != ssize_t(sizeof ssl_request) ||
        write(server, "S", 1) != 1 || read(client, answer, 1) != 1) {
      Die("SSLRequest exchange");
    }
  }
  const unsigned char hello[] = {0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0x00, 0x00, 0x00};
  const unsigned char alert[] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28};
  unsigned char buffer[64];
  if (write(client, hello, sizeof hello) != ssize_t(sizeof hello) ||
      read(server, buffer, sizeof buffer) != ssize_t(sizeof hello) ||
      write(server, alert, sizeof alert) != ssize_t(sizeof alert) ||
      read(client, buffer, sizeof buffer) != ssize_t(sizeof alert)) {
    Die("opaque exchange");
  }
  close(client);
  close(server);
  printf("tls_probe %s: 1 exchange, %zu + %zu bytes\n", postgres ? "opaque-pg" : "opaque",
         sizeof hello, sizeof alert);
  return 0;
}

// TLS between two SSL objects over memory BIOs: no descriptor to tie the calls to.
int Bio(const char* cert, const char* key) {
  SSL_CTX* server_context = ServerContext(cert, key);
  SSL_CTX* client_context = SSL_CTX_new(TLS_client_method());
  SSL* server = SSL_new(server_context);
  SSL* client = SSL_new(client_context);
  BIO *client_io, *server_io;
  BIO_new_bio_pair(&client_io, 0, &server_io, 0);
  SSL_set_bio(client, client_io, client_io);
  SSL_set_bio(server, server_io, server_io);
  SSL_set_connect_state(client);
  SSL_set_accept_state(server);
  bool client_done = false, server_done = false;
  for (int round = 0; round < 100 && !(client_done && server_done); ++round) {
    if (!client_done) client_done = SSL_do_handshake(client) == 1;
    if (!server_done) server_done = SSL_do_handshake(server) == 1;
  }
  if (!client_done || !server_done) Die("BIO handshake");
  std::string r = Request(0);
  char buffer[128];
  if (SSL_write(client, r.data(), int(r.size())) != int(r.size()) ||
      SSL_read(server, buffer, sizeof buffer) != int(r.size())) {
    Die("BIO exchange");
  }
  printf("tls_probe bio: 1 requests, %zu + 0 bytes\n", r.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) Die("usage: tls_probe openssl|ex|gnutls N | opaque | bio");
  std::string mode = argv[1];
  if (mode == "opaque" || mode == "opaque-pg") return Opaque(mode == "opaque-pg");
  if (mode == "gnutls-to" && argc > 3) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(uint16_t(atoi(argv[2])));
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) Die("connect");
    int requests = atoi(argv[3]);
    GnutlsClient(fd, requests, true);
    close(fd);
    printf("tls_probe gnutls-to: %d requests\n", requests);
    return 0;
  }
  const char* cert = getenv("TLS_PROBE_CERT");
  const char* key = getenv("TLS_PROBE_KEY");
  if (cert == nullptr || key == nullptr) Die("TLS_PROBE_CERT and TLS_PROBE_KEY name the server's");
  if (mode == "bio") return Bio(cert, key);
  int requests = argc > 2 ? atoi(argv[2]) : 1;
  SSL_CTX* server_context = ServerContext(cert, key);
  int client, server;
  Connect(&client, &server);
  std::thread serving(Serve, server_context, server);
  if (mode == "gnutls") {
    GnutlsClient(client, requests, false);
  } else {
    OpensslClient(client, requests, mode == "ex");
  }
  close(client);
  serving.join();
  printf("tls_probe %s: %d requests, %zu + %zu bytes\n", mode.c_str(), requests,
         size_t(requests) * Request(0).size(), size_t(requests) * kResponseLength);
  return 0;
}
