// TOML -> GenConfig (Project 5 §7.1.1 maketrace configuration). Each tracelet is then
// checked against the causality convention of paths/path_set.h by tracelet_check.cc.
//
// toml++ reports syntax errors by throwing toml::parse_error; this file is the edge where
// that exception is caught and becomes a Status naming file, line and column. Everything
// after parsing walks the toml++ tree and reports errors with the line of the offending
// key or value.
#include "gen/config.h"

#include <absl/container/flat_hash_map.h>
#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <span>
#include <tuple>
#include <utility>

#include "gen/tracelet_check.h"

namespace weft {
namespace {

constexpr std::string_view kTopKeys[] = {"seed",     "start",       "duration",
                                         "messages", "parallelism", "deviation",
                                         "tracelet", "network",     "timestamps"};
constexpr std::string_view kTraceletKeys[] = {"name", "instances", "think", "steps", "choose"};
constexpr std::string_view kStepKeys[] = {"op",    "from", "to",  "delay", "sd",
                                          "after", "id",   "ret", "extra"};
constexpr std::string_view kDelayKeys[] = {"mean", "sd", "weight"};
constexpr std::string_view kNetworkKeys[] = {"delay",    "jitter",  "asymmetry",
                                             "clock_sd", "clients", "untraced"};

int LineOf(const toml::node& node) { return int(node.source().begin.line); }

std::optional<double> AsNumber(const toml::node& node) {
  if (auto i = node.as_integer()) return double(i->get());
  if (auto f = node.as_floating_point()) return f->get();
  return std::nullopt;
}

class ConfigParser {
 public:
  explicit ConfigParser(std::string_view source) : source_(source) {}

  Result<GenConfig> Parse(const toml::table& root);

 private:
  template <typename... Args>
  Status Error(int line, fmt::format_string<Args...> f, Args&&... args) const {
    return Status::InvalidArgument("{}:{}: {}", source_, line,
                                   OneLine(fmt::format(f, std::forward<Args>(args)...)));
  }
  Status CheckKeys(const toml::table& table, std::span<const std::string_view> known,
                   std::string_view where) const;
  Result<std::string_view> String(const toml::node& node, std::string_view key) const;
  Result<TimeNs> Duration(const toml::node& node, std::string_view key) const;
  // A duration, or [lo, hi] with lo <= hi; one duration gives lo = hi.
  Result<std::pair<TimeNs, TimeNs>> DurationRange(const toml::node& node,
                                                  std::string_view key) const;
  Result<uint32_t> NodeIndex(const toml::node& node, std::string_view key);
  Result<uint32_t> NodeIndexOf(std::string_view name, int line, std::string_view key);
  Result<NodeRef> ParseNodeRef(const toml::node& node, std::string_view key,
                               const Tracelet& tracelet);
  Result<Tracelet> ParseTracelet(const toml::node& node);
  Status ParseChoose(const toml::node& node, Tracelet& tracelet);
  Status ParseStep(const toml::node& node, size_t index, Tracelet& tracelet,
                   const absl::flat_hash_map<std::string, uint32_t>& ids);
  Result<std::vector<DelayComponent>> ParseDelay(const toml::table& step);
  Status ParseNetwork(const toml::node& node);

  std::string source_;
  GenConfig config_;
  absl::flat_hash_map<std::string, uint32_t> node_index_;
};

Status ConfigParser::CheckKeys(const toml::table& table, std::span<const std::string_view> known,
                               std::string_view where) const {
  for (auto&& [key, value] : table) {
    if (std::find(known.begin(), known.end(), key.str()) != known.end()) continue;
    return Error(int(key.source().begin.line), "unknown key '{}' in {} (known: {})", key.str(),
                 where, fmt::join(known, ", "));
  }
  return Status::Ok();
}

Result<std::string_view> ConfigParser::String(const toml::node& node, std::string_view key) const {
  if (auto s = node.as_string()) return std::string_view(s->get());
  return Error(LineOf(node), "'{}' must be a string", key);
}

Result<TimeNs> ConfigParser::Duration(const toml::node& node, std::string_view key) const {
  auto s = node.as_string();
  if (!s) return Error(LineOf(node), "'{}' must be a duration string such as \"50ms\"", key);
  Result<TimeNs> d = ParseDuration(s->get());
  if (!d.ok()) return Error(LineOf(node), "{}: {}", key, d.status().message());
  if (*d < 0) return Error(LineOf(node), "{}: duration '{}' is negative", key, s->get());
  const TimeNs limit = key == "duration" ? kMaxDuration
                       : key == "think"  ? kMaxThink
                                         : kMaxStepDelay;
  if (*d > limit) {
    return Error(LineOf(node), "{}: '{}' is longer than the limit of {}", key, s->get(),
                 FormatDuration(limit));
  }
  return *d;
}

Result<std::pair<TimeNs, TimeNs>> ConfigParser::DurationRange(const toml::node& node,
                                                              std::string_view key) const {
  if (node.is_string()) {
    WEFT_ASSIGN_OR_RETURN(TimeNs d, Duration(node, key));
    return std::pair(d, d);
  }
  const toml::array* a = node.as_array();
  if (!a || a->size() != 2) {
    return Error(LineOf(node), "'{}' must be a duration or [lo, hi], e.g. [\"0.5s\", \"1s\"]", key);
  }
  WEFT_ASSIGN_OR_RETURN(TimeNs lo, Duration(*a->get(0), key));
  WEFT_ASSIGN_OR_RETURN(TimeNs hi, Duration(*a->get(1), key));
  if (hi < lo) return Error(LineOf(node), "{} = [lo, hi] needs lo <= hi", key);
  return std::pair(lo, hi);
}

Result<uint32_t> ConfigParser::NodeIndex(const toml::node& node, std::string_view key) {
  WEFT_ASSIGN_OR_RETURN(std::string_view name, String(node, key));
  return NodeIndexOf(name, LineOf(node), key);
}

Result<uint32_t> ConfigParser::NodeIndexOf(std::string_view name, int line, std::string_view key) {
  // Node names become whitespace-separated fields of the text trace format.
  bool ok = !name.empty() && name[0] != '$' && name[0] != '#' &&
            std::all_of(name.begin(), name.end(), [](char c) { return std::isgraph(uint8_t(c)); });
  if (!ok) {
    return Error(line,
                 "bad node name '{}' for '{}' (want letters, digits, punctuation; "
                 "no spaces; not starting with $ or #)",
                 name, key);
  }
  auto [it, inserted] = node_index_.try_emplace(std::string(name), uint32_t(config_.nodes.size()));
  if (inserted) config_.nodes.emplace_back(name);
  return it->second;
}

Result<NodeRef> ConfigParser::ParseNodeRef(const toml::node& node, std::string_view key,
                                           const Tracelet& tracelet) {
  WEFT_ASSIGN_OR_RETURN(std::string_view name, String(node, key));
  if (!name.starts_with('$')) {
    WEFT_ASSIGN_OR_RETURN(uint32_t index, NodeIndex(node, key));
    return NodeRef{-1, index};
  }
  std::string_view var = name.substr(1);
  for (size_t i = 0; i < tracelet.variables.size(); ++i) {
    if (tracelet.variables[i].name == var) return NodeRef{int32_t(i), 0};
  }
  std::vector<std::string_view> known;
  for (const ChooseVariable& v : tracelet.variables) known.push_back(v.name);
  if (known.empty()) {
    return Error(LineOf(node), "unknown variable '{}' in '{}' (tracelet '{}' has no choose table)",
                 name, key, tracelet.name);
  }
  return Error(LineOf(node), "unknown variable '{}' in '{}' (choose defines: {})", name, key,
               fmt::join(known, ", "));
}

Result<GenConfig> ConfigParser::Parse(const toml::table& root) {
  WEFT_RETURN_IF_ERROR(CheckKeys(root, kTopKeys, "the top level"));
  config_.source = source_;
  if (const toml::node* n = root.get("seed")) {
    auto i = n->as_integer();
    if (!i || i->get() < 0) return Error(LineOf(*n), "'seed' must be a non-negative integer");
    config_.seed = uint64_t(i->get());
  }
  if (const toml::node* n = root.get("start")) {
    if (auto i = n->as_integer()) {
      if (i->get() > kMaxStart / kSecond || i->get() < -kMaxStart / kSecond) {
        return Error(LineOf(*n), "'start' is out of range (at most {} s from 1970)",
                     kMaxStart / kSecond);
      }
      config_.start = i->get() * kSecond;  // an integer is whole seconds
    } else if (auto s = n->as_string()) {
      Result<TimeNs> t = ParseTimestamp(s->get());
      if (!t.ok()) return Error(LineOf(*n), "start: {}", t.status().message());
      config_.start = *t;
    } else {
      return Error(LineOf(*n), "'start' must be a timestamp string or integer seconds");
    }
    if (config_.start > kMaxStart || config_.start < -kMaxStart) {
      return Error(LineOf(*n), "'start' is out of range (at most {} s from 1970)",
                   kMaxStart / kSecond);
    }
  }
  const toml::node* duration = root.get("duration");
  const toml::node* messages = root.get("messages");
  if (duration && messages) {
    return Error(LineOf(*messages), "give 'duration' or 'messages', not both");
  }
  if (duration) {
    WEFT_ASSIGN_OR_RETURN(config_.duration, Duration(*duration, "duration"));
    if (config_.duration == 0) return Error(LineOf(*duration), "'duration' must be positive");
  }
  if (messages) {
    auto i = messages->as_integer();
    if (!i || i->get() <= 0)
      return Error(LineOf(*messages), "'messages' must be a positive integer");
    config_.messages = uint64_t(i->get());
  }
  for (std::string_view key : {"parallelism", "deviation"}) {
    const toml::node* n = root.get(key);
    if (!n) continue;
    std::optional<double> v = AsNumber(*n);
    const double limit = key == "parallelism" ? kMaxParallelism : kMaxDeviation;
    if (!v || !std::isfinite(*v) || *v < 0 || (key == "parallelism" && *v == 0) || *v > limit) {
      return Error(LineOf(*n), "'{}' must be a {} number up to {}", key,
                   key == "parallelism" ? "positive" : "non-negative", limit);
    }
    (key == "parallelism" ? config_.parallelism : config_.deviation) = *v;
  }
  if (const toml::node* n = root.get("timestamps")) {
    std::optional<std::string_view> v = n->value<std::string_view>();
    if (!v || (*v != "both" && *v != "send"))
      return Error(LineOf(*n), "'timestamps' must be \"both\" or \"send\"");
    config_.send_times_only = *v == "send";
  }
  const toml::node* tracelets = root.get("tracelet");
  if (!tracelets) return Error(1, "no [[tracelet]] tables: a config needs at least one");
  const toml::array* array = tracelets->as_array();
  if (!array || array->empty()) {
    return Error(LineOf(*tracelets), "'tracelet' must be an array of tables ([[tracelet]])");
  }
  for (const toml::node& node : *array) {
    WEFT_ASSIGN_OR_RETURN(Tracelet t, ParseTracelet(node));
    for (const Tracelet& other : config_.tracelets) {
      if (other.name == t.name) return Error(LineOf(node), "duplicate tracelet name '{}'", t.name);
    }
    config_.tracelets.push_back(std::move(t));
  }
  // After the tracelets, so that 'untraced' names nodes they use.
  if (const toml::node* n = root.get("network")) WEFT_RETURN_IF_ERROR(ParseNetwork(*n));
  return std::move(config_);
}

Result<Tracelet> ConfigParser::ParseTracelet(const toml::node& node) {
  const toml::table* table = node.as_table();
  if (!table) return Error(LineOf(node), "each 'tracelet' must be a table");
  WEFT_RETURN_IF_ERROR(CheckKeys(*table, kTraceletKeys, "[[tracelet]]"));
  const int line = LineOf(node);
  Tracelet t;
  const toml::node* name = table->get("name");
  if (!name) return Error(line, "[[tracelet]] needs a 'name'");
  WEFT_ASSIGN_OR_RETURN(std::string_view name_text, String(*name, "name"));
  if (name_text.empty()) return Error(LineOf(*name), "tracelet 'name' must not be empty");
  t.name = name_text;
  if (const toml::node* n = table->get("instances")) {
    auto i = n->as_integer();
    if (!i || i->get() < 0 || i->get() > 1'000'000) {
      return Error(LineOf(*n), "'instances' must be an integer from 0 to 1000000");
    }
    t.instances = uint32_t(i->get());
  }
  if (const toml::node* n = table->get("think")) {
    WEFT_ASSIGN_OR_RETURN(auto think, DurationRange(*n, "think"));
    std::tie(t.think_lo, t.think_hi) = think;
  }
  const toml::node* steps = table->get("steps");
  const toml::node* choose = table->get("choose");
  // Nodes are numbered in order of first mention in the steps, a variable's nodes where it
  // is first used, so that traces list them in the order a request meets them. Errors
  // are left to the full parse below.
  if (const toml::array* a = steps ? steps->as_array() : nullptr) {
    for (const toml::node& step : *a) {
      const toml::table* st = step.as_table();
      for (const char* key : {"from", "to"}) {
        const toml::node* ref = st ? st->get(key) : nullptr;
        if (!ref || !ref->is_string()) continue;
        const std::string& ref_name = ref->as_string()->get();
        const toml::node* var = ref_name.starts_with('$') && choose && choose->is_table()
                                    ? choose->as_table()->get(ref_name.substr(1))
                                    : nullptr;
        if (!ref_name.starts_with('$')) {
          (void)NodeIndex(*ref, key);
        } else if (const toml::table* weights = var ? var->as_table() : nullptr) {
          for (auto&& [node_name, weight] : *weights) {
            (void)NodeIndexOf(node_name.str(), LineOf(weight), "choose");
          }
        }
      }
    }
  }
  if (choose) WEFT_RETURN_IF_ERROR(ParseChoose(*choose, t));
  if (!steps) return Error(line, "tracelet '{}' has no 'steps'", t.name);
  const toml::array* array = steps->as_array();
  if (!array || array->empty()) {
    return Error(LineOf(*steps), "'steps' of tracelet '{}' must be a non-empty array of tables",
                 t.name);
  }
  // Every step id first, so that a reference to a later step says so.
  absl::flat_hash_map<std::string, uint32_t> ids;
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::table* step = array->get(i)->as_table();
    const toml::node* id = step ? step->get("id") : nullptr;
    if (!id || !id->is_string()) continue;
    if (!ids.try_emplace(id->as_string()->get(), uint32_t(i)).second) {
      return Error(LineOf(*id), "duplicate step id '{}' in tracelet '{}'", id->as_string()->get(),
                   t.name);
    }
  }
  if (array->size() > kMaxSteps) {
    return Error(LineOf(*steps), "tracelet '{}' has {} steps; at most {}", t.name, array->size(),
                 kMaxSteps);
  }
  for (size_t i = 0; i < array->size(); ++i) {
    WEFT_RETURN_IF_ERROR(ParseStep(*array->get(i), i, t, ids));
  }
  WEFT_RETURN_IF_ERROR(CheckTraceletStructure(t, config_.nodes, source_));
  return t;
}

Status ConfigParser::ParseChoose(const toml::node& node, Tracelet& tracelet) {
  const toml::table* table = node.as_table();
  if (!table) return Error(LineOf(node), "'choose' must be a table of variables");
  for (auto&& [key, value] : *table) {
    const int line = int(key.source().begin.line);
    std::string_view name = key.str();
    bool ident = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return std::isalnum(uint8_t(c)) || c == '_';
    });
    if (!ident) return Error(line, "bad variable name '{}' (letters, digits and _)", name);
    const toml::table* weights = value.as_table();
    if (!weights || weights->empty()) {
      return Error(line, "choose.{} must be a table of node = weight, e.g. {{ WS1 = 3, WS2 = 2 }}",
                   name);
    }
    ChooseVariable var;
    var.name = name;
    double total = 0;
    for (auto&& [node_key, weight] : *weights) {
      std::optional<double> w = AsNumber(weight);
      if (!w || !std::isfinite(*w) || *w <= 0) {
        return Error(LineOf(weight), "weight of '{}' in choose.{} must be a positive number",
                     node_key.str(), name);
      }
      WEFT_ASSIGN_OR_RETURN(uint32_t index, NodeIndexOf(node_key.str(), LineOf(weight), "choose"));
      var.nodes.push_back(index);
      total += *w;
      var.cumulative.push_back(total);
    }
    for (double& c : var.cumulative) c /= total;
    var.cumulative.back() = 1.0;
    tracelet.variables.push_back(std::move(var));
  }
  return Status::Ok();
}

Result<std::vector<DelayComponent>> ConfigParser::ParseDelay(const toml::table& step) {
  const toml::node* delay = step.get("delay");
  const toml::node* sd = step.get("sd");
  std::vector<DelayComponent> out;
  if (!delay || delay->is_string()) {
    DelayComponent c;
    if (delay) {
      WEFT_ASSIGN_OR_RETURN(c.mean, Duration(*delay, "delay"));
    }
    if (sd) {
      WEFT_ASSIGN_OR_RETURN(c.sd, Duration(*sd, "sd"));
    }
    out.push_back(c);
    return out;
  }
  const toml::array* array = delay->as_array();
  if (!array || array->empty()) {
    return Error(LineOf(*delay),
                 "'delay' must be a duration or a non-empty array of "
                 "{{ mean, sd, weight }} tables");
  }
  if (sd) {
    return Error(LineOf(*sd),
                 "'sd' goes inside each {{ mean, sd, weight }} when 'delay' is a list");
  }
  for (const toml::node& item : *array) {
    const toml::table* t = item.as_table();
    if (!t)
      return Error(LineOf(item), "each 'delay' component must be a {{ mean, sd, weight }} table");
    WEFT_RETURN_IF_ERROR(CheckKeys(*t, kDelayKeys, "a delay component"));
    DelayComponent c;
    const toml::node* mean = t->get("mean");
    if (!mean) return Error(LineOf(item), "a delay component needs a 'mean'");
    WEFT_ASSIGN_OR_RETURN(c.mean, Duration(*mean, "mean"));
    if (const toml::node* n = t->get("sd")) {
      WEFT_ASSIGN_OR_RETURN(c.sd, Duration(*n, "sd"));
    }
    if (const toml::node* n = t->get("weight")) {
      std::optional<double> w = AsNumber(*n);
      if (!w || !std::isfinite(*w) || *w <= 0) {
        return Error(LineOf(*n), "'weight' must be a positive number");
      }
      c.weight = *w;
    }
    out.push_back(c);
  }
  return out;
}

Status ConfigParser::ParseNetwork(const toml::node& node) {
  const toml::table* table = node.as_table();
  if (!table) return Error(LineOf(node), "'network' must be a table ([network])");
  WEFT_RETURN_IF_ERROR(CheckKeys(*table, kNetworkKeys, "[network]"));
  NetworkConfig& net = config_.network;
  net.enabled = true;
  if (const toml::node* n = table->get("delay")) {
    WEFT_ASSIGN_OR_RETURN(auto delay, DurationRange(*n, "delay"));
    std::tie(net.delay_lo, net.delay_hi) = delay;
  }
  if (const toml::node* n = table->get("jitter")) {
    WEFT_ASSIGN_OR_RETURN(net.jitter, Duration(*n, "jitter"));
  }
  if (const toml::node* n = table->get("clock_sd")) {
    WEFT_ASSIGN_OR_RETURN(net.clock_sd, Duration(*n, "clock_sd"));
  }
  if (const toml::node* n = table->get("asymmetry")) {
    std::optional<double> v = AsNumber(*n);
    if (!v || !(*v >= 0 && *v <= 0.9)) {
      return Error(LineOf(*n), "'asymmetry' must be a number from 0 to 0.9");
    }
    net.asymmetry = *v;
  }
  if (const toml::node* n = table->get("clients")) {
    auto i = n->as_integer();
    if (!i || i->get() < 0 || i->get() > kMaxClients) {
      return Error(LineOf(*n), "'clients' must be an integer from 0 to {}", kMaxClients);
    }
    net.clients = uint32_t(i->get());
  }
  if (const toml::node* n = table->get("untraced")) {
    const toml::array* a = n->as_array();
    if (!a) return Error(LineOf(*n), "'untraced' must be a list of node names");
    for (const toml::node& item : *a) {
      WEFT_ASSIGN_OR_RETURN(std::string_view name, String(item, "untraced"));
      auto it = node_index_.find(std::string(name));
      if (it == node_index_.end()) {
        return Error(LineOf(item), "untraced node '{}' is in no tracelet", name);
      }
      net.untraced.push_back(it->second);
    }
  }
  return Status::Ok();
}

Status ConfigParser::ParseStep(const toml::node& node, size_t index, Tracelet& tracelet,
                               const absl::flat_hash_map<std::string, uint32_t>& ids) {
  const toml::table* table = node.as_table();
  if (!table)
    return Error(LineOf(node), "step {} of tracelet '{}' must be a table", index + 1,
                 tracelet.name);
  WEFT_RETURN_IF_ERROR(CheckKeys(*table, kStepKeys, "a step"));
  StepTemplate step;
  step.line = LineOf(node);
  if (const toml::node* n = table->get("id")) {
    WEFT_ASSIGN_OR_RETURN(std::string_view id, String(*n, "id"));
    if (id.empty()) return Error(LineOf(*n), "step 'id' must not be empty");
    step.id = id;
  }
  const std::string label = step.id.empty() ? fmt::format("step {}", index + 1)
                                            : fmt::format("step {} ('{}')", index + 1, step.id);
  const toml::node* op = table->get("op");
  if (!op) return Error(step.line, "{} has no 'op' (call, ret or msg)", label);
  WEFT_ASSIGN_OR_RETURN(std::string_view op_text, String(*op, "op"));
  if (op_text == "call") {
    step.kind = MessageKind::kCall;
  } else if (op_text == "ret") {
    step.kind = MessageKind::kReturn;
  } else if (op_text == "msg") {
    step.kind = MessageKind::kMessage;
  } else {
    return Error(LineOf(*op), "bad op '{}' in {} (want call, ret or msg)", op_text, label);
  }
  // Resolves a step id named by `after` or `ret`: it must name an earlier step.
  auto earlier_step = [&](const toml::node& n, std::string_view key) -> Result<uint32_t> {
    WEFT_ASSIGN_OR_RETURN(std::string_view id, String(n, key));
    auto it = ids.find(std::string(id));
    if (it == ids.end()) {
      return Error(LineOf(n), "{}: {} = '{}' names no step of tracelet '{}'", label, key, id,
                   tracelet.name);
    }
    if (it->second >= index) {
      return Error(LineOf(n), "{}: {} = '{}' names step {}, which does not come before it ({})",
                   label, key, id, it->second + 1,
                   key == "ret" ? "a ret must come after the call it answers"
                                : "a step may only wait for earlier steps");
    }
    return it->second;
  };
  const toml::node* ret = table->get("ret");
  if (step.kind == MessageKind::kReturn) {
    if (!ret)
      return Error(step.line, "{}: a ret step needs ret = \"<id of the call it answers>\"", label);
    WEFT_ASSIGN_OR_RETURN(uint32_t call, earlier_step(*ret, "ret"));
    const StepTemplate& c = tracelet.steps[call];
    if (c.kind != MessageKind::kCall) {
      return Error(LineOf(*ret), "{}: ret = '{}' names a {} step, not a call", label, c.id,
                   c.kind == MessageKind::kReturn ? "ret" : "msg");
    }
    step.answers = int32_t(call);
    step.from = c.to;
    step.to = c.from;
    for (std::string_view key : {"from", "to"}) {
      const toml::node* n = table->get(key);
      if (!n) continue;
      WEFT_ASSIGN_OR_RETURN(NodeRef r, ParseNodeRef(*n, key, tracelet));
      if (!(r == (key == "from" ? step.from : step.to))) {
        return Error(LineOf(*n), "{}: '{}' of a ret must be the {} of call '{}' (or leave it out)",
                     label, key, key == "from" ? "'to'" : "'from'", c.id);
      }
    }
  } else {
    if (ret) return Error(LineOf(*ret), "{}: 'ret' is only for op = \"ret\"", label);
    for (std::string_view key : {"from", "to"}) {
      const toml::node* n = table->get(key);
      if (!n) return Error(step.line, "{} needs '{}'", label, key);
      WEFT_ASSIGN_OR_RETURN(NodeRef r, ParseNodeRef(*n, key, tracelet));
      (key == "from" ? step.from : step.to) = r;
    }
  }
  WEFT_ASSIGN_OR_RETURN(step.delay, ParseDelay(*table));
  if (const toml::node* n = table->get("extra")) {
    const toml::table* extra = n->as_table();
    if (!extra) return Error(LineOf(*n), "'extra' must be a table of node = duration");
    for (auto&& [key, value] : *extra) {
      WEFT_ASSIGN_OR_RETURN(uint32_t node_index,
                            NodeIndexOf(key.str(), int(key.source().begin.line), "extra"));
      WEFT_ASSIGN_OR_RETURN(TimeNs d, Duration(value, "extra"));
      step.extra.push_back(ExtraDelay{node_index, d});
      tracelet.has_extra = true;
    }
  }
  if (const toml::node* n = table->get("after")) {
    if (n->is_string()) {
      WEFT_ASSIGN_OR_RETURN(uint32_t a, earlier_step(*n, "after"));
      step.after.push_back(a);
    } else if (const toml::array* a = n->as_array(); a && !a->empty()) {
      for (const toml::node& item : *a) {
        WEFT_ASSIGN_OR_RETURN(uint32_t s, earlier_step(item, "after"));
        step.after.push_back(s);
      }
    } else {
      return Error(LineOf(*n), "{}: 'after' must be a step id or a non-empty list of them", label);
    }
    if (index == 0) return Error(LineOf(*n), "{}: the first step cannot wait for another", label);
  } else if (index > 0) {
    step.after.push_back(uint32_t(index - 1));  // default: the previous step
  }
  tracelet.steps.push_back(std::move(step));
  return Status::Ok();
}

}  // namespace

Status CheckGenLimits(const GenConfig& c) {
  if (c.start > kMaxStart || c.start < -kMaxStart) {
    return Status::InvalidArgument("start {} is out of range (at most {} s from 1970)",
                                   FormatTimestamp(c.start), kMaxStart / kSecond);
  }
  if (c.duration <= 0 || c.duration > kMaxDuration) {
    return Status::InvalidArgument("duration must be positive and at most {}",
                                   FormatDuration(kMaxDuration));
  }
  if (!(c.parallelism > 0 && c.parallelism <= kMaxParallelism)) {
    return Status::InvalidArgument("parallelism must be above 0 and at most {}", kMaxParallelism);
  }
  if (!(c.deviation >= 0 && c.deviation <= kMaxDeviation)) {
    return Status::InvalidArgument("deviation must be from 0 to {}", kMaxDeviation);
  }
  return Status::Ok();
}

Result<GenConfig> ParseGenConfig(std::string_view toml_text, std::string_view source) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument("{}:{}:{}: {}", source, e.source().begin.line,
                                   e.source().begin.column, OneLine(e.description()));
  } catch (const std::exception& e) {
    return Status::InvalidArgument("{}: {}", source, OneLine(e.what()));
  }
  ConfigParser parser(source);
  return parser.Parse(root);
}

}  // namespace weft
