#include "testbed/truth.h"

#include <absl/container/flat_hash_map.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/file.h"
#include "testbed/wire.h"

namespace weft::testbed {
namespace {

struct Side {
  bool seen = false;
  TimeNs time = kNoTime;
  uint32_t thread = 0;
  std::string node, local, peer;
  int64_t bytes = -1;
};

struct Msg {
  Side send, recv;
  uint64_t request = 0;
  uint64_t parent_call = 0;
  std::string name;
  bool error = false;
};

struct Calls {
  absl::flat_hash_map<uint64_t, Msg> call, reply;  // by call id
};

Status ParseLog(const std::string& path, Calls& calls) {
  WEFT_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  // A log cut short by a killed process ends in a partial line: read up to the last whole one.
  text.resize(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
  std::istringstream in(text);
  std::string line, node;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    if (line[0] == '#') {
      size_t p = line.find("node=");
      if (p != std::string::npos) node = line.substr(p + 5, line.find(' ', p) - p - 5);
      continue;
    }
    std::istringstream f(line);
    TimeNs when = 0;
    uint32_t tid = 0;
    char dir = 0;
    int type = 0;
    std::string local, peer, name;
    uint64_t request = 0, call = 0, parent = 0;
    int64_t bytes = 0;
    f >> when >> tid >> dir >> type >> local >> peer >> std::hex >> request >> call >> parent >>
        std::dec >> bytes >> name;
    if (!f || (dir != 'S' && dir != 'R') || type < 1 || type > 3 || node.empty()) {
      return Status::Corruption("{}:{}: malformed truth record", path, number);
    }
    Msg& m = type == 1 ? calls.call[call] : calls.reply[call];
    Side& side = dir == 'S' ? m.send : m.recv;
    if (side.seen) continue;  // a retransmitted id: the first record wins
    side = {true, when, tid, node, local, peer, bytes};
    m.request = request;
    if (type == 1) {
      m.parent_call = parent;
      if (name != "-") m.name = name;
    }
    m.error = type == 3;
  }
  return Status::Ok();
}

}  // namespace

Result<Trace> BuildTruthTrace(const std::string& dir) {
  std::vector<std::string> logs;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".truth") logs.push_back(entry.path().string());
  }
  if (ec) return Status::IoError("{}: {}", dir, ec.message());
  if (logs.empty()) return Status::NotFound("{} holds no .truth logs", dir);
  std::sort(logs.begin(), logs.end());
  Calls calls;
  for (const std::string& log : logs) WEFT_RETURN_IF_ERROR(ParseLog(log, calls));

  TraceBuilder b;
  StringId request_key = b.String("testbed.request");
  StringId error_key = b.String("testbed.error");
  StringId one = b.String("1");
  absl::flat_hash_map<uint64_t, uint32_t> path_of, call_row;
  auto add = [&](uint64_t call_id, const Msg& m, MessageKind kind) {
    MessageRecord r;
    r.kind = kind;
    r.send_time = m.send.time;
    r.recv_time = m.recv.time;
    // An unlogged side (a process killed before it logged) is named by its endpoint.
    r.sender = b.Node(m.send.seen ? m.send.node : m.recv.peer);
    r.receiver = b.Node(m.recv.seen ? m.recv.node : m.send.peer);
    r.sender_thread = ThreadId(m.send.thread);
    r.receiver_thread = ThreadId(m.recv.thread);
    r.sender_endpoint = b.String(m.send.seen ? m.send.local : m.recv.peer);
    r.receiver_endpoint = b.String(m.recv.seen ? m.recv.local : m.send.peer);
    r.bytes = m.send.seen ? m.send.bytes : m.recv.bytes;
    r.call_id = b.String(fmt::format("{:x}", call_id));
    auto [it, fresh] = path_of.try_emplace(m.request, uint32_t(path_of.size()));
    r.truth_path = PathId(it->second);
    return b.Add(r);
  };
  // Ordered by call id so that the trace is the same however the logs were read.
  std::map<uint64_t, const Msg*> ordered;
  for (const auto& [id, m] : calls.call) ordered[id] = &m;
  for (const auto& [id, m] : ordered) {
    uint32_t row = add(id, *m, MessageKind::kCall);
    call_row[id] = row;
    if (!m->name.empty()) b.AddAttribute(row, request_key, b.String(m->name));
  }
  for (const auto& [id, m] : ordered) {
    if (m->parent_call == 0) continue;
    auto p = call_row.find(m->parent_call);
    if (p != call_row.end()) b.SetParent(call_row[id], p->second);
  }
  std::map<uint64_t, const Msg*> replies;
  for (const auto& [id, m] : calls.reply) replies[id] = &m;
  for (const auto& [id, m] : replies) {
    uint32_t row = add(id, *m, MessageKind::kReturn);
    auto c = call_row.find(id);
    if (c != call_row.end()) b.SetParent(row, c->second);
    if (m->error) b.AddAttribute(row, error_key, one);
  }
  return std::move(b).Finish();
}

Result<TruthCheck> CheckTruth(const Trace& trace, const Topology& topo, bool complete) {
  const TraceColumns& col = trace.columns();
  std::map<std::string, std::pair<int, int>, std::less<>> server_of;  // node -> (tier, server)
  for (size_t t = 0; t < topo.tiers.size(); ++t) {
    for (size_t i = 0; i < topo.tiers[t].servers.size(); ++i) {
      server_of[topo.tiers[t].servers[i].name] = {int(t), int(i)};
    }
  }
  std::vector<std::vector<uint32_t>> children(trace.size());
  absl::flat_hash_map<uint32_t, std::vector<uint32_t>> roots;  // path -> root messages
  for (uint32_t m = 0; m < trace.size(); ++m) {
    if (!col.truth_path[m].valid()) return Status::Corruption("message {} has no path", m);
    MessageId p = col.truth_parent[m];
    if (p.valid()) {
      if (col.truth_path[p.value()] != col.truth_path[m]) {
        return Status::Corruption("message {} and its parent {} are on different paths", m,
                                  p.value());
      }
      children[p.value()].push_back(m);
    } else {
      roots[col.truth_path[m].value()].push_back(m);
    }
  }
  auto attr = [&](uint32_t m, std::string_view key) -> std::string_view {
    for (const Attribute& a : trace.AttributesOf(MessageId(m))) {
      if (trace.strings().Get(a.key) == key) return trace.strings().Get(a.value);
    }
    return {};
  };
  TruthCheck check;
  check.requests = roots.size();
  for (const auto& [path, rs] : roots) {
    if (rs.size() != 1) {
      return Status::Corruption("path {} has {} roots, not one tree", path, rs.size());
    }
    uint32_t root = rs[0];
    if (col.kind[root] != MessageKind::kCall || trace.NodeName(col.sender[root]) != "client") {
      return Status::Corruption("path {} is not rooted at a CALL from the client", path);
    }
    bool ok_tree = true;
    bool root_error = false, root_answered = false;
    std::vector<uint32_t> stack{root};
    while (!stack.empty()) {
      uint32_t m = stack.back();
      stack.pop_back();
      if (col.kind[m] != MessageKind::kCall) {
        if (!children[m].empty())
          return Status::Corruption("a RETURN has children (path {})", path);
        continue;
      }
      uint32_t returns = 0;
      bool error = false;
      std::map<std::pair<int, std::string>, uint32_t> nested;
      for (uint32_t c : children[m]) {
        stack.push_back(c);
        if (col.kind[c] == MessageKind::kReturn) {
          ++returns;
          error |= attr(c, "testbed.error") == "1";
        } else if (col.kind[c] == MessageKind::kCall) {
          auto s = server_of.find(trace.NodeName(col.receiver[c]));
          int tier = s == server_of.end() ? -1 : s->second.first;
          ++nested[{tier, std::string(attr(c, "testbed.request"))}];
        }
      }
      if (returns > 1 || (complete && returns == 0)) {
        return Status::Corruption("a CALL of path {} has {} RETURNs", path, returns);
      }
      if (m == root) {
        root_answered = returns == 1;
        root_error = error;
      }
      if (returns == 0 || error) {
        ok_tree = false;
        continue;
      }
      auto s = server_of.find(trace.NodeName(col.receiver[m]));
      if (s == server_of.end())
        return Status::Corruption("a CALL of path {} goes to no server", path);
      const Tier& tier = topo.tiers[s->second.first];
      std::string_view name = attr(m, "testbed.request");
      const RequestType* rt = nullptr;
      for (const RequestType& r : tier.requests) rt = r.name == name ? &r : rt;
      if (!rt) return Status::Corruption("path {}: {} has no request '{}'", path, tier.name, name);
      std::map<std::pair<int, std::string>, std::pair<uint32_t, uint32_t>> allowed;
      for (const CallSpec& spec : rt->calls) {
        auto& range = allowed[{spec.tier, topo.tiers[spec.tier].requests[spec.request].name}];
        range.first += spec.min_count;
        range.second += spec.max_count;
      }
      for (const auto& [key, n] : nested) {
        auto a = allowed.find(key);
        if (a == allowed.end() || n < a->second.first || n > a->second.second) {
          return Status::Corruption("path {}: {} '{}' made {} calls to {} '{}', not allowed", path,
                                    tier.name, name, n,
                                    key.first >= 0 ? topo.tiers[key.first].name : "?", key.second);
        }
      }
      for (const auto& [key, range] : allowed) {
        if (range.first > 0 && !nested.count(key)) {
          return Status::Corruption("path {}: {} '{}' made no calls to {} '{}'", path, tier.name,
                                    name, topo.tiers[key.first].name, key.second);
        }
      }
    }
    check.answered += root_answered;
    check.errors += root_error;
    check.shaped += ok_tree;
  }
  return check;
}

std::vector<ConnectionUse> CallsInFlight(const Trace& trace) {
  const TraceColumns& col = trace.columns();
  auto text = [&](StringId id) {
    return id.valid() ? trace.strings().Get(id) : std::string_view();
  };
  // A connection is its two endpoints as the caller sees them: (caller's, callee's).
  struct Event {
    TimeNs time;
    int delta;  // -1 sorts first: a reply at the instant of a send frees its slot first
    bool operator<(const Event& o) const {
      return time != o.time ? time < o.time : delta < o.delta;
    }
  };
  std::map<std::pair<std::string_view, std::string_view>, std::vector<Event>> events;
  std::map<std::pair<std::string_view, std::string_view>, std::pair<NodeId, NodeId>> nodes;
  for (uint32_t m = 0; m < trace.size(); ++m) {
    bool call = col.kind[m] == MessageKind::kCall;
    if (!call && col.kind[m] != MessageKind::kReturn) continue;
    // A CALL goes out from the caller's endpoint, its RETURN comes back to it.
    std::string_view caller = text(call ? col.sender_endpoint[m] : col.receiver_endpoint[m]);
    std::string_view callee = text(call ? col.receiver_endpoint[m] : col.sender_endpoint[m]);
    TimeNs at = call ? col.send_time[m] : col.recv_time[m];
    if (caller.empty() || callee.empty() || at == kNoTime) continue;
    events[{caller, callee}].push_back({at, call ? 1 : -1});
    if (call) nodes[{caller, callee}] = {col.sender[m], col.receiver[m]};
  }
  std::map<std::pair<std::string, std::string>, ConnectionUse> by_nodes;
  for (auto& [conn, ev] : events) {
    auto n = nodes.find(conn);
    if (n == nodes.end()) continue;  // replies to calls never logged as sent
    std::sort(ev.begin(), ev.end());
    int in_flight = 0, most = 0;
    for (const Event& e : ev) most = std::max(most, in_flight += e.delta);
    std::string caller(trace.NodeName(n->second.first)), callee(trace.NodeName(n->second.second));
    ConnectionUse& use = by_nodes[{caller, callee}];
    use.caller = caller;
    use.callee = callee;
    ++use.connections;
    use.max_in_flight = std::max(use.max_in_flight, uint32_t(most));
  }
  std::vector<ConnectionUse> out;
  for (auto& [key, use] : by_nodes) out.push_back(std::move(use));
  return out;
}

}  // namespace weft::testbed
