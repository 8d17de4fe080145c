// nginx speaking HTTP/2 to h2load, with prior knowledge (h2c) and over TLS (ALPN h2, a
// certificate the test makes), as a reverse proxy in front of a testbed HTTP tier,
// everything under weft capture: the http2 processor's frame ends and header blocks (over
// TLS, in the plaintext of SSL_read and SSL_write) become one CALL and one RETURN per stream. The
// truth is by construction: every request has a URL of its own (/r/<client>/<k>), which nginx
// passes on upstream unchanged, so the h2 request for a URL is the parent of nginx's upstream call
// for it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>

#include "capture/real_servers.h"
#include "capture/real_servers_nginx.h"
#include "infer/choose.h"
#include "infer/fragment/fragment.h"
#include "infer/thread/thread.h"
#include "weft_cli.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using testing::Fill;
using testing::kNginxConf;
using testing::ProgramOf;
using testing::RealServersTest;
using testing::Weft;

constexpr const char* kWebTopology = R"toml(name = "h2-front"

[[tier]]
name = "web"
model = "thread-per-connection"
protocol = "http"
[[tier.server]]
port = @WEB@

[[tier.request]]
name = "page"
before = "exp(50us)"
reply_bytes = 512
)toml";

constexpr int kClients = 2;                            // h2load processes, one connection each
constexpr int kPerClient = 48;                         // requests each, 8 streams in flight
constexpr const char* kIds = "X-Weft-Ids: 1 0 1 1 0";  // the testbed's header; same for all

class NginxHttp2Test : public RealServersTest {
 protected:
  // Runs the clients; the exact trees of fragment and thread in *fragment, *thread.
  void Run(int* fragment_exact, int* thread_exact, int* requests);
  bool tls_ = false;  // `listen ... ssl http2` and https:// URLs (h2 by ALPN)
  // The front end: nginx, or nghttpx (Nghttpx below); its program name in the trace.
  std::string front_ = "nginx";
  bool refusing_backend_ = false;                   // nghttpx: a backend that refuses, beside web0
  AutoAlgorithm chosen_ = AutoAlgorithm::kLinking;  // auto's choice, and why
  std::string auto_says_;
  // fragment's requests followed to their upstream calls by URL, of them first-come guesses.
  int64_t followed_ = 0, guessed_ = 0;
};

// Of the paths an algorithm found, those rooted at an h2 request whose tree is exactly the
// request, the front end's upstream call with the same URL, that call's reply and the h2
// reply.
// The first `show` trees that are not exact are printed.
int ExactTrees(const Trace& trace, const PathSet& paths, const std::string& front_end,
               int show = 0) {
  const TraceColumns& c = trace.columns();
  auto url = [&](MessageId m) {
    std::string value;
    testing::AttributeOf(trace, m, "http.url", &value);
    return value;
  };
  auto program = [&](MessageId m, bool sender) {
    return ProgramOf(
        std::string(trace.NodeName(sender ? c.sender[m.value()] : c.receiver[m.value()])));
  };
  int exact = 0;
  for (size_t i = 0; i < paths.instance_count(); ++i) {
    std::span<const MessageId> messages = paths.InstanceMessages(i);
    MessageId root = messages[0];
    if (c.kind[root.value()] != MessageKind::kCall || program(root, true) != "h2load") continue;
    bool same = messages.size() == 4;
    int calls = 0, returns = 0;
    for (MessageId m : messages) {
      bool front = program(m, true) == "h2load" || program(m, false) == "h2load";
      if (c.kind[m.value()] == MessageKind::kCall) {
        ++calls;
        same = same && url(m) == url(root);
      } else if (c.kind[m.value()] == MessageKind::kReturn) {
        ++returns;
        // The reply on the same stream, or the upstream reply to the call of that URL.
        if (front) same = same && c.call_id[m.value()] == c.call_id[root.value()];
      }
    }
    same = same && calls == 2 && returns == 2;
    if (same) {
      StringId upstream;
      for (MessageId m : messages) {
        if (c.kind[m.value()] == MessageKind::kCall && m != root) upstream = c.call_id[m.value()];
      }
      for (MessageId m : messages) {
        if (c.kind[m.value()] == MessageKind::kReturn && program(m, true) != front_end)
          same = same && c.call_id[m.value()] == upstream;
      }
    }
    exact += same;
    if (!same && show-- > 0) {
      std::cerr << "tree of " << url(root) << " (" << messages.size() << " messages):\n";
      for (MessageId m : messages) {
        std::cerr << "  " << MessageKindOp(c.kind[m.value()]) << " "
                  << trace.NodeName(c.sender[m.value()]) << " > "
                  << trace.NodeName(c.receiver[m.value()]) << " " << url(m) << " sent "
                  << c.send_time[m.value()] << "\n";
      }
    }
  }
  return exact;
}

// Without isolation nginx reads the frames of up to 8 streams in one read and works on
// them in one fragment: by times every upstream call is the read's last request's work
// (0-11 of 96 trees exact before fragment followed them). Each upstream call carries its
// request's URL, and fragment follows each request to it: every tree exact, with no guess
// (every URL is different), and auto, which keeps fragment, says so.
TEST_F(NginxHttp2Test, EveryStreamIsOneCallAndReturn) {
  if (!Installed("/usr/sbin/nginx") || !Installed("/usr/bin/h2load"))
    GTEST_SKIP() << "nginx or h2load not installed (scripts/install-deps)";
  int fragment = 0, thread = 0, requests = 0;
  Run(&fragment, &thread, &requests);
  EXPECT_EQ(fragment, requests);
  EXPECT_EQ(guessed_, 0);
  EXPECT_EQ(chosen_, AutoAlgorithm::kFragment) << auto_says_;
}

// With isolation every read stops at a frame end, so nginx takes one request's HEADERS per
// read and the upstream call it makes next is that request's.
TEST_F(NginxHttp2Test, IsolationCutsReadsAtFrames) {
  if (!Installed("/usr/sbin/nginx") || !Installed("/usr/bin/h2load"))
    GTEST_SKIP() << "nginx or h2load not installed (scripts/install-deps)";
  isolate_ = true;
  int fragment = 0, thread = 0, requests = 0;
  Run(&fragment, &thread, &requests);
  EXPECT_EQ(fragment, requests);
}

// The same over TLS: nginx terminates it, h2load negotiates h2 by ALPN; the processor
// detects HTTP/2 in the plaintext (the client's preface, the server's first SETTINGS).
TEST_F(NginxHttp2Test, TlsEveryStreamIsOneCallAndReturn) {
  if (!Installed("/usr/sbin/nginx") || !Installed("/usr/bin/h2load") ||
      !Installed("/usr/bin/openssl"))
    GTEST_SKIP() << "nginx, h2load or openssl not installed (scripts/install-deps)";
  tls_ = true;
  int fragment = 0, thread = 0, requests = 0;
  Run(&fragment, &thread, &requests);
  EXPECT_EQ(fragment, requests);
  EXPECT_EQ(guessed_, 0);
  EXPECT_EQ(chosen_, AutoAlgorithm::kFragment) << auto_says_;
}

// Isolation over TLS: SSL_read stops at a frame end, and the read after it in the same turn
// says SSL_ERROR_WANT_READ, so nginx (which reads until then) takes one frame per turn.
TEST_F(NginxHttp2Test, TlsIsolationCutsReadsAtFrames) {
  if (!Installed("/usr/sbin/nginx") || !Installed("/usr/bin/h2load") ||
      !Installed("/usr/bin/openssl"))
    GTEST_SKIP() << "nginx, h2load or openssl not installed (scripts/install-deps)";
  tls_ = true;
  isolate_ = true;
  int fragment = 0, thread = 0, requests = 0;
  Run(&fragment, &thread, &requests);
  EXPECT_EQ(fragment, requests);
}

void NginxHttp2Test::Run(int* fragment_exact, int* thread_exact, int* requests) {
  auto [web, front] = testing::FreePorts<2>();
  ASSERT_TRUE(web != 0 && front != 0);
  std::string topology = Path("topology.toml"), truth_dir = Path("truth"), prefix = Path("nginx");
  fs::create_directories(truth_dir);
  fs::create_directories(prefix);
  std::ofstream(topology) << Fill(kWebTopology, {{"@WEB@", std::to_string(web)}});
  std::string conf_text =
      Fill(kNginxConf,
           {{"@P@", prefix}, {"@WEB@", std::to_string(web)}, {"@PORT@", std::to_string(front)}});
  std::string listen = "listen 127.0.0.1:" + std::to_string(front) + ";";
  std::string tls_lines;
  if (tls_) {
    auto [rc, made] = testing::Shell(
        "/usr/bin/openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -keyout " +
        prefix + "/key.pem -out " + prefix + "/cert.pem");
    ASSERT_EQ(rc, 0) << made;
    tls_lines = " ssl http2; ssl_certificate " + prefix + "/cert.pem; ssl_certificate_key " +
                prefix + "/key.pem;";
  }
  conf_text.replace(
      conf_text.find(listen), listen.size(),
      "listen 127.0.0.1:" + std::to_string(front) + (tls_ ? tls_lines : std::string(" http2;")));
  std::string conf = prefix + "/nginx.conf";
  std::ofstream(conf) << conf_text;
  pid_t web0 = StartCaptured("web0", {WEFT_TESTBED_SERVER, topology, "web0", truth_dir});
  std::vector<std::string> argv = testing::NginxArgv("/usr/sbin/nginx", conf, prefix);
  if (front_ == "nghttpx") {
    // Two worker threads, TLS with the same certificate (or no-tls: h2c by prior
    // knowledge), HTTP/1.1 to web0 over connections each worker keeps.
    argv = {"/usr/sbin/nghttpx",
            "--conf=/dev/null",
            "--frontend=127.0.0.1," + std::to_string(front) + (tls_ ? "" : ";no-tls"),
            "--backend=127.0.0.1," + std::to_string(web),
            "--workers=2",
            "--errorlog-file=" + prefix + "/error.log",
            "--accesslog-file=/dev/null",
            "--no-ocsp",
            "--pid-file=" + prefix + "/nghttpx.pid"};
    if (tls_) argv.insert(argv.end(), {prefix + "/key.pem", prefix + "/cert.pem"});
    // A second backend where nothing listens (a port found free): nghttpx tries it first
    // for some requests, is refused, and fails over to web0.
    if (refusing_backend_)
      argv.push_back("--backend=127.0.0.1," + std::to_string(testing::FreePorts<1>()[0]));
  }
  pid_t nginx = StartCaptured(front_, argv);
  ASSERT_TRUE(testing::WaitForPort(web) && testing::WaitForPort(front))
      << testing::ReadFile(prefix + "/error.log");

  // Two h2load clients at once, one connection each with 8 streams in flight, each with
  // URLs of its own (h2load -i starts every connection at the file's first URL).
  std::string command = "sh -c '";
  for (int k = 0; k < kClients; ++k) {
    std::string uris = Path("uris" + std::to_string(k));
    std::ofstream out(uris);
    for (int i = 1; i <= kPerClient; ++i)
      out << (tls_ ? "https" : "http") << "://127.0.0.1:" << front << "/r/" << k << "/" << i
          << "\n";
    command += "/usr/bin/h2load -c 1 -m 8 -n " + std::to_string(kPerClient) + " -i " + uris +
               " -H \"" + kIds + "\" > " + Path("h2load" + std::to_string(k) + ".out") + " 2>&1 & ";
  }
  command += "wait'";
  auto load = Weft(Capture("client", command));
  ASSERT_EQ(load.rc, 0) << load.output;
  for (pid_t pid : {nginx, web0}) {
    int status = background_->Stop(pid, SIGTERM);
    EXPECT_TRUE(WIFEXITED(status)) << "pid " << pid << " status " << status;
  }
  int done = 0;
  for (int k = 0; k < kClients; ++k) {
    std::string out = testing::ReadFile(Path("h2load" + std::to_string(k) + ".out"));
    std::smatch match;
    ASSERT_TRUE(std::regex_search(
        out, match, std::regex(R"(requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded)")))
        << out;
    EXPECT_EQ(match[1], match[2]) << out;
    done += std::stoi(match[2]);
  }
  ASSERT_GT(done, 0);

  Trace trace = Reconcile();
  const TraceColumns& c = trace.columns();
  // Every h2 request h2load completed is one CALL with its URL, its response the RETURN
  // with the same call id and status 200; nginx's upstream calls carry the same URLs.
  std::map<std::string, int> h2_urls, upstream_urls;
  std::map<std::string, std::string> url_of_call;
  std::set<std::string> h2_returns;
  for (size_t i = 0; i < trace.size(); ++i) {
    MessageId m{uint32_t(i)};
    std::string from = ProgramOf(std::string(trace.NodeName(c.sender[i])));
    std::string to = ProgramOf(std::string(trace.NodeName(c.receiver[i])));
    std::string url, status, protocol;
    testing::AttributeOf(trace, m, "http.url", &url);
    testing::AttributeOf(trace, m, "http.status", &status);
    testing::AttributeOf(trace, m, "protocol", &protocol);
    std::string id(trace.strings().Get(c.call_id[i]));
    if (from == "h2load" && to == front_) {
      ASSERT_EQ(c.kind[i], MessageKind::kCall);
      EXPECT_EQ(protocol, "http2");
      ++h2_urls[url];
      url_of_call[id] = url;
    } else if (from == front_ && to == "h2load") {
      ASSERT_EQ(c.kind[i], MessageKind::kReturn);
      EXPECT_EQ(protocol, "http2");
      EXPECT_EQ(status, "200");
      EXPECT_TRUE(h2_returns.insert(id).second) << id;
    } else if (from == front_ && to == "weft-testbed-server" && c.kind[i] == MessageKind::kCall) {
      ++upstream_urls[url];
    }
    if (c.kind[i] != MessageKind::kMessage) {
      EXPECT_NE(c.send_time[i], kNoTime) << i;
      EXPECT_NE(c.recv_time[i], kNoTime) << i;
    }
  }
  EXPECT_EQ(h2_urls.size(), size_t(done));
  for (const auto& [url, n] : h2_urls) {
    EXPECT_EQ(n, 1) << url;
    EXPECT_EQ(upstream_urls[url], 1) << url;
  }
  EXPECT_EQ(h2_returns.size(), size_t(done));
  for (const std::string& id : h2_returns) EXPECT_TRUE(url_of_call.count(id)) << id;

  Result<FragmentInference> fragment = InferFragment(trace);
  Result<ThreadInference> thread = InferThread(trace);
  ASSERT_TRUE(fragment.ok() && thread.ok());
  *fragment_exact = ExactTrees(trace, fragment->paths, front_, isolate_ ? 4 : 0);
  *thread_exact = ExactTrees(trace, thread->paths, front_);
  *requests = done;
  followed_ =
      fragment->counters.set_aside_forwards_found + fragment->counters.shared_read_forwards_found;
  guessed_ = fragment->counters.set_aside_forwards_guessed;
  Result<AutoInference> decided = ChooseAlgorithm(trace);
  ASSERT_TRUE(decided.ok());
  chosen_ = decided->choice.algorithm;
  auto_says_ = decided->choice.Describe();
  std::cerr << front_ << ": " << done << " h2 requests; exact trees: fragment " << *fragment_exact
            << ", thread " << *thread_exact << "; fragment followed " << followed_
            << " requests to their upstream calls by URL (" << guessed_
            << " first-come guesses)\nauto: " << auto_says_ << "\n";
}

// nghttpx (nghttp2's proxy, its own configuration only: Debian's names a backend on port
// 80 beside ours) in nginx's place: two worker threads, each an event loop with
// connections of its own to web0, a connection per upstream request. With isolation each
// read brings one HEADERS frame and fragment, which auto picks, gets every tree, in h2c
// and over TLS. (With Debian's configuration nghttpx first tried port 80 for some
// requests, and the retry's connect, made in the turn of the next stream's frame, took
// that request's call into the next one's tree: 92-96 of 96 exact. docs/protocols.md.)
TEST_F(NginxHttp2Test, NghttpxEveryStreamsTreeIsExactWithIsolation) {
  if (!Installed("/usr/sbin/nghttpx") || !Installed("/usr/bin/h2load"))
    GTEST_SKIP() << "nghttpx or h2load not installed (scripts/install-deps)";
  front_ = "nghttpx";
  isolate_ = true;
  int fragment = 0, thread = 0, requests = 0;
  Run(&fragment, &thread, &requests);
  EXPECT_EQ(fragment, requests);
  EXPECT_EQ(chosen_, AutoAlgorithm::kFragment) << auto_says_;
}

TEST_F(NginxHttp2Test, NghttpxTlsEveryStreamsTreeIsExactWithIsolation) {
  if (!Installed("/usr/sbin/nghttpx") || !Installed("/usr/bin/h2load") ||
      !Installed("/usr/bin/openssl"))
    GTEST_SKIP() << "nghttpx, h2load or openssl not installed (scripts/install-deps)";
  front_ = "nghttpx";
  tls_ = true;
  isolate_ = true;
  int fragment = 0, thread = 0, requests = 0;
  Run(&fragment, &thread, &requests);
  EXPECT_EQ(fragment, requests);
  EXPECT_EQ(chosen_, AutoAlgorithm::kFragment) << auto_says_;
}

// A refusing backend beside web0: nghttpx tries it for some streams, is refused, and
// reconnects to web0, sometimes in the turn of the next stream's frame. Reconcile dates the
// retry's connect from the refused attempt, and fragment gives the call to its own stream.
TEST_F(NginxHttp2Test, NghttpxFailoverEveryStreamsTreeIsExact) {
  if (!Installed("/usr/sbin/nghttpx") || !Installed("/usr/bin/h2load"))
    GTEST_SKIP() << "nghttpx or h2load not installed (scripts/install-deps)";
  front_ = "nghttpx";
  isolate_ = true;
  refusing_backend_ = true;
  int fragment = 0, thread = 0, requests = 0;
  Run(&fragment, &thread, &requests);
  EXPECT_EQ(fragment, requests);
  EXPECT_NE(reconcile_output_.find("connects dated from the failed attempt they retried"),
            std::string::npos)
      << reconcile_output_;
}

// Without isolation a read brings the HEADERS of several streams, and by times their
// upstream calls are one request's work (fragment got under half the trees, and auto said
// to recapture with isolation); each call carries its request's URL, and fragment follows
// each request to it, and auto says so.
TEST_F(NginxHttp2Test, NghttpxWithoutIsolationFollowsEachStreamByItsUrl) {
  if (!Installed("/usr/sbin/nghttpx") || !Installed("/usr/bin/h2load"))
    GTEST_SKIP() << "nghttpx or h2load not installed (scripts/install-deps)";
  front_ = "nghttpx";
  int fragment = 0, thread = 0, requests = 0;
  Run(&fragment, &thread, &requests);
  EXPECT_EQ(fragment, requests);
  EXPECT_EQ(guessed_, 0);
  EXPECT_NE(auto_says_.find("were followed to the call that forwarded them"), std::string::npos)
      << auto_says_;
}

// HTTP/2 by upgrade: nghttp -u sends its first request as HTTP/1.1 with Upgrade: h2c, a
// python3-h2 server (tests/capture/h2c_upgrade_server.py: nginx cannot upgrade, and
// Debian packages no server that does) answers 101 and goes on in HTTP/2, the upgraded
// request being stream 1; the next requests are streams of their own. Each request is
// one CALL with its URL, answered by one RETURN with the same call id; the 101 a MSG.
TEST_F(NginxHttp2Test, H2cUpgradeIsFollowed) {
  if (!Installed("/usr/bin/nghttp") ||
      testing::Shell("/usr/bin/python3 -c 'import h2.connection'").rc != 0)
    GTEST_SKIP() << "nghttp or python3-h2 not installed (scripts/install-deps)";
  auto [port] = testing::FreePorts<1>();
  ASSERT_NE(port, 0);
  // Two connections: WaitForPort's probe and nghttp's; then the server exits as programs
  // do, its log whole (a SIGTERM while it wrote its last replies lost them once in 20 runs).
  pid_t server =
      StartCaptured("server", {"/usr/bin/python3", H2C_UPGRADE_SERVER, std::to_string(port), "2"});
  ASSERT_TRUE(testing::WaitForPort(port));
  std::string base = "http://127.0.0.1:" + std::to_string(port);
  auto load = Weft(Capture(
      "client", "/usr/bin/nghttp -u " + base + "/up/1 " + base + "/two " + base + "/three"));
  ASSERT_EQ(load.rc, 0) << load.output;
  int ended = background_->Stop(server, 0);  // no signal: it ends by itself
  EXPECT_TRUE(WIFEXITED(ended) && WEXITSTATUS(ended) == 0) << "status " << ended;

  Trace trace = Reconcile();
  const TraceColumns& c = trace.columns();
  std::map<std::string, std::string> url_of_call, protocol_of_call;
  std::map<std::string, std::string> status_of_return;
  int switching = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    MessageId m{uint32_t(i)};
    if (ProgramOf(std::string(trace.NodeName(c.sender[i]))) != "nghttp" &&
        ProgramOf(std::string(trace.NodeName(c.receiver[i]))) != "nghttp")
      continue;
    std::string url, status, protocol, id(trace.strings().Get(c.call_id[i]));
    testing::AttributeOf(trace, m, "http.url", &url);
    testing::AttributeOf(trace, m, "http.status", &status);
    testing::AttributeOf(trace, m, "protocol", &protocol);
    if (c.kind[i] == MessageKind::kCall) {
      EXPECT_TRUE(url_of_call.emplace(id, url).second) << id;
      protocol_of_call[id] = protocol;
    } else if (c.kind[i] == MessageKind::kReturn) {
      EXPECT_TRUE(status_of_return.emplace(id, status).second) << id;
    } else {
      EXPECT_EQ(status, "101");
      ++switching;
    }
  }
  EXPECT_EQ(switching, 1);
  ASSERT_EQ(url_of_call.size(), 3u);
  std::set<std::string> urls;
  for (const auto& [id, url] : url_of_call) {
    urls.insert(url);
    EXPECT_EQ(status_of_return[id], "200") << id << " " << url;
    // The upgraded request is HTTP/1.1 and stream 1's; the others HTTP/2's.
    EXPECT_EQ(url == "/up/1", id.ends_with(".w1")) << id << " " << url;
    EXPECT_EQ(protocol_of_call[id], url == "/up/1" ? "http" : "http2") << id;
  }
  EXPECT_EQ(urls, (std::set<std::string>{"/up/1", "/two", "/three"}));
  EXPECT_EQ(status_of_return.size(), 3u);
}

}  // namespace
}  // namespace weft
