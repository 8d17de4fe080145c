// Reading the .paths.json file (docs/paths.md) with full validation; paths_file_writer.cc
// writes it. nlohmann::json throws; every call into it stays inside ParsePaths's try
// block, and fields are read only after their type was checked.
#include "paths/paths_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/file.h"

namespace weft {

namespace {

// Bins of magnitudes 1 ns .. 2^63 ns with base 1.02 are 0 .. 2205; anything far outside is
// a damaged file, and accepting it would let a later Merge() allocate without bound.
constexpr int64_t kMaxBin = 4096;

// Where a value sits in the file ("patterns[3].elements[1].sender"), for error messages.
class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  Status Error(std::string_view where, std::string_view what) const {
    return Status::Corruption("{}: {}: {}", source_, where, what);
  }

  Result<const nlohmann::json*> Field(const nlohmann::json& object, std::string_view where,
                                      const char* name) const {
    auto it = object.find(name);
    if (it == object.end()) return Error(where, fmt::format("missing field '{}'", name));
    return &*it;
  }
  Result<uint64_t> Unsigned(const nlohmann::json& v, std::string_view where) const {
    if (!v.is_number_unsigned()) return Error(where, "expected an unsigned integer");
    return v.get<uint64_t>();
  }
  Result<int64_t> Signed(const nlohmann::json& v, std::string_view where) const {
    if (v.is_number_unsigned()) {
      if (v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        return Error(where, "integer too large");
      return int64_t(v.get<uint64_t>());
    }
    if (!v.is_number_integer()) return Error(where, "expected an integer");
    return v.get<int64_t>();
  }
  Result<double> Number(const nlohmann::json& v, std::string_view where) const {
    if (!v.is_number()) return Error(where, "expected a number");
    double d = v.get<double>();
    if (!std::isfinite(d)) return Error(where, "expected a finite number");
    return d == 0 ? 0.0 : d;  // -0.0 would be written as "-0" and read back as 0
  }
  Result<std::string> String(const nlohmann::json& v, std::string_view where) const {
    if (!v.is_string()) return Error(where, "expected a string");
    return v.get<std::string>();
  }
  Result<const nlohmann::json*> Array(const nlohmann::json& v, std::string_view where) const {
    if (!v.is_array()) return Error(where, "expected an array");
    return &v;
  }
  // Reads an array of integers in [lo, hi].
  template <typename T>
  Result<std::vector<T>> IntArray(const nlohmann::json& v, std::string_view where, int64_t lo,
                                  int64_t hi) const {
    if (!v.is_array()) return Error(where, "expected an array");
    std::vector<T> out;
    out.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const nlohmann::json& e = v[i];
      // The common case without building a location string: these arrays are long.
      if (lo <= 0 && hi >= 0 && e.is_number_unsigned() && e.get<uint64_t>() <= uint64_t(hi)) {
        out.push_back(T(e.get<uint64_t>()));
        continue;
      }
      std::string at = fmt::format("{}[{}]", where, i);
      WEFT_ASSIGN_OR_RETURN(int64_t x, Signed(e, at));
      if (x < lo || x > hi) return Error(at, fmt::format("{} is outside [{}, {}]", x, lo, hi));
      out.push_back(T(x));
    }
    return out;
  }

  Result<LatencyHistogram::Side> Side(const nlohmann::json& object, std::string_view where,
                                      const char* name) const {
    LatencyHistogram::Side side;
    auto it = object.find(name);
    if (it == object.end()) return side;
    std::string at = fmt::format("{}.{}", where, name);
    if (!it->is_object()) return Error(at, "expected an object");
    WEFT_ASSIGN_OR_RETURN(const nlohmann::json* first, Field(*it, at, "first_bin"));
    WEFT_ASSIGN_OR_RETURN(int64_t first_bin, Signed(*first, at + ".first_bin"));
    WEFT_ASSIGN_OR_RETURN(const nlohmann::json* counts, Field(*it, at, "counts"));
    if (!counts->is_array()) return Error(at + ".counts", "expected an array");
    if (first_bin < -kMaxBin || first_bin + int64_t(counts->size()) > kMaxBin) {
      return Error(at, fmt::format("bins {}..{} are outside the range of durations", first_bin,
                                   first_bin + int64_t(counts->size())));
    }
    side.first_bin = int32_t(first_bin);
    for (size_t i = 0; i < counts->size(); ++i) {
      WEFT_ASSIGN_OR_RETURN(uint64_t c,
                            Unsigned((*counts)[i], fmt::format("{}.counts[{}]", at, i)));
      side.counts.push_back(c);
    }
    return side;
  }

  Result<LatencyHistogram> Histogram(const nlohmann::json& v, std::string_view where) const {
    if (!v.is_object()) return Error(where, "expected a histogram object");
    WEFT_ASSIGN_OR_RETURN(const nlohmann::json* f, Field(v, where, "zeros"));
    WEFT_ASSIGN_OR_RETURN(uint64_t zeros, Unsigned(*f, fmt::format("{}.zeros", where)));
    WEFT_ASSIGN_OR_RETURN(f, Field(v, where, "min"));
    WEFT_ASSIGN_OR_RETURN(int64_t min, Signed(*f, fmt::format("{}.min", where)));
    WEFT_ASSIGN_OR_RETURN(f, Field(v, where, "max"));
    WEFT_ASSIGN_OR_RETURN(int64_t max, Signed(*f, fmt::format("{}.max", where)));
    WEFT_ASSIGN_OR_RETURN(f, Field(v, where, "sum"));
    WEFT_ASSIGN_OR_RETURN(double sum, Number(*f, fmt::format("{}.sum", where)));
    WEFT_ASSIGN_OR_RETURN(f, Field(v, where, "sum_sq"));
    WEFT_ASSIGN_OR_RETURN(double sum_sq, Number(*f, fmt::format("{}.sum_sq", where)));
    WEFT_ASSIGN_OR_RETURN(LatencyHistogram::Side positive, Side(v, where, "positive"));
    WEFT_ASSIGN_OR_RETURN(LatencyHistogram::Side negative, Side(v, where, "negative"));
    uint64_t total = zeros;
    for (const auto* side : {&positive, &negative}) {
      for (uint64_t c : side->counts) {
        if (total + c < total) return Error(where, "counts overflow");
        total += c;
      }
    }
    if (total > 0 && min > max)
      return Error(where, fmt::format("min {} is above max {}", min, max));
    return LatencyHistogram::FromParts(std::move(positive), std::move(negative), zeros, min, max,
                                       sum, sum_sq);
  }

 private:
  std::string_view source_;
};

Result<MessageKind> ParseKind(std::string_view name) {
  for (int k = 0; k < kMessageKindCount; ++k) {
    if (MessageKindOp(MessageKind(k)) == name) return MessageKind(k);
  }
  return Status::InvalidArgument("unknown kind '{}' (CALL_SENT, RET_SENT or MSG_SENT)", name);
}

// "attributes": [{"key": ..., "value": ..., "count": n}, ...], optional.
Status ParseAttributes(const Reader& r, const nlohmann::json& e, const std::string& eat,
                       PatternElement& element) {
  auto list = e.find("attributes");
  if (list == e.end()) return Status::Ok();
  if (!list->is_array() || list->size() > kMaxElementAttributes) {
    return r.Error(eat + ".attributes",
                   fmt::format("expected an array of at most {}", kMaxElementAttributes));
  }
  for (size_t j = 0; j < list->size(); ++j) {
    std::string aat = fmt::format("{}.attributes[{}]", eat, j);
    AttributeCount a;
    if (!(*list)[j].is_object()) return r.Error(aat, "expected an object");
    WEFT_ASSIGN_OR_RETURN(const nlohmann::json* g, r.Field((*list)[j], aat, "key"));
    WEFT_ASSIGN_OR_RETURN(a.key, r.String(*g, aat + ".key"));
    WEFT_ASSIGN_OR_RETURN(g, r.Field((*list)[j], aat, "value"));
    WEFT_ASSIGN_OR_RETURN(a.value, r.String(*g, aat + ".value"));
    WEFT_ASSIGN_OR_RETURN(g, r.Field((*list)[j], aat, "count"));
    WEFT_ASSIGN_OR_RETURN(a.count, r.Unsigned(*g, aat + ".count"));
    element.attributes.push_back(std::move(a));
  }
  return Status::Ok();
}

// Element k of a pattern, at `eat` ("patterns[3].elements[1]").
Result<PatternElement> ParseElement(const Reader& r, const nlohmann::json& e,
                                    const std::string& eat, size_t k, int64_t node_count) {
  if (!e.is_object()) return r.Error(eat, "expected an object");
  PatternElement element;
  WEFT_ASSIGN_OR_RETURN(const nlohmann::json* g, r.Field(e, eat, "kind"));
  WEFT_ASSIGN_OR_RETURN(std::string kind, r.String(*g, eat + ".kind"));
  Result<MessageKind> parsed = ParseKind(kind);
  if (!parsed.ok()) return r.Error(eat + ".kind", parsed.status().message());
  element.kind = *parsed;
  for (auto [name, node] :
       {std::pair{"sender", &element.sender}, std::pair{"receiver", &element.receiver}}) {
    WEFT_ASSIGN_OR_RETURN(g, r.Field(e, eat, name));
    std::string nat = fmt::format("{}.{}", eat, name);
    WEFT_ASSIGN_OR_RETURN(int64_t id, r.Signed(*g, nat));
    if (id < 0 || id >= node_count)
      return r.Error(nat, fmt::format("node {} is not among the {} nodes", id, node_count));
    *node = NodeId(uint32_t(id));
  }
  WEFT_ASSIGN_OR_RETURN(g, r.Field(e, eat, "parent"));
  WEFT_ASSIGN_OR_RETURN(int64_t parent, r.Signed(*g, eat + ".parent"));
  if (parent < -1 || parent >= int64_t(k) || (k == 0) != (parent == -1)) {
    return r.Error(
        eat + ".parent",
        fmt::format("parent {} is not an earlier element (or -1 for element 0)", parent));
  }
  element.parent = int32_t(parent);
  WEFT_ASSIGN_OR_RETURN(g, r.Field(e, eat, "delay"));
  WEFT_ASSIGN_OR_RETURN(element.delay, r.Histogram(*g, eat + ".delay"));
  if (auto n = e.find("network"); n != e.end()) {
    WEFT_ASSIGN_OR_RETURN(element.network, r.Histogram(*n, eat + ".network"));
  }
  if (auto t = e.find("round_trip"); t != e.end()) {
    if (!t->is_boolean()) return r.Error(eat + ".round_trip", "expected true or false");
    element.round_trip = t->get<bool>();
  }
  WEFT_RETURN_IF_ERROR(ParseAttributes(r, e, eat, element));
  return element;
}

// Pattern i at `at`, its key checked against its elements.
Result<PathPattern> ParsePattern(const Reader& r, const nlohmann::json& p, const std::string& at,
                                 const PathSet& set) {
  if (!p.is_object()) return r.Error(at, "expected an object");
  PathPattern pattern;
  WEFT_ASSIGN_OR_RETURN(const nlohmann::json* f, r.Field(p, at, "key"));
  WEFT_ASSIGN_OR_RETURN(pattern.key, r.String(*f, at + ".key"));
  WEFT_ASSIGN_OR_RETURN(f, r.Field(p, at, "count"));
  WEFT_ASSIGN_OR_RETURN(pattern.count, r.Unsigned(*f, at + ".count"));
  WEFT_ASSIGN_OR_RETURN(f, r.Field(p, at, "expected_count"));
  WEFT_ASSIGN_OR_RETURN(pattern.expected_count, r.Number(*f, at + ".expected_count"));
  WEFT_ASSIGN_OR_RETURN(f, r.Field(p, at, "max_probability"));
  WEFT_ASSIGN_OR_RETURN(pattern.max_probability, r.Number(*f, at + ".max_probability"));
  if (pattern.expected_count < 0) return r.Error(at + ".expected_count", "must not be negative");
  if (pattern.max_probability < 0 || pattern.max_probability > 1) {
    return r.Error(at + ".max_probability",
                   fmt::format("{} is outside [0, 1]", pattern.max_probability));
  }
  WEFT_ASSIGN_OR_RETURN(f, r.Field(p, at, "latency"));
  WEFT_ASSIGN_OR_RETURN(pattern.latency, r.Histogram(*f, at + ".latency"));
  WEFT_ASSIGN_OR_RETURN(f, r.Field(p, at, "elements"));
  if (!f->is_array() || f->empty()) return r.Error(at + ".elements", "expected a non-empty array");
  std::vector<std::string> labels;
  std::vector<int32_t> parents;
  for (size_t k = 0; k < f->size(); ++k) {
    WEFT_ASSIGN_OR_RETURN(PatternElement element,
                          ParseElement(r, (*f)[k], fmt::format("{}.elements[{}]", at, k), k,
                                       int64_t(set.nodes.size())));
    labels.push_back(ElementLabel(set, element));
    parents.push_back(element.parent);
    pattern.elements.push_back(std::move(element));
  }
  Result<std::string> key = PatternKey(labels, parents);
  if (!key.ok()) return r.Error(at + ".elements", key.status().message());
  if (*key != pattern.key)
    return r.Error(at + ".key", fmt::format("does not match its elements, which give '{}'", *key));
  return pattern;
}

Status ParsePatterns(const Reader& r, const nlohmann::json& array, PathSet& set) {
  for (size_t i = 0; i < array.size(); ++i) {
    WEFT_ASSIGN_OR_RETURN(PathPattern pattern,
                          ParsePattern(r, array[i], fmt::format("patterns[{}]", i), set));
    set.patterns.push_back(std::move(pattern));
  }
  std::vector<std::string_view> keys;
  for (const PathPattern& p : set.patterns) keys.push_back(p.key);
  std::sort(keys.begin(), keys.end());
  auto dup = std::adjacent_find(keys.begin(), keys.end());
  if (dup != keys.end()) return r.Error("patterns", fmt::format("key '{}' appears twice", *dup));
  return Status::Ok();
}

Status ParseInstances(const Reader& r, const nlohmann::json& object, PathSet& set) {
  if (!object.is_object()) return r.Error("instances", "expected an object");
  constexpr int64_t kMax32 = std::numeric_limits<uint32_t>::max() - 1;
  WEFT_ASSIGN_OR_RETURN(const nlohmann::json* f, r.Field(object, "instances", "begin"));
  WEFT_ASSIGN_OR_RETURN(set.instance_begin, r.IntArray<uint32_t>(*f, "instances.begin", 0, kMax32));
  WEFT_ASSIGN_OR_RETURN(f, r.Field(object, "instances", "messages"));
  const int64_t last_message = int64_t(set.trace_messages) - 1;  // trace_messages < 2^32 - 1
  WEFT_ASSIGN_OR_RETURN(set.messages,
                        r.IntArray<MessageId>(*f, "instances.messages", 0, last_message));
  WEFT_ASSIGN_OR_RETURN(f, r.Field(object, "instances", "parent"));
  WEFT_ASSIGN_OR_RETURN(set.parent, r.IntArray<int32_t>(*f, "instances.parent", -1,
                                                        std::numeric_limits<int32_t>::max()));
  WEFT_ASSIGN_OR_RETURN(f, r.Field(object, "instances", "pattern"));
  WEFT_ASSIGN_OR_RETURN(set.pattern, r.IntArray<uint32_t>(*f, "instances.pattern", 0,
                                                          int64_t(set.patterns.size()) - 1));
  WEFT_ASSIGN_OR_RETURN(f, r.Field(object, "instances", "probability"));
  if (!f->is_array()) return r.Error("instances.probability", "expected an array");
  for (size_t i = 0; i < f->size(); ++i) {
    const nlohmann::json& e = (*f)[i];
    double p = e.is_number() ? e.get<double>() : 0.0;
    if (!(p > 0 && p <= 1)) {
      std::string at = fmt::format("instances.probability[{}]", i);
      WEFT_RETURN_IF_ERROR(r.Number(e, at).status());
      return r.Error(at, fmt::format("probability {} is outside (0, 1]", p));
    }
    set.probability.push_back(p);
  }

  const size_t n = set.probability.size();
  if (set.instance_begin.size() != n + 1 || set.pattern.size() != n) {
    return r.Error(
        "instances",
        fmt::format("begin has {} entries, pattern {} and probability {}: expected n+1, n, n",
                    set.instance_begin.size(), set.pattern.size(), n));
  }
  if (set.parent.size() != set.messages.size()) {
    return r.Error("instances", fmt::format("{} messages but {} parents", set.messages.size(),
                                            set.parent.size()));
  }
  if (set.instance_begin[0] != 0 || set.instance_begin[n] != set.messages.size()) {
    return r.Error("instances.begin",
                   fmt::format("must start at 0 and end at the {} messages", set.messages.size()));
  }
  std::vector<uint64_t> count(set.patterns.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    std::string at = fmt::format("instances[{}]", i);
    if (set.instance_begin[i + 1] <= set.instance_begin[i])
      return r.Error(at, "is empty (begin must increase)");
    const PathPattern& p = set.patterns[set.pattern[i]];
    auto parents = set.InstanceParents(i);
    if (parents.size() != p.elements.size()) {
      return r.Error(at, fmt::format("has {} messages but its pattern {} has {} elements",
                                     parents.size(), set.pattern[i], p.elements.size()));
    }
    for (size_t k = 0; k < parents.size(); ++k) {
      if (parents[k] != p.elements[k].parent) {
        return r.Error(at, fmt::format("element {} has parent {} but its pattern {} has {}", k,
                                       parents[k], set.pattern[i], p.elements[k].parent));
      }
    }
    ++count[set.pattern[i]];
  }
  for (size_t k = 0; k < count.size(); ++k) {
    if (count[k] != set.patterns[k].count) {
      return r.Error(
          fmt::format("patterns[{}].count", k),
          fmt::format("is {} but {} instances have this pattern", set.patterns[k].count, count[k]));
    }
  }
  if (set.shared_messages) return Status::Ok();  // alternatives may share messages
  std::vector<MessageId> sorted(set.messages);
  std::sort(sorted.begin(), sorted.end());
  auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end())
    return r.Error("instances.messages",
                   fmt::format("message {} is in two instances", dup->value()));
  return Status::Ok();
}

// "causal_graph": {"quantum": ns, "vertices": [[node, parent, messages, [[delay, count]...]]...]}.
Status ParseCausalGraph(const Reader& r, const nlohmann::json& g, const NodeTable& nodes,
                        CausalGraph& graph) {
  if (!g.is_object()) return r.Error("causal_graph", "expected an object");
  WEFT_ASSIGN_OR_RETURN(const nlohmann::json* f, r.Field(g, "causal_graph", "quantum"));
  WEFT_ASSIGN_OR_RETURN(graph.quantum, r.Signed(*f, "causal_graph.quantum"));
  WEFT_ASSIGN_OR_RETURN(f, r.Field(g, "causal_graph", "vertices"));
  if (!f->is_array()) return r.Error("causal_graph.vertices", "expected an array");
  for (size_t i = 0; i < f->size(); ++i) {
    std::string at = fmt::format("causal_graph.vertices[{}]", i);
    const nlohmann::json& v = (*f)[i];
    if (!v.is_array() || v.size() != 4 || !v[3].is_array()) {
      return r.Error(at, "expected [node, parent, messages, [[delay, count], ...]]");
    }
    CausalVertex vertex;
    WEFT_ASSIGN_OR_RETURN(uint64_t node, r.Unsigned(v[0], at));
    if (node >= nodes.size()) return r.Error(at, fmt::format("node {} is not in nodes", node));
    vertex.node = NodeId(uint32_t(node));
    WEFT_ASSIGN_OR_RETURN(int64_t parent, r.Signed(v[1], at));
    if (parent < -1 || parent >= int64_t(i))
      return r.Error(at, fmt::format("parent {} is not an earlier vertex", parent));
    vertex.parent = int32_t(parent);
    WEFT_ASSIGN_OR_RETURN(vertex.messages, r.Unsigned(v[2], at));
    for (const nlohmann::json& d : v[3]) {
      if (!d.is_array() || d.size() != 2) return r.Error(at, "expected a delay as [delay, count]");
      CausalDelay delay;
      WEFT_ASSIGN_OR_RETURN(delay.delay, r.Signed(d[0], at));
      WEFT_ASSIGN_OR_RETURN(delay.count, r.Unsigned(d[1], at));
      vertex.delays.push_back(delay);
    }
    graph.vertices.push_back(std::move(vertex));
  }
  return Status::Ok();
}

// The fields before the patterns: format, version, algorithm, the trace, nodes, flags.
Status ParseHeader(const Reader& r, const nlohmann::json& doc, PathSet& set) {
  WEFT_ASSIGN_OR_RETURN(const nlohmann::json* f, r.Field(doc, "top level", "format"));
  if (!f->is_string() || f->get<std::string>() != kPathsFormatName)
    return r.Error("format", "not a weft paths file");
  WEFT_ASSIGN_OR_RETURN(f, r.Field(doc, "top level", "version"));
  WEFT_ASSIGN_OR_RETURN(uint64_t version, r.Unsigned(*f, "version"));
  if (version != kPathsFormatVersion) {
    return r.Error("version", fmt::format("version {} is not supported (this weft reads {})",
                                          version, kPathsFormatVersion));
  }
  WEFT_ASSIGN_OR_RETURN(f, r.Field(doc, "top level", "algorithm"));
  WEFT_ASSIGN_OR_RETURN(set.algorithm, r.String(*f, "algorithm"));
  WEFT_ASSIGN_OR_RETURN(f, r.Field(doc, "top level", "trace_messages"));
  WEFT_ASSIGN_OR_RETURN(set.trace_messages, r.Unsigned(*f, "trace_messages"));
  if (set.trace_messages >= MessageId::kInvalidValue) {
    return r.Error("trace_messages",
                   fmt::format("{} is more messages than a trace can hold", set.trace_messages));
  }
  WEFT_ASSIGN_OR_RETURN(f, r.Field(doc, "top level", "trace_fingerprint"));
  WEFT_ASSIGN_OR_RETURN(std::string fingerprint, r.String(*f, "trace_fingerprint"));
  if (fingerprint.size() != 16 ||
      fingerprint.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return r.Error("trace_fingerprint", "expected 16 lower-case hex digits");
  }
  set.trace_fingerprint = std::stoull(fingerprint, nullptr, 16);
  WEFT_ASSIGN_OR_RETURN(f, r.Field(doc, "top level", "nodes"));
  if (!f->is_array()) return r.Error("nodes", "expected an array");
  for (size_t i = 0; i < f->size(); ++i) {
    std::string at = fmt::format("nodes[{}]", i);
    WEFT_ASSIGN_OR_RETURN(std::string name, r.String((*f)[i], at));
    if (set.nodes.Intern(name).value() != i)
      return r.Error(at, fmt::format("node '{}' appears twice", name));
  }
  for (auto [name, flag] : {std::pair("clients_aggregated", &set.clients_aggregated),
                            std::pair("shared_messages", &set.shared_messages)}) {
    auto a = doc.find(name);
    if (a == doc.end()) continue;
    if (!a->is_boolean()) return r.Error(name, "expected true or false");
    *flag = a->get<bool>();
  }
  return Status::Ok();
}

// "counters": [[name, value], ...].
Status ParseCounters(const Reader& r, const nlohmann::json& doc, CounterList& counters) {
  WEFT_ASSIGN_OR_RETURN(const nlohmann::json* f, r.Field(doc, "top level", "counters"));
  if (!f->is_array()) return r.Error("counters", "expected an array");
  for (size_t i = 0; i < f->size(); ++i) {
    std::string at = fmt::format("counters[{}]", i);
    const nlohmann::json& c = (*f)[i];
    if (!c.is_array() || c.size() != 2) return r.Error(at, "expected [name, value]");
    WEFT_ASSIGN_OR_RETURN(std::string name, r.String(c[0], at));
    WEFT_ASSIGN_OR_RETURN(int64_t value, r.Signed(c[1], at));
    counters.emplace_back(std::move(name), value);
  }
  return Status::Ok();
}

// "clock_offsets": [[node a, node b, offset, messages], ...], optional.
Status ParseClockOffsets(const Reader& r, const nlohmann::json& doc, PathSet& set) {
  auto o = doc.find("clock_offsets");
  if (o == doc.end()) return Status::Ok();
  if (!o->is_array()) return r.Error("clock_offsets", "expected an array");
  for (size_t i = 0; i < o->size(); ++i) {
    std::string at = fmt::format("clock_offsets[{}]", i);
    const nlohmann::json& row = (*o)[i];
    if (!row.is_array() || row.size() != 4)
      return r.Error(at, "expected [node a, node b, offset, messages]");
    ClockOffset offset;
    WEFT_ASSIGN_OR_RETURN(offset.a, r.String(row[0], at));
    WEFT_ASSIGN_OR_RETURN(offset.b, r.String(row[1], at));
    WEFT_ASSIGN_OR_RETURN(offset.offset, r.Signed(row[2], at));
    WEFT_ASSIGN_OR_RETURN(offset.messages, r.Unsigned(row[3], at));
    set.clock_offsets.push_back(std::move(offset));
  }
  return Status::Ok();
}

Result<PathsFile> ParseDocument(const Reader& r, const nlohmann::json& doc) {
  if (!doc.is_object()) return r.Error("top level", "expected a JSON object");
  PathsFile file;
  PathSet& set = file.paths;
  WEFT_RETURN_IF_ERROR(ParseHeader(r, doc, set));
  WEFT_RETURN_IF_ERROR(ParseCounters(r, doc, file.counters));
  WEFT_RETURN_IF_ERROR(ParseClockOffsets(r, doc, set));
  if (auto g = doc.find("causal_graph"); g != doc.end())
    WEFT_RETURN_IF_ERROR(ParseCausalGraph(r, *g, set.nodes, file.graph));
  WEFT_ASSIGN_OR_RETURN(const nlohmann::json* f, r.Field(doc, "top level", "patterns"));
  if (!f->is_array()) return r.Error("patterns", "expected an array");
  WEFT_RETURN_IF_ERROR(ParsePatterns(r, *f, set));
  WEFT_ASSIGN_OR_RETURN(f, r.Field(doc, "top level", "instances"));
  WEFT_RETURN_IF_ERROR(ParseInstances(r, *f, set));
  return file;
}

}  // namespace

Result<PathsFile> ParsePaths(std::string_view text, std::string_view source) {
  Reader reader(source);
  try {
    nlohmann::json doc = nlohmann::json::parse(text.begin(), text.end());
    return ParseDocument(reader, doc);
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 9:
    // syntax error while parsing value - ...; last read: '<text>'": keep the reason only,
    // the offset is given as a byte and the text read may be long or span lines.
    std::string what = e.what();
    size_t start = what.find("column ");
    start = start == std::string::npos ? 0 : what.find(": ", start);
    start = start == std::string::npos ? 0 : start + 2;
    std::string reason = what.substr(start, what.find("; last read", start) - start);
    return Status::Corruption("{}: byte {}: not valid JSON ({})", source, e.byte, reason);
  } catch (const std::exception& e) {
    return Status::Corruption("{}: {}", source, e.what());
  }
}

Result<PathsFile> ReadPaths(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  if (text.empty()) return Status::Corruption("{}: empty file, not a paths file", path);
  return ParsePaths(text, path);
}

}  // namespace weft
