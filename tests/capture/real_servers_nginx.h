// What tests/capture/real_servers_nginx_test.cc and real_servers_witness_test.cc share:
// the testbed topology and nginx configuration that put nginx in front of the testbed as
// a reverse proxy, the testbed ids a message carries (for scoring only), and the count of
// request trees an algorithm got exactly right.
#pragma once

#include <cctype>
#include <cstdint>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "capture/real_servers.h"
#include "paths/path_set.h"
#include "trace/trace.h"

namespace weft::testing {

// ---------------------------------------------------------------------------------------
// nginx as a reverse proxy in front of the testbed: load client -> nginx -> web0 (HTTP,
// thread per connection) -> db0 (framed). The testbed's truth logs know the client's
// requests as calls to web0; the trace has each one twice, client -> nginx and nginx ->
// web0, and the X-Weft-Ids header nginx passes on names the same call in both.

inline constexpr const char* kProxiedTopology = R"toml(name = "nginx-front"

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
calls = [{ tier = "db", request = "query", count = "1-2" }]

[[tier]]
name = "db"
model = "thread-per-connection"
[[tier.server]]
port = @DB@

[[tier.request]]
name = "query"
before = "exp(50us)"
reply_bytes = 128
)toml";

// nginx (`binary`) in the foreground with its master process, the configuration `conf`,
// and its prefix and error log under `prefix`.
inline std::vector<std::string> NginxArgv(const std::string& binary, const std::string& conf,
                                          const std::string& prefix) {
  return {binary,
          "-c",
          conf,
          "-p",
          prefix,
          "-e",
          prefix + "/error.log",
          "-g",
          "daemon off; master_process on;"};
}

// One worker (so one process is "nginx" for every request), upstream connections kept
// alive (HTTP/1.1, no Connection header passed on), everything nginx writes under
// `prefix`. Started as root, the master forks the worker and the worker switches to
// nobody:nogroup (nginx's default user): its event log was created in the fork, while it
// was root, and it writes through that descriptor (docs/capture.md "Permissions").
inline constexpr const char* kNginxConf = R"conf(worker_processes 1;
pid @P@/nginx.pid;
error_log @P@/error.log notice;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path @P@/body;
  proxy_temp_path @P@/proxy;
  fastcgi_temp_path @P@/fastcgi;
  uwsgi_temp_path @P@/uwsgi;
  scgi_temp_path @P@/scgi;
  upstream front { server 127.0.0.1:@WEB@; keepalive 32; }
  server {
    listen 127.0.0.1:@PORT@;
    location / {
      proxy_pass http://front;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
)conf";

inline std::string Fill(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values) {
    for (size_t at; (at = text.find(key)) != std::string::npos;)
      text.replace(at, key.size(), value);
  }
  return text;
}

// The testbed ids a message carries (docs/testbed.md "Wire protocol"): from the
// X-Weft-Ids header of an HTTP message (any case), or from a frame's header. request 0: none found.
struct TestbedIds {
  uint64_t request = 0, call = 0;
};
inline TestbedIds IdsOf(const std::string& prefix) {
  TestbedIds ids;
  // Header names are case-insensitive; haproxy passes them on in lower case.
  std::string lower = prefix;
  for (char& ch : lower) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  size_t at = lower.find("x-weft-ids: ");
  if (at != std::string::npos) {
    std::istringstream fields(prefix.substr(at + 12, prefix.find("\r\n", at) - at - 12));
    int type = 0, request_type = 0;
    fields >> type >> request_type >> std::hex >> ids.request >> ids.call;
    return ids;
  }
  auto be64 = [&](size_t offset) {
    uint64_t v = 0;
    for (size_t i = 0; i < 8; ++i) v = v << 8 | static_cast<unsigned char>(prefix[offset + i]);
    return v;
  };
  if (prefix.size() >= 23 && prefix[4] >= 1 && prefix[4] <= 3) ids = {be64(7), be64(15)};
  return ids;
}

// Call ids per (kind, "sender>receiver"): the truth's by its tier names ("client>web0"), a
// trace's by the roles of its processes (ProxyRoles).
using CallsByPair = std::map<std::pair<MessageKind, std::string>, std::multiset<uint64_t>>;

inline CallsByPair TruthCalls(const Trace& truth) {
  CallsByPair calls;
  const TraceColumns& t = truth.columns();
  for (size_t i = 0; i < truth.size(); ++i) {
    std::string pair =
        std::string(truth.NodeName(t.sender[i])) + ">" + std::string(truth.NodeName(t.receiver[i]));
    calls[{t.kind[i], pair}].insert(
        std::stoull(std::string(truth.strings().Get(t.call_id[i])), nullptr, 16));
  }
  return calls;
}

// The roles of the processes in a run where clients call a front (a proxy) that calls
// web0, which calls db0: a process of a program in `clients` that sends a CALL takes that
// program's role ("weft" -> "client"), a process such a client calls is `front`, one the
// front calls is web0, one web0 calls is db0. With `app` (a program), a process of it the
// front calls (php-fpm behind nginx) or sends a message to (a CGI program through its
// pipes) is "app", and the one it calls web0. With `front_relays`, a process of the
// front's program that a front process sends a message to (kind MSG: a pipe) or calls is
// the front too (ncat hands each connection to a process it spawns through pipes; Apache's
// worker calls its mod_cgid daemon).
inline std::map<std::string, std::string> ProxyRoles(
    const Trace& trace, const std::map<std::string, std::string>& clients, const std::string& front,
    const std::string& app = "", bool front_relays = false) {
  const TraceColumns& c = trace.columns();
  auto node = [&](size_t i, bool sender) {
    return std::string(trace.NodeName(sender ? c.sender[i] : c.receiver[i]));
  };
  std::map<std::string, std::string> role;
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] != MessageKind::kCall) continue;
    auto client = clients.find(ProgramOf(node(i, true)));
    if (client == clients.end()) continue;
    role[node(i, true)] = client->second;
    role[node(i, false)] = front;
  }
  for (int pass = 0; pass < 3; ++pass) {
    for (size_t i = 0; i < trace.size(); ++i) {
      if (!role.count(node(i, true))) continue;
      const std::string from = role[node(i, true)];
      const bool to_app = !app.empty() && ProgramOf(node(i, false)) == app;
      const bool same_program = ProgramOf(node(i, false)) == ProgramOf(node(i, true));
      // Through a pipe, to another process that has no role yet (stunnel's front writes to
      // its own signal pipe, and the app behind it is stunnel too).
      if (c.kind[i] == MessageKind::kMessage && from == front && !role.count(node(i, false))) {
        if (to_app) role[node(i, false)] = "app";
        if (front_relays && same_program) role[node(i, false)] = front;
      }
      if (c.kind[i] != MessageKind::kCall) continue;
      if (from == front)
        role[node(i, false)] = to_app ? "app" : front_relays && same_program ? front : "web0";
      if (from == "app") role[node(i, false)] = "web0";
      if (from == "web0") role[node(i, false)] = "db0";
    }
  }
  return role;
}

// Each of the truth's client calls to web0 went client -> `front` and `front` -> web0 in the
// trace and came back the same way; web0's calls to db0 are the truth's; nothing else.
// With `back`, web0 was called from there (php-fpm behind nginx: "app").
inline void ExpectCallsAsInTruth(CallsByPair& trace_calls, CallsByPair& truth_calls,
                                 const std::string& front, std::string back = "") {
  if (back.empty()) back = front;
  const auto& client_web = truth_calls[{MessageKind::kCall, "client>web0"}];
  const auto& web_client = truth_calls[{MessageKind::kReturn, "web0>client"}];
  EXPECT_EQ((trace_calls[{MessageKind::kCall, "client>" + front}]), client_web);
  EXPECT_EQ((trace_calls[{MessageKind::kCall, back + ">web0"}]), client_web);
  EXPECT_EQ((trace_calls[{MessageKind::kReturn, "web0>" + back}]), web_client);
  EXPECT_EQ((trace_calls[{MessageKind::kReturn, front + ">client"}]), web_client);
  EXPECT_EQ((trace_calls[{MessageKind::kCall, "web0>db0"}]),
            (truth_calls[{MessageKind::kCall, "web0>db0"}]));
  EXPECT_EQ((trace_calls[{MessageKind::kReturn, "db0>web0"}]),
            (truth_calls[{MessageKind::kReturn, "db0>web0"}]));
  EXPECT_EQ(trace_calls.size(), 6u);
}

// Of the paths an algorithm found, those rooted at a client request whose tree holds
// exactly that request's messages: `http_messages` of HTTP (4: client <-> nginx and
// nginx <-> web0; 2 without a proxy) and web0 <-> db0 for each of its db calls, every one
// carrying the request's id. The first `show` trees that are not go to stderr, message by
// message (kind, sender > receiver, request id, send time); `wrong` collects their requests.
inline int ExactTrees(const Trace& trace, const PathSet& paths, const std::string& client,
                      const std::map<uint64_t, int>& db_calls_of_request, int http_messages = 4,
                      int show = 0, std::set<uint64_t>* wrong = nullptr) {
  const TraceColumns& c = trace.columns();
  int exact = 0;
  for (size_t i = 0; i < paths.instance_count(); ++i) {
    std::span<const MessageId> messages = paths.InstanceMessages(i);
    MessageId root = messages[0];
    if (c.kind[root.value()] != MessageKind::kCall ||
        trace.NodeName(c.sender[root.value()]) != client)
      continue;
    uint64_t request = IdsOf(PayloadPrefix(trace, root)).request;
    auto it = db_calls_of_request.find(request);
    bool same = it != db_calls_of_request.end() &&
                messages.size() == size_t(http_messages + 2 * it->second);
    for (MessageId m : messages) same = same && IdsOf(PayloadPrefix(trace, m)).request == request;
    exact += same;
    if (!same && wrong != nullptr) wrong->insert(request);
    if (!same && show-- > 0) {
      std::cerr << "tree of request " << std::hex << request << std::dec << " (" << messages.size()
                << " messages):\n";
      for (MessageId m : messages) {
        size_t k = m.value();
        std::cerr << "  " << MessageKindOp(c.kind[k]) << " " << trace.NodeName(c.sender[k]) << " > "
                  << trace.NodeName(c.receiver[k]) << " request " << std::hex
                  << IdsOf(PayloadPrefix(trace, m)).request << std::dec << " sent "
                  << c.send_time[k] << "\n";
      }
    }
  }
  return exact;
}

}  // namespace weft::testing
