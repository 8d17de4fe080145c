// ExplainAdvice: the advice per tracepoint as `weft query --explain` prints it, in the
// notation of Pivot Tracing's Figure 4 (OBSERVE, UNPACK, FILTER, PACK, EMIT).
#include <fmt/format.h>

#include "query/advice.h"
#include "query/query.h"

namespace weft::query {
namespace {

// "a, b", or "()" for an empty tuple (a join that only counts).
std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "()" : out;
}

// What a unit's tuples hold: its packed columns, a multiplicity when they merge, and the
// partial aggregates.
std::vector<std::string> PackedNames(const CompiledQuery& q, const Unit& unit) {
  std::vector<std::string> names = unit.output_names;
  if (unit.mode == PackMode::kGrouped) names.push_back("COUNT");
  for (uint32_t g : unit.partials) names.push_back(q.aggregates[g].text);
  return names;
}

std::string PackOperation(const Unit& unit) {
  switch (unit.mode) {
    case PackMode::kAll:
      return "PACK-ALL";
    case PackMode::kGrouped:
      return "PACK-GROUPED";
    case PackMode::kFirst:
      return unit.n == 1 ? "PACK-FIRST" : fmt::format("PACK-FIRSTN({})", unit.n);
    case PackMode::kRecent:
      return unit.n == 1 ? "PACK-RECENT" : fmt::format("PACK-RECENTN({})", unit.n);
  }
  return "";
}

void ExplainUnit(const CompiledQuery& q, int32_t u, std::string& out) {
  const Unit& unit = q.units[size_t(u)];
  std::string who = unit.parent < 0
                        ? "the answered query"
                        : fmt::format("joined to {}", q.units[size_t(unit.parent)].alias);
  if (!unit.description.empty() && unit.parent >= 0) who = unit.description + ", " + who;
  out += fmt::format("  advice {} ({}):\n", unit.alias, who);
  if (!unit.observe_names.empty()) out += fmt::format("    OBSERVE {}\n", Join(unit.observe_names));
  for (const CompiledExpr& f : unit.filter_before_unpack)
    out += fmt::format("    FILTER {}\n", f.text);
  for (int32_t c : unit.children) {
    out += fmt::format("    UNPACK {}\n", Join(PackedNames(q, q.units[size_t(c)])));
  }
  for (const CompiledExpr& f : unit.filter) out += fmt::format("    FILTER {}\n", f.text);
  if (unit.parent >= 0) {
    out += fmt::format("    {} {}\n", PackOperation(unit), Join(PackedNames(q, unit)));
    return;
  }
  std::vector<std::string> emitted;
  for (const EmitSpec::Column& c : q.emit.columns) {
    if (c.aggregate >= 0) {
      emitted.push_back(q.aggregates[size_t(c.aggregate)].text);
    } else if (c.group_key >= 0) {
      emitted.push_back(q.emit.group_keys[size_t(c.group_key)].text);
    } else {
      emitted.push_back(q.emit.plain[size_t(c.expr)].text);
    }
  }
  if (!q.emit.aggregated) {
    out += fmt::format("    EMIT {}\n", Join(emitted));
    return;
  }
  std::vector<std::string> keys;
  for (const CompiledExpr& k : q.emit.group_keys) keys.push_back(k.text);
  out +=
      fmt::format("    EMIT {}{}\n", Join(emitted), keys.empty() ? "" : " GROUPBY " + Join(keys));
}

}  // namespace

std::string ExplainAdvice(const CompiledQuery& query) {
  std::string out;
  for (size_t t = 0; t < query.advice.size(); ++t) {
    if (query.advice[t].empty()) continue;
    out += query.tracepoints[t].name + "\n";
    for (const CompiledQuery::Woven& w : query.advice[t]) {
      ExplainUnit(query, w.unit, out);
    }
  }
  return out;
}

}  // namespace weft::query
