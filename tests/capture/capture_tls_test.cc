// TLS plaintext under weft capture (docs/capture.md "TLS"), on tls_probe: HTTP inside TLS
// between an OpenSSL server and an OpenSSL or GnuTLS client in one process. The record
// calls are the connection's data (tls_read/tls_write, plaintext byte counts and payload,
// HTTP boundaries with http.url from the plaintext); every system call on the two sockets
// is ciphertext (tls_transport). A stream that carries TLS records no library call was
// seen for is counted, never parsed; memory BIOs (no socket) log nothing; a program
// without a TLS library gets none loaded.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "capture/event_log.h"
#include "weft_cli.h"

namespace weft::capture {
namespace {

namespace fs = std::filesystem;
using weft::testing::Shell;
using weft::testing::Weft;

constexpr size_t kRequestBytes = 38, kResponseBytes = 43;

class CaptureTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_UNDER_ASAN();
    dir_ = fs::path(::testing::TempDir()) /
           ("weft-capture-tls-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto made =
        Shell("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -keyout " +
              (dir_ / "key.pem").string() + " -out " + (dir_ / "cert.pem").string());
    ASSERT_EQ(made.rc, 0) << made.output;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `tls_probe ARGS` under weft capture (payload prefix 64) and returns its one log.
  EventLog Run(const std::string& args, const std::string& expect) {
    std::string env = "TLS_PROBE_CERT=" + (dir_ / "cert.pem").string() +
                      " TLS_PROBE_KEY=" + (dir_ / "key.pem").string() + " ";
    auto run = Shell(env + WEFT_BINARY + " capture -o " + (dir_ / "capture").string() +
                     " --payload-prefix 64 -- " + TLS_PROBE + " " + args);
    EXPECT_EQ(run.rc, 0) << run.output;
    EXPECT_NE(run.output.find(expect), std::string::npos) << run.output;
    auto paths = FindEventLogs((dir_ / "capture").string());
    EXPECT_TRUE(paths.ok() && paths->size() == 1u);
    if (!paths.ok() || paths->size() != 1u) return {};
    auto log = ReadEventLog(paths->front());
    EXPECT_TRUE(log.ok()) << log.status().message();
    return log.ok() ? std::move(*log) : EventLog{};
  }

  std::string Reconcile() {
    auto run =
        Weft("reconcile " + (dir_ / "capture").string() + " -o " + (dir_ / "run.weft").string());
    EXPECT_EQ(run.rc, 0) << run.output;
    return run.output;
  }

  // Checks a log of `tls_probe MODE 3`: what each TCP socket's records say.
  void CheckHttpInsideTls(const EventLog& log, int32_t client_function) {
    std::set<int> tcp;  // the two connected sockets (the listener is named by bind/listen)
    for (const Event& e : log.events) {
      if (e.op != EventOp::kEndpoint) continue;
      const Endpoint& ep = log.endpoints[size_t(e.endpoint)];
      if (ep.kind == wire::kKindTcp && !ep.listening && ep.peer.port != 0) tcp.insert(e.fd);
    }
    ASSERT_EQ(tcp.size(), 2u);
    std::map<int, uint64_t> written, read, ciphertext;
    std::map<int, int> writes;
    std::map<int, std::set<int32_t>> functions;  // TlsFunction of the calls that moved bytes
    std::vector<std::string> urls;
    int boundaries = 0;
    for (const Event& e : log.events) {
      if (!tcp.count(e.fd)) continue;
      // No system call on these sockets is data: all of it is ciphertext.
      EXPECT_FALSE(IsSendOp(e.op) && e.op != EventOp::kTlsWrite) << EventOpName(e.op);
      EXPECT_FALSE(IsRecvOp(e.op) && e.op != EventOp::kTlsRead) << EventOpName(e.op);
      if (e.op == EventOp::kTlsTransport && e.result > 0) ciphertext[e.fd] += uint64_t(e.result);
      if (e.op == EventOp::kTlsWrite || e.op == EventOp::kTlsRead) {
        if (e.result > 0) functions[e.fd].insert(e.arg);
        if (e.result > 0 && e.op == EventOp::kTlsWrite) {
          written[e.fd] += uint64_t(e.result);
          ++writes[e.fd];
          // The payload prefix is plaintext.
          ASSERT_NE(e.payload, kNone);
          const std::string& bytes = log.payloads[size_t(e.payload)];
          EXPECT_TRUE(bytes.starts_with("GET /tls/") || bytes.starts_with("HTTP/1.1 200")) << bytes;
        }
        if (e.result > 0 && e.op == EventOp::kTlsRead) read[e.fd] += uint64_t(e.result);
      }
      if (e.op == EventOp::kBoundary) {
        const Boundary& b = log.boundaries[size_t(e.boundary)];
        ++boundaries;
        for (const auto& [key, value] : b.attributes) {
          if (key == "http.url" && b.sent) urls.push_back(value);
        }
        // Offsets are plaintext offsets: a whole number of messages.
        EXPECT_EQ(b.offset % (b.request ? kRequestBytes : kResponseBytes), 0u) << b.offset;
      }
    }
    int client = *tcp.begin(), server = *tcp.rbegin();
    if (written[client] != 3 * kRequestBytes) std::swap(client, server);
    EXPECT_EQ(written[client], 3 * kRequestBytes);
    EXPECT_EQ(read[server], 3 * kRequestBytes);
    EXPECT_EQ(written[server], 3 * kResponseBytes);
    EXPECT_EQ(read[client], 3 * kResponseBytes);
    EXPECT_EQ(writes[client], 3);
    // The client uses `function`, the server SSL_read and SSL_write.
    EXPECT_EQ(functions[client], std::set<int32_t>{client_function});
    EXPECT_EQ(functions[server], std::set<int32_t>{wire::kTlsOpensslPlain});
    // Ciphertext is larger (handshake, record overhead) and is not counted as data.
    EXPECT_GT(ciphertext[client], written[client] + read[client]);
    EXPECT_GT(ciphertext[server], written[server] + read[server]);
    EXPECT_EQ(boundaries, 12);  // 3 requests and 3 responses, each seen at both ends
    EXPECT_EQ(urls, (std::vector<std::string>{"/tls/000", "/tls/001", "/tls/002"}));
    EXPECT_EQ(log.loss.tls_streams, 2u);
    EXPECT_EQ(log.loss.tls_opaque_streams, 0u);

    std::string summary = Reconcile();
    EXPECT_NE(summary.find("2 connection ends (1 paired, 0 half-traced), 6 messages, " +
                           std::to_string(3 * (kRequestBytes + kResponseBytes)) + " bytes"),
              std::string::npos)
        << summary;
    EXPECT_NE(summary.find("6 messages ended at protocol boundaries (http 6)"), std::string::npos)
        << summary;
  }

  fs::path dir_;
};

TEST_F(CaptureTlsTest, OpensslRecordCallsAreTheConnectionsData) {
  CheckHttpInsideTls(Run("openssl 3", "tls_probe openssl: 3 requests"), wire::kTlsOpensslPlain);
}

TEST_F(CaptureTlsTest, OpensslExRecordCallsAreTheConnectionsData) {
  CheckHttpInsideTls(Run("ex 3", "tls_probe ex: 3 requests"), wire::kTlsOpensslEx);
}

// The client is GnuTLS, the server OpenSSL: the client's records say GnuTLS.
TEST_F(CaptureTlsTest, GnutlsClientRecordCallsAreTheConnectionsData) {
  EventLog log = Run("gnutls 3", "tls_probe gnutls: 3 requests");
  std::set<int32_t> functions;
  for (const Event& e : log.events) {
    if (e.op == EventOp::kTlsWrite && e.result > 0) functions.insert(e.arg);
  }
  EXPECT_EQ(functions, (std::set<int32_t>{wire::kTlsOpensslPlain, wire::kTlsGnutls}));
  int gnutls_writes = 0;
  for (const Event& e : log.events)
    gnutls_writes += e.op == EventOp::kTlsWrite && e.arg == wire::kTlsGnutls;
  EXPECT_EQ(gnutls_writes, 3);
  EXPECT_EQ(log.loss.tls_streams, 2u);
  std::string summary = Reconcile();
  EXPECT_NE(summary.find("6 messages ended at protocol boundaries (http 6)"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("6 messages, " + std::to_string(3 * (kRequestBytes + kResponseBytes)) +
                         " bytes"),
            std::string::npos)
      << summary;
}

// TLS records on a socket with no TLS library call: counted, never parsed, and said.
TEST_F(CaptureTlsTest, TlsRecordsWithoutLibraryCallsAreReportedNotParsed) {
  EventLog log = Run("opaque", "tls_probe opaque: 1 exchange");
  for (const Event& e : log.events) EXPECT_NE(e.op, EventOp::kBoundary);
  EXPECT_EQ(log.loss.tls_streams, 0u);
  EXPECT_EQ(log.loss.tls_opaque_streams, 2u);  // the client's end and the server's
  std::string summary = Reconcile();
  EXPECT_NE(summary.find("2 streams of TLS ciphertext not read"), std::string::npos) << summary;
  EXPECT_NE(summary.find("note: 2 streams carried TLS records"), std::string::npos) << summary;
}

// The same after PostgreSQL's SSLRequest and 'S' in the clear (detected as postgres):
// those two are messages, the TLS records after them are counted, never parsed.
TEST_F(CaptureTlsTest, TlsRecordsAfterPostgresSslRequestAreReportedNotParsed) {
  EventLog log = Run("opaque-pg", "tls_probe opaque-pg: 1 exchange");
  std::vector<std::string> boundaries;
  for (const Event& e : log.events) {
    if (e.op != EventOp::kBoundary) continue;
    const Boundary& b = log.boundaries[size_t(e.boundary)];
    boundaries.push_back(fmt::format("{} {} {} {}", b.protocol, b.request ? "request" : "response",
                                     b.sent ? "sent" : "received", b.offset));
  }
  // SSLRequest (8 bytes) and 'S' (1 byte), each seen at both ends, in log order.
  EXPECT_EQ(boundaries, (std::vector<std::string>{"3 request sent 8", "3 request received 8",
                                                  "3 response sent 1", "3 response received 1"}));
  EXPECT_EQ(log.loss.tls_opaque_streams, 2u);
}

// Memory BIOs: the record calls have no socket, so nothing is logged for them.
TEST_F(CaptureTlsTest, RecordCallsWithoutSocketAreNotLogged) {
  EventLog log = Run("bio", "tls_probe bio: 1 requests");
  for (const Event& e : log.events) {
    EXPECT_NE(e.op, EventOp::kTlsRead);
    EXPECT_NE(e.op, EventOp::kTlsWrite);
    EXPECT_NE(e.op, EventOp::kTlsTransport);
  }
  EXPECT_EQ(log.loss.tls_streams, 0u);
}

// The preload library names SSL_* and gnutls_* but loads neither library.
TEST_F(CaptureTlsTest, ProgramWithoutTlsLibraryGetsNoneLoaded) {
  auto run = Shell(std::string(WEFT_BINARY) + " capture -o " + (dir_ / "capture").string() +
                   " -- /bin/cat /proc/self/maps");
  ASSERT_EQ(run.rc, 0) << run.output;
  EXPECT_NE(run.output.find("libweft-preload"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("libssl"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("libgnutls"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace weft::capture
