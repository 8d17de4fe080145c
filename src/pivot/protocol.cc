#include "pivot/protocol.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace weft::pivot {
namespace {

using nlohmann::json;

constexpr size_t kMaxPayload = 64 << 20;
constexpr size_t kMaxItems = 1'000'000;  // groups, columns, key values, queries

json EncodeValue(const query::Value& v) {
  switch (v.type) {
    case query::ValueType::kNull:
      return nullptr;
    case query::ValueType::kInt:
      return v.i;
    case query::ValueType::kFloat:
      if (std::isfinite(v.f)) return v.f;
      return json{{"f", std::isnan(v.f) ? "nan" : v.f > 0 ? "inf" : "-inf"}};
    case query::ValueType::kString:
      return std::string(v.s);
  }
  return nullptr;
}

// The value `j` holds; strings are views into `j`, which must outlive the value's use.
Result<query::Value> DecodeValue(const json& j) {
  if (j.is_null()) return query::Value::Null();
  if (j.is_number_integer()) return query::Value::Int(j.get<int64_t>());
  if (j.is_number_float()) return query::Value::Float(j.get<double>());
  if (j.is_string()) return query::Value::String(j.get_ref<const std::string&>());
  if (j.is_object() && j.size() == 1 && j.contains("f") && j["f"].is_string()) {
    const std::string& s = j["f"].get_ref<const std::string&>();
    if (s == "nan") return query::Value::Float(std::nan(""));
    if (s == "inf") return query::Value::Float(HUGE_VAL);
    if (s == "-inf") return query::Value::Float(-HUGE_VAL);
  }
  return Status::InvalidArgument("not a value: {}", j.dump().substr(0, 40));
}

json EncodeCatalog(const std::vector<query::Tracepoint>& catalog) {
  json out = json::array();
  for (const query::Tracepoint& t : catalog)
    out.push_back({{"name", t.name}, {"exports", t.exports}});
  return out;
}

// Field access that never throws: each says which field is missing or mistyped.
Result<const json*> Field(const json& j, const char* name) {
  if (!j.is_object()) return Status::InvalidArgument("not an object");
  auto it = j.find(name);
  if (it == j.end()) return Status::InvalidArgument("no field \"{}\"", name);
  return &*it;
}
Result<std::string> String(const json& j, const char* name, size_t max = 4096) {
  WEFT_ASSIGN_OR_RETURN(const json* f, Field(j, name));
  if (!f->is_string()) return Status::InvalidArgument("\"{}\" is not a string", name);
  const std::string& s = f->get_ref<const std::string&>();
  if (s.size() > max) return Status::InvalidArgument("\"{}\" is longer than {} bytes", name, max);
  return s;
}
Result<int64_t> Int(const json& j, const char* name, int64_t min, int64_t max) {
  WEFT_ASSIGN_OR_RETURN(const json* f, Field(j, name));
  if (!f->is_number_integer()) return Status::InvalidArgument("\"{}\" is not an integer", name);
  if (f->is_number_unsigned() && f->get<uint64_t>() > uint64_t(INT64_MAX)) {
    return Status::InvalidArgument("\"{}\" is out of range", name);
  }
  int64_t v = f->get<int64_t>();
  if (v < min || v > max) return Status::InvalidArgument("\"{}\" = {} is out of range", name, v);
  return v;
}
// A count that older agents did not send: absent is 0.
Result<uint64_t> OptionalCount(const json& j, const char* name) {
  if (!j.is_object() || !j.contains(name)) return uint64_t{0};
  WEFT_ASSIGN_OR_RETURN(int64_t v, Int(j, name, 0, INT64_MAX));
  return uint64_t(v);
}
json EncodeDrops(const AgentDrops& d) {
  return json{
      {"partials", d.partials}, {"bus", d.bus}, {"interned", d.interned}, {"children", d.children}};
}
Result<AgentDrops> DecodeDrops(const json& j) {
  AgentDrops d;
  if (!j.is_object() || !j.contains("lost")) return d;
  const json& l = j["lost"];
  if (!l.is_object()) return Status::InvalidArgument("\"lost\" is not an object");
  WEFT_ASSIGN_OR_RETURN(d.partials, OptionalCount(l, "partials"));
  WEFT_ASSIGN_OR_RETURN(d.bus, OptionalCount(l, "bus"));
  WEFT_ASSIGN_OR_RETURN(d.interned, OptionalCount(l, "interned"));
  WEFT_ASSIGN_OR_RETURN(d.children, OptionalCount(l, "children"));
  return d;
}
Result<double> Number(const json& j, const char* name) {
  WEFT_ASSIGN_OR_RETURN(const json* f, Field(j, name));
  if (!f->is_number()) return Status::InvalidArgument("\"{}\" is not a number", name);
  double v = f->get<double>();
  if (!std::isfinite(v)) return Status::InvalidArgument("\"{}\" is not finite", name);
  return v;
}
Result<bool> Bool(const json& j, const char* name) {
  WEFT_ASSIGN_OR_RETURN(const json* f, Field(j, name));
  if (!f->is_boolean()) return Status::InvalidArgument("\"{}\" is not a boolean", name);
  return f->get<bool>();
}
Result<const json*> Array(const json& j, const char* name, size_t max = kMaxItems) {
  WEFT_ASSIGN_OR_RETURN(const json* f, Field(j, name));
  if (!f->is_array()) return Status::InvalidArgument("\"{}\" is not an array", name);
  if (f->size() > max) return Status::InvalidArgument("\"{}\" has over {} items", name, max);
  return f;
}

// Parses `payload` and checks its type and version.
Result<json> Parse(std::string_view payload, std::string_view type) {
  if (payload.size() > kMaxPayload) return Status::InvalidArgument("message over 64 MiB");
  json j = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument("not JSON");
  WEFT_ASSIGN_OR_RETURN(std::string t, String(j, "type"));
  if (t != type) return Status::InvalidArgument("a \"{}\" message, not \"{}\"", t, type);
  WEFT_ASSIGN_OR_RETURN(int64_t v, Int(j, "v", 0, INT32_MAX));
  if (v != kProtocolVersion) {
    return Status::InvalidArgument("protocol version {}, this agent speaks {}", v,
                                   kProtocolVersion);
  }
  return j;
}

Result<std::vector<query::Tracepoint>> DecodeCatalog(const json& j, const char* name) {
  WEFT_ASSIGN_OR_RETURN(const json* a, Array(j, name, kMaxCatalog));
  std::vector<query::Tracepoint> out;
  for (const json& t : *a) {
    query::Tracepoint tp;
    WEFT_ASSIGN_OR_RETURN(tp.name, String(t, "name", 256));
    if (tp.name.empty()) return Status::InvalidArgument("a tracepoint without a name");
    WEFT_ASSIGN_OR_RETURN(const json* exports, Array(t, "exports", 1024));
    for (const json& e : *exports) {
      if (!e.is_string() || e.get_ref<const std::string&>().size() > 256) {
        return Status::InvalidArgument("tracepoint {}: an export is not a short string", tp.name);
      }
      tp.exports.push_back(e.get<std::string>());
    }
    out.push_back(std::move(tp));
  }
  return out;
}

Result<std::string> QueryId(const json& j) {
  WEFT_ASSIGN_OR_RETURN(std::string id, String(j, "id", 64));
  if (!ValidQueryId(id)) return Status::InvalidArgument("bad query id \"{}\"", id);
  return id;
}

std::string_view OpName(query::AggregateOp op) {
  switch (op) {
    case query::AggregateOp::kCount:
      return "COUNT";
    case query::AggregateOp::kSum:
      return "SUM";
    case query::AggregateOp::kAverage:
      return "AVERAGE";
    case query::AggregateOp::kMin:
      return "MIN";
    case query::AggregateOp::kMax:
      return "MAX";
  }
  return "COUNT";
}

Result<query::AggregateOp> ParseOp(std::string_view s) {
  for (auto op :
       {query::AggregateOp::kCount, query::AggregateOp::kSum, query::AggregateOp::kAverage,
        query::AggregateOp::kMin, query::AggregateOp::kMax}) {
    if (OpName(op) == s) return op;
  }
  return Status::InvalidArgument("unknown aggregate \"{}\"", s);
}

}  // namespace

std::string ResultsSubject(std::string_view query_id) {
  return "weft.pivot.results." + std::string(query_id);
}

bool ValidQueryId(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-')) {
      return false;
    }
  }
  return true;
}

std::string EncodeInstall(const InstallMessage& m) {
  return json{{"type", "install"},
              {"v", kProtocolVersion},
              {"id", m.id},
              {"text", m.text},
              {"slot_base", m.slot_base},
              {"interval_ns", m.interval_ns},
              {"optimize", m.optimize},
              {"tracepoints", EncodeCatalog(m.catalog)}}
      .dump();
}

std::string EncodeUninstall(const UninstallMessage& m) {
  return json{{"type", "uninstall"}, {"v", kProtocolVersion}, {"id", m.id}}.dump();
}

std::string EncodeList(const ListRequest& m) {
  return json{{"type", "list"}, {"v", kProtocolVersion}, {"reply_to", m.reply_to}}.dump();
}

std::string EncodeAgent(const AgentDescription& m) {
  json queries = json::array();
  for (const InstalledQueryInfo& q : m.queries) {
    queries.push_back({{"id", q.id},
                       {"text", q.text},
                       {"slot_base", q.slot_base},
                       {"slots", q.slots},
                       {"woven", q.woven},
                       {"error", q.error}});
  }
  return json{{"type", "agent"},
              {"v", kProtocolVersion},
              {"pid", m.pid},
              {"host", m.host},
              {"tracepoints", EncodeCatalog(m.tracepoints)},
              {"queries", queries},
              {"lost", EncodeDrops(m.lost)}}
      .dump();
}

std::string EncodePartials(const PartialResults& m) {
  json columns = json::array();
  for (const ResultColumn& c : m.columns) {
    json col{{"name", c.name}};
    if (c.aggregate >= 0) {
      col["agg"] = c.aggregate;
      col["op"] = OpName(c.op);
    } else {
      col["key"] = c.key;
    }
    columns.push_back(std::move(col));
  }
  json groups = json::array();
  for (size_t g = 0; g < m.groups.size(); ++g) {
    json key = json::array();
    for (const query::Value& v : m.groups.key(g)) key.push_back(EncodeValue(v));
    json parts = json::array();
    for (const query::PartialAggregate& p : m.groups.partials(g)) {
      parts.push_back({p.sum, p.weight, EncodeValue(p.min), EncodeValue(p.max)});
    }
    groups.push_back({{"k", std::move(key)}, {"w", m.groups.weight(g)}, {"a", std::move(parts)}});
  }
  return json{{"type", "partials"},
              {"v", kProtocolVersion},
              {"id", m.id},
              {"pid", m.pid},
              {"host", m.host},
              {"interval_start_ns", m.interval_start_ns},
              {"interval_ns", m.interval_ns},
              {"final", m.final},
              {"aggregated", m.aggregated},
              {"aggregates", m.groups.aggregates()},
              {"columns", std::move(columns)},
              {"events", m.events},
              {"drops", m.drops},
              {"lost", EncodeDrops(m.lost)},
              {"refused", m.refused},
              {"groups", std::move(groups)}}
      .dump();
}

Result<InstallMessage> DecodeInstall(std::string_view payload) {
  WEFT_ASSIGN_OR_RETURN(json j, Parse(payload, "install"));
  InstallMessage m;
  WEFT_ASSIGN_OR_RETURN(m.id, QueryId(j));
  WEFT_ASSIGN_OR_RETURN(m.text, String(j, "text", kMaxQueryText));
  WEFT_ASSIGN_OR_RETURN(int64_t slot_base, Int(j, "slot_base", 0, kMaxSlotBase));
  m.slot_base = uint32_t(slot_base);
  WEFT_ASSIGN_OR_RETURN(m.interval_ns, Int(j, "interval_ns", kMinInterval, kMaxInterval));
  WEFT_ASSIGN_OR_RETURN(m.optimize, Bool(j, "optimize"));
  WEFT_ASSIGN_OR_RETURN(m.catalog, DecodeCatalog(j, "tracepoints"));
  return m;
}

Result<UninstallMessage> DecodeUninstall(std::string_view payload) {
  WEFT_ASSIGN_OR_RETURN(json j, Parse(payload, "uninstall"));
  UninstallMessage m;
  WEFT_ASSIGN_OR_RETURN(m.id, QueryId(j));
  return m;
}

Result<ListRequest> DecodeList(std::string_view payload) {
  WEFT_ASSIGN_OR_RETURN(json j, Parse(payload, "list"));
  ListRequest m;
  WEFT_ASSIGN_OR_RETURN(m.reply_to, String(j, "reply_to", 256));
  std::string_view token =
      std::string_view(m.reply_to).substr(std::min(m.reply_to.size(), kReplyPrefix.size()));
  if (!m.reply_to.starts_with(kReplyPrefix) || !ValidQueryId(token)) {
    return Status::InvalidArgument("reply_to must be {}<token>, not \"{}\"", kReplyPrefix,
                                   m.reply_to);
  }
  return m;
}

Result<AgentDescription> DecodeAgent(std::string_view payload) {
  WEFT_ASSIGN_OR_RETURN(json j, Parse(payload, "agent"));
  AgentDescription m;
  WEFT_ASSIGN_OR_RETURN(m.pid, Int(j, "pid", 0, INT64_MAX));
  WEFT_ASSIGN_OR_RETURN(m.host, String(j, "host", 256));
  WEFT_ASSIGN_OR_RETURN(m.tracepoints, DecodeCatalog(j, "tracepoints"));
  WEFT_ASSIGN_OR_RETURN(const json* queries, Array(j, "queries"));
  for (const json& q : *queries) {
    InstalledQueryInfo info;
    WEFT_ASSIGN_OR_RETURN(info.id, QueryId(q));
    WEFT_ASSIGN_OR_RETURN(info.text, String(q, "text", kMaxQueryText));
    WEFT_ASSIGN_OR_RETURN(int64_t base, Int(q, "slot_base", 0, kMaxSlotBase));
    WEFT_ASSIGN_OR_RETURN(int64_t slots, Int(q, "slots", 0, kMaxSlotBase));
    info.slot_base = uint32_t(base);
    info.slots = uint32_t(slots);
    WEFT_ASSIGN_OR_RETURN(info.woven, Bool(q, "woven"));
    WEFT_ASSIGN_OR_RETURN(info.error, String(q, "error"));
    m.queries.push_back(std::move(info));
  }
  WEFT_ASSIGN_OR_RETURN(m.lost, DecodeDrops(j));
  return m;
}

Result<PartialResults> DecodePartials(std::string_view payload) {
  WEFT_ASSIGN_OR_RETURN(json j, Parse(payload, "partials"));
  PartialResults m;
  WEFT_ASSIGN_OR_RETURN(m.id, QueryId(j));
  WEFT_ASSIGN_OR_RETURN(m.pid, Int(j, "pid", 0, INT64_MAX));
  WEFT_ASSIGN_OR_RETURN(m.host, String(j, "host", 256));
  WEFT_ASSIGN_OR_RETURN(m.interval_start_ns, Int(j, "interval_start_ns", 0, INT64_MAX));
  WEFT_ASSIGN_OR_RETURN(m.interval_ns, Int(j, "interval_ns", kMinInterval, kMaxInterval));
  WEFT_ASSIGN_OR_RETURN(m.final, Bool(j, "final"));
  WEFT_ASSIGN_OR_RETURN(m.aggregated, Bool(j, "aggregated"));
  WEFT_ASSIGN_OR_RETURN(int64_t n_aggregates, Int(j, "aggregates", 0, 1024));
  WEFT_ASSIGN_OR_RETURN(int64_t events, Int(j, "events", 0, INT64_MAX));
  WEFT_ASSIGN_OR_RETURN(int64_t drops, Int(j, "drops", 0, INT64_MAX));
  m.events = uint64_t(events);
  m.drops = uint64_t(drops);
  WEFT_ASSIGN_OR_RETURN(m.lost, DecodeDrops(j));
  if (j.contains("refused")) {
    WEFT_ASSIGN_OR_RETURN(m.refused, String(j, "refused", 4096));
  }
  WEFT_ASSIGN_OR_RETURN(const json* columns, Array(j, "columns", 1024));
  for (const json& c : *columns) {
    ResultColumn col;
    WEFT_ASSIGN_OR_RETURN(col.name, String(c, "name"));
    if (c.contains("agg")) {
      WEFT_ASSIGN_OR_RETURN(int64_t a, Int(c, "agg", 0, n_aggregates - 1));
      WEFT_ASSIGN_OR_RETURN(std::string op, String(c, "op", 16));
      WEFT_ASSIGN_OR_RETURN(col.op, ParseOp(op));
      col.aggregate = int32_t(a);
    } else {
      WEFT_ASSIGN_OR_RETURN(int64_t k, Int(c, "key", 0, 1023));
      col.key = int32_t(k);
    }
    m.columns.push_back(std::move(col));
  }
  m.groups = PartialGroups(size_t(n_aggregates));
  WEFT_ASSIGN_OR_RETURN(const json* groups, Array(j, "groups"));
  std::vector<query::Value> key;
  std::vector<query::PartialAggregate> parts;
  size_t key_width = SIZE_MAX;
  for (const json& g : *groups) {
    WEFT_ASSIGN_OR_RETURN(const json* k, Array(g, "k", 1024));
    if (key_width == SIZE_MAX) key_width = k->size();
    if (k->size() != key_width) return Status::InvalidArgument("groups' keys differ in width");
    key.clear();
    for (const json& v : *k) {
      WEFT_ASSIGN_OR_RETURN(query::Value value, DecodeValue(v));
      key.push_back(value);
    }
    WEFT_ASSIGN_OR_RETURN(double w, Number(g, "w"));
    WEFT_ASSIGN_OR_RETURN(const json* a, Array(g, "a", 1024));
    if (a->size() != size_t(n_aggregates)) {
      return Status::InvalidArgument("a group has {} partials, not {}", a->size(), n_aggregates);
    }
    parts.clear();
    for (const json& p : *a) {
      if (!p.is_array() || p.size() != 4 || !p[0].is_number() || !p[1].is_number()) {
        return Status::InvalidArgument("a partial is not [sum, weight, min, max]");
      }
      query::PartialAggregate part;
      part.sum = p[0].get<double>();
      part.weight = p[1].get<double>();
      WEFT_ASSIGN_OR_RETURN(part.min, DecodeValue(p[2]));
      WEFT_ASSIGN_OR_RETURN(part.max, DecodeValue(p[3]));
      parts.push_back(part);
    }
    m.groups.Add(key, w, parts);  // copies the strings out of `j`
  }
  for (const ResultColumn& c : m.columns) {
    if (c.key >= 0 && size_t(c.key) >= key_width && key_width != SIZE_MAX) {
      return Status::InvalidArgument("column {} shows key {} of {}", c.name, c.key, key_width);
    }
  }
  return m;
}

}  // namespace weft::pivot
