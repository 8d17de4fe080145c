// TOML -> Topology. toml++ throws on syntax errors; this file is where that becomes a
// Status naming the file and line.
#include "testbed/topology.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "core/file.h"

namespace weft::testbed {
namespace {

int LineOf(const toml::node& node) { return int(node.source().begin.line); }

struct PendingCall {
  std::string tier, request;
  int line = 0;
};

class Parser {
 public:
  explicit Parser(std::string_view source) : source_(source) {}
  Result<Topology> Parse(const toml::table& root);

 private:
  template <typename... Args>
  Status Error(int line, fmt::format_string<Args...> f, Args&&... args) const {
    return Status::InvalidArgument("{}:{}: {}", source_, line,
                                   fmt::format(f, std::forward<Args>(args)...));
  }
  Result<Distribution> Dist(const toml::table& t, std::string_view key) const;
  Result<uint32_t> Count(const toml::table& t, std::string_view key, uint32_t def) const;
  Result<Tier> ParseTier(const toml::table& t);
  Result<ServerSpec> ParseServer(const toml::table& t, const ServerSpec& defaults) const;
  Status ParseRequest(const toml::table& t, Tier& tier);

  std::string_view source_;
  // Calls name tiers and requests that may be defined later; resolved after all tiers.
  std::vector<std::vector<std::vector<PendingCall>>> pending_;  // [tier][request][call]
};

Result<Distribution> Parser::Dist(const toml::table& t, std::string_view key) const {
  const toml::node* n = t.get(key);
  if (!n) return Distribution{};
  auto s = n->value<std::string>();
  if (!s) return Error(LineOf(*n), "{} must be a string such as \"exp(2ms)\"", key);
  Result<Distribution> d = ParseDistribution(*s);
  if (!d.ok()) return Error(LineOf(*n), "{}: {}", key, d.status().message());
  return d;
}

Result<uint32_t> Parser::Count(const toml::table& t, std::string_view key, uint32_t def) const {
  const toml::node* n = t.get(key);
  if (!n) return def;
  auto v = n->value<int64_t>();
  if (!v || *v < 0 || *v > 1'000'000) {
    return Error(LineOf(*n), "{} must be an integer from 0 to 1000000", key);
  }
  return uint32_t(*v);
}

Result<ServerSpec> Parser::ParseServer(const toml::table& t, const ServerSpec& defaults) const {
  ServerSpec s = defaults;
  if (const toml::node* n = t.get("model")) {
    auto name = n->value<std::string>();
    bool found = false;
    for (ThreadingModel m :
         {ThreadingModel::kThreadPerConnection, ThreadingModel::kWorkerPool,
          ThreadingModel::kHandoff, ThreadingModel::kStaged, ThreadingModel::kEventLoop,
          ThreadingModel::kFork, ThreadingModel::kSpawn}) {
      if (name && *name == ThreadingModelName(m)) {
        s.model = m;
        found = true;
      }
    }
    if (!found) {
      return Error(LineOf(*n),
                   "model must be thread-per-connection, worker-pool, handoff, staged, event-loop, "
                   "fork or spawn");
    }
  }
  WEFT_ASSIGN_OR_RETURN(uint32_t port, Count(t, "port", s.port));
  if (port > 65535) return Error(LineOf(*t.get("port")), "port must be below 65536");
  s.port = uint16_t(port);
  WEFT_ASSIGN_OR_RETURN(s.workers, Count(t, "workers", s.workers));
  WEFT_ASSIGN_OR_RETURN(s.queue_capacity, Count(t, "queue", s.queue_capacity));
  if (s.workers == 0) return Error(LineOf(t), "workers must be at least 1");
  if (s.queue_capacity == 0) return Error(LineOf(t), "queue must be at least 1");
  return s;
}

Status Parser::ParseRequest(const toml::table& t, Tier& tier) {
  RequestType r;
  auto name = t["name"].value<std::string>();
  if (!name || name->empty()) return Error(LineOf(t), "a request needs a name");
  r.name = *name;
  if (auto w = t["weight"].value<double>()) r.weight = *w;
  if (!(r.weight >= 0)) return Error(LineOf(t), "weight must not be negative");
  WEFT_ASSIGN_OR_RETURN(r.before, Dist(t, "before"));
  WEFT_ASSIGN_OR_RETURN(r.between, Dist(t, "between"));
  WEFT_ASSIGN_OR_RETURN(r.after, Dist(t, "after"));
  WEFT_ASSIGN_OR_RETURN(r.reply_bytes, Count(t, "reply_bytes", r.reply_bytes));
  WEFT_ASSIGN_OR_RETURN(r.request_bytes, Count(t, "request_bytes", r.request_bytes));
  WEFT_ASSIGN_OR_RETURN(r.disk_bytes, Count(t, "disk_bytes", r.disk_bytes));
  std::vector<PendingCall> pending;
  if (const toml::node* n = t.get("calls")) {
    const toml::array* calls = n->as_array();
    if (!calls) return Error(LineOf(*n), "calls must be an array of tables");
    for (const toml::node& c : *calls) {
      const toml::table* ct = c.as_table();
      if (!ct) return Error(LineOf(c), "a call must be a table {{ tier = ..., request = ... }}");
      auto to = (*ct)["tier"].value<std::string>();
      auto req = (*ct)["request"].value<std::string>();
      if (!to || !req) return Error(LineOf(c), "a call needs tier and request");
      CallSpec spec;
      if (const toml::node* cn = ct->get("count")) {
        if (auto v = cn->value<int64_t>(); v && *v >= 0 && *v <= 64) {
          spec.min_count = spec.max_count = uint32_t(*v);
        } else if (auto range = cn->value<std::string>()) {
          unsigned lo = 0, hi = 0;
          char dash = 0;
          if (std::sscanf(range->c_str(), "%u%c%u", &lo, &dash, &hi) != 3 || dash != '-' ||
              lo > hi || hi > 64) {
            return Error(LineOf(*cn), "count must be 0-64 or a range \"1-3\"");
          }
          spec.min_count = lo;
          spec.max_count = hi;
        } else {
          return Error(LineOf(*cn), "count must be 0-64 or a range \"1-3\"");
        }
      }
      spec.parallel = (*ct)["parallel"].value_or(false);
      r.calls.push_back(spec);
      pending.push_back({*to, *req, LineOf(c)});
    }
  }
  if (tier.udp && (r.reply_bytes > 60000 || r.request_bytes > 60000)) {
    return Error(LineOf(t), "a UDP tier's messages must fit a datagram (60000 bytes)");
  }
  tier.requests.push_back(std::move(r));
  pending_.back().push_back(std::move(pending));
  return Status::Ok();
}

Result<Tier> Parser::ParseTier(const toml::table& t) {
  Tier tier;
  auto name = t["name"].value<std::string>();
  if (!name || name->empty()) return Error(LineOf(t), "a tier needs a name");
  for (char c : *name) {
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != '_' && c != '-') {
      return Error(LineOf(t), "tier name '{}' may hold only letters, - and _", *name);
    }
  }
  tier.name = *name;
  tier.pooled = t["pooled"].value_or(true);
  WEFT_ASSIGN_OR_RETURN(tier.pipeline, Count(t, "pipeline", 1));
  if (tier.pipeline == 0 || tier.pipeline > 64) {
    return Error(LineOf(t), "tier '{}': pipeline must be 1 to 64", tier.name);
  }
  if (tier.pipeline > 1 && !tier.pooled) {
    // Pipelining shares a persistent connection between calls; per-call connections have
    // nothing to share.
    return Error(LineOf(t), "tier '{}': pipeline = {} needs pooled = true", tier.name,
                 tier.pipeline);
  }
  std::string protocol = t["protocol"].value_or(std::string("tcp"));
  if (protocol != "tcp" && protocol != "udp" && protocol != "http") {
    return Error(LineOf(t), "protocol must be tcp, http or udp, not '{}'", protocol);
  }
  std::string balance = t["balance"].value_or(std::string("round-robin"));
  if (balance != "round-robin" && balance != "random" && balance != "prefer-first") {
    return Error(LineOf(t), "balance must be round-robin or random, or prefer-first, not '{}'",
                 balance);
  }
  tier.balance = balance == "random"         ? Balance::kRandom
                 : balance == "prefer-first" ? Balance::kPreferFirst
                                             : Balance::kRoundRobin;
  tier.prefer_share = t["prefer_share"].value_or(0.5);
  if (!(tier.prefer_share >= 0 && tier.prefer_share <= 1)) {
    return Error(LineOf(t), "prefer_share must be within [0, 1]");
  }
  WEFT_ASSIGN_OR_RETURN(tier.replicas, Count(t, "replicas", 0));
  if (const toml::node* n = t.get("slow_server")) {
    std::optional<int64_t> index = n->value<int64_t>();
    if (!index || *index < 0 || *index >= 64) {
      return Error(LineOf(*n), "slow_server must be a server's index");
    }
    tier.slow_server = int(*index);
    tier.slow_share = t["slow_share"].value_or(0.0);
    if (!(tier.slow_share >= 0 && tier.slow_share <= 1)) {
      return Error(LineOf(t), "slow_share must be within [0, 1]");
    }
    WEFT_ASSIGN_OR_RETURN(Distribution extra,
                          ParseDistribution(t["slow_extra"].value_or(std::string("0"))));
    if (extra.kind != Distribution::Kind::kConstant) {
      return Error(LineOf(t), "slow_extra must be a constant time");
    }
    tier.slow_extra = extra.a;
  }
  tier.udp = protocol == "udp";
  tier.http = protocol == "http";
  tier.http_chunked = t["http_chunked"].value_or(false);
  WEFT_ASSIGN_OR_RETURN(tier.http_close_after, Count(t, "http_close_after", 0));
  if ((tier.http_chunked || tier.http_close_after > 0) && !tier.http) {
    return Error(LineOf(t), "tier '{}': http_chunked and http_close_after need protocol = \"http\"",
                 tier.name);
  }
  std::string service = t["service"].value_or(std::string("timer"));
  if (service != "timer" && service != "timer-heap" && service != "inline") {
    return Error(LineOf(t), "tier '{}': service must be timer, timer-heap or inline, not '{}'",
                 tier.name, service);
  }
  tier.inline_service = service == "inline";
  tier.shared_timer = service == "timer-heap";
  WEFT_ASSIGN_OR_RETURN(ServerSpec defaults, ParseServer(t, ServerSpec{}));
  // A port names one server: at the tier it is that of the tier's only server.
  const toml::node* tier_port = t.get("port");
  uint16_t port = defaults.port;
  defaults.port = 0;
  if (const toml::node* n = t.get("server")) {
    if (tier_port) {
      return Error(LineOf(*tier_port),
                   "tier '{}': port goes in each [[tier.server]], not in the tier", tier.name);
    }
    const toml::array* servers = n->as_array();
    if (!servers) return Error(LineOf(*n), "server must be an array of tables [[tier.server]]");
    for (const toml::node& s : *servers) {
      if (!s.as_table()) return Error(LineOf(s), "a server must be a table");
      WEFT_ASSIGN_OR_RETURN(ServerSpec spec, ParseServer(*s.as_table(), defaults));
      tier.servers.push_back(spec);
    }
  } else {
    WEFT_ASSIGN_OR_RETURN(uint32_t count, Count(t, "servers", 1));
    if (count == 0 || count > 64) return Error(LineOf(t), "servers must be 1 to 64");
    if (tier_port && count > 1) {
      return Error(LineOf(*tier_port),
                   "tier '{}': one port for {} servers; give each [[tier.server]] its port",
                   tier.name, count);
    }
    tier.servers.assign(count, defaults);
    tier.servers[0].port = port;
  }
  if (tier.slow_server >= int(tier.servers.size())) {
    return Error(LineOf(t), "tier '{}': slow_server {} is not one of its {} servers", tier.name,
                 tier.slow_server, tier.servers.size());
  }
  for (size_t i = 0; i < tier.servers.size(); ++i) {
    tier.servers[i].name = fmt::format("{}{}", tier.name, i);
  }
  pending_.emplace_back();
  const toml::array* requests = t["request"].as_array();
  if (!requests || requests->empty()) {
    return Error(LineOf(t), "tier '{}' needs at least one [[tier.request]]", tier.name);
  }
  for (const toml::node& r : *requests) {
    if (!r.as_table()) return Error(LineOf(r), "a request must be a table");
    WEFT_RETURN_IF_ERROR(ParseRequest(*r.as_table(), tier));
  }
  return tier;
}

Result<Topology> Parser::Parse(const toml::table& root) {
  Topology topo;
  topo.name = root["name"].value_or(std::string("topology"));
  topo.client_pooled = root["client_pooled"].value_or(true);
  WEFT_ASSIGN_OR_RETURN(topo.pipeline, Count(root, "pipeline", 1));
  if (topo.pipeline == 0 || topo.pipeline > 64) return Error(1, "pipeline must be 1 to 64");
  WEFT_ASSIGN_OR_RETURN(Distribution think, Dist(root, "think"));
  topo.think = think.a;
  if (auto t = root["io_timeout"].value<std::string>()) {
    Result<TimeNs> d = ParseDuration(*t);
    if (!d.ok() || *d <= 0) return Error(LineOf(*root.get("io_timeout")), "bad io_timeout");
    topo.io_timeout = *d;
  }
  if (const toml::node* n = root.get("seed")) {
    auto v = n->value<int64_t>();
    if (!v || *v < 0) return Error(LineOf(*n), "seed must be a non-negative integer");
    topo.seed = uint64_t(*v);
  }
  const toml::array* tiers = root["tier"].as_array();
  if (!tiers || tiers->empty()) return Error(1, "a topology needs at least one [[tier]]");
  for (const toml::node& t : *tiers) {
    if (!t.as_table()) return Error(LineOf(t), "a tier must be a table");
    WEFT_ASSIGN_OR_RETURN(Tier tier, ParseTier(*t.as_table()));
    if (topo.TierIndex(tier.name) >= 0) {
      return Error(LineOf(t), "tier '{}' is defined twice", tier.name);
    }
    topo.tiers.push_back(std::move(tier));
  }
  for (size_t ti = 0; ti < topo.tiers.size(); ++ti) {
    for (size_t ri = 0; ri < topo.tiers[ti].requests.size(); ++ri) {
      for (size_t ci = 0; ci < pending_[ti][ri].size(); ++ci) {
        const PendingCall& p = pending_[ti][ri][ci];
        int to = topo.TierIndex(p.tier);
        if (to < 0) return Error(p.line, "call to unknown tier '{}'", p.tier);
        // Calls go down only, so that every call graph is finite.
        if (to <= int(ti)) {
          return Error(p.line, "tier '{}' may call only tiers listed after it",
                       topo.tiers[ti].name);
        }
        int req = -1;
        for (size_t k = 0; k < topo.tiers[to].requests.size(); ++k) {
          if (topo.tiers[to].requests[k].name == p.request) req = int(k);
        }
        if (req < 0) return Error(p.line, "tier '{}' has no request '{}'", p.tier, p.request);
        CallSpec& spec = topo.tiers[ti].requests[ri].calls[ci];
        spec.tier = to;
        spec.request = req;
        // Requests pipelined behind the one a server answers with Connection: close would
        // be lost with the connection.
        if (topo.tiers[to].http_close_after > 0 && topo.tiers[ti].pipeline > 1) {
          return Error(p.line,
                       "tier '{}' pipelines calls to '{}', which closes connections "
                       "(http_close_after)",
                       topo.tiers[ti].name, p.tier);
        }
      }
    }
  }
  if (topo.pipeline > 1 && topo.tiers[0].http_close_after > 0) {
    return Error(1, "the client pipelines into '{}', which closes connections (http_close_after)",
                 topo.tiers[0].name);
  }
  return topo;
}

}  // namespace

std::string_view ThreadingModelName(ThreadingModel model) {
  switch (model) {
    case ThreadingModel::kThreadPerConnection:
      return "thread-per-connection";
    case ThreadingModel::kWorkerPool:
      return "worker-pool";
    case ThreadingModel::kHandoff:
      return "handoff";
    case ThreadingModel::kStaged:
      return "staged";
    case ThreadingModel::kEventLoop:
      return "event-loop";
    case ThreadingModel::kFork:
      return "fork";
    case ThreadingModel::kSpawn:
      return "spawn";
  }
  return "?";
}

TimeNs Distribution::Sample(std::mt19937_64& rng) const {
  switch (kind) {
    case Kind::kConstant:
      return a;
    case Kind::kExponential:
      return a <= 0 ? 0 : TimeNs(std::exponential_distribution<double>(1.0 / double(a))(rng));
    case Kind::kUniform:
      return std::uniform_int_distribution<TimeNs>(a, b)(rng);
  }
  return 0;
}

Result<Distribution> ParseDistribution(std::string_view text) {
  Distribution d;
  auto inner = [&](std::string_view prefix) -> std::optional<std::string_view> {
    if (text.size() > prefix.size() + 1 && text.substr(0, prefix.size()) == prefix &&
        text[prefix.size()] == '(' && text.back() == ')') {
      return text.substr(prefix.size() + 1, text.size() - prefix.size() - 2);
    }
    return std::nullopt;
  };
  if (auto e = inner("exp")) {
    d.kind = Distribution::Kind::kExponential;
    WEFT_ASSIGN_OR_RETURN(d.a, ParseDuration(*e));
  } else if (auto u = inner("uniform")) {
    size_t comma = u->find(',');
    if (comma == std::string_view::npos) {
      return Status::InvalidArgument("uniform needs two durations: uniform(1ms,3ms)");
    }
    d.kind = Distribution::Kind::kUniform;
    WEFT_ASSIGN_OR_RETURN(d.a, ParseDuration(u->substr(0, comma)));
    std::string_view hi = u->substr(comma + 1);
    while (!hi.empty() && hi.front() == ' ') hi.remove_prefix(1);
    WEFT_ASSIGN_OR_RETURN(d.b, ParseDuration(hi));
    if (d.b < d.a) return Status::InvalidArgument("uniform: high end below low end");
  } else {
    WEFT_ASSIGN_OR_RETURN(d.a, ParseDuration(text));
  }
  if (d.a < 0) return Status::InvalidArgument("'{}' is negative", text);
  return d;
}

int Topology::TierIndex(std::string_view tier_name) const {
  for (size_t i = 0; i < tiers.size(); ++i) {
    if (tiers[i].name == tier_name) return int(i);
  }
  return -1;
}

namespace {
// FNV-1a: std::hash may differ between standard libraries; a seed should not.
uint64_t HashName(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (char c : s) h = (h ^ uint8_t(c)) * 1099511628211ull;
  return h;
}
}  // namespace

Balancer::Balancer(const Topology& topo, std::string_view node)
    : topo_(topo),
      round_robin_(topo.tiers.size()),
      rng_(topo.seed ^ HashName(node)),
      candidate_names_(topo.tiers.size()) {
  for (const Tier& t : topo.tiers) {
    std::string names;
    for (const ServerSpec& s : t.servers) names += (names.empty() ? "" : ",") + s.name;
    every_server_.push_back(std::move(names));
  }
}

int Balancer::Pick(int tier, std::string_view* candidates) {
  const Tier& t = topo_.tiers[tier];
  const size_t n = t.servers.size();
  if (t.replicas > 0 && t.replicas < n) return PickReplica(tier, candidates);
  if (candidates) *candidates = every_server_[tier];
  if (topo_.tiers[tier].balance == Balance::kRandom) {
    std::lock_guard lock(mu_);
    return int(std::uniform_int_distribution<size_t>(0, n - 1)(rng_));
  }
  if (topo_.tiers[tier].balance == Balance::kPreferFirst) {
    std::lock_guard lock(mu_);
    if (n == 1 ||
        std::uniform_real_distribution<double>(0, 1)(rng_) < topo_.tiers[tier].prefer_share) {
      return 0;
    }
    return int(std::uniform_int_distribution<size_t>(1, n - 1)(rng_));
  }
  return int(round_robin_[tier].fetch_add(1) % n);
}

int Balancer::PickReplica(int tier, std::string_view* candidates) {
  const Tier& t = topo_.tiers[tier];
  std::lock_guard lock(mu_);
  // The block's locations: `replicas` distinct servers (a partial Fisher-Yates shuffle),
  // then listed in the tier's order: the order does not depend on the block.
  std::vector<int> order(t.servers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
  for (size_t i = 0; i < t.replicas; ++i) {
    size_t j = std::uniform_int_distribution<size_t>(i, order.size() - 1)(rng_);
    std::swap(order[i], order[j]);
  }
  order.resize(t.replicas);
  std::sort(order.begin(), order.end());
  size_t k = order.size();
  size_t pick = 0;
  if (t.balance == Balance::kRandom) {
    pick = std::uniform_int_distribution<size_t>(0, k - 1)(rng_);
  } else if (t.balance == Balance::kPreferFirst) {
    if (k > 1 && std::uniform_real_distribution<double>(0, 1)(rng_) >= t.prefer_share) {
      pick = std::uniform_int_distribution<size_t>(1, k - 1)(rng_);
    }
  } else {
    pick = round_robin_[tier].fetch_add(1) % k;
  }
  if (candidates) {
    uint64_t set = 0;
    for (int s : order) set |= uint64_t{1} << s;
    auto [it, added] = candidate_names_[tier].try_emplace(set);
    if (added) {
      for (int s : order) it->second += (it->second.empty() ? "" : ",") + t.servers[s].name;
    }
    *candidates = it->second;
  }
  return order[pick];
}

Result<Topology> ParseTopology(std::string_view text, std::string_view source) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument("{}:{}: {}", source, e.source().begin.line, e.description());
  }
  return Parser(source).Parse(root);
}

Result<Topology> LoadTopology(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseTopology(text, path);
}

}  // namespace weft::testbed
