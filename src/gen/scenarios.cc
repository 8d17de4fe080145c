// The built-in scenarios (docs/generator.md says what each models and why): their TOML is
// in src/gen/scenarios/, one file each but multitier's variants, which are made here from
// one template.
#include "gen/scenarios.h"

#include <fmt/format.h>

#include "core/file.h"
#include "gen/scenario_files.h"

namespace weft {
namespace {

constexpr Scenario kScenarios[] = {
    {"multitier",
     "Project 5 Figure 10: CLIENT -> WS1/WS2 -> AUTH, AP1/AP2 -> DB; 42 loops, "
     "~200,000 messages in 500 s, 34 path patterns"},
    {"multitier-added-delay",
     "multitier with 200 ms added at WS2 between the AUTH return and "
     "the AP call; same instances and counts"},
    {"multitier-wan",
     "multitier with two timestamps: network delays, clock offsets, 10,000 untraced "
     "clients"},
    {"wide-area",
     "WAP5 §6: a Coral/CoDeeN-like CDN; proxies, DNS, origins, DHT; one-way delays, "
     "clock offsets, untraced clients and servers; a 0.1% rare path"},
    {"children-parallel", "Figure 18: B calls C twice in parallel"},
    {"children-0-2", "Figure 18: B calls C twice in series, or not at all"},
    {"children-d-cc", "Figure 18: B calls C twice in series, or D once"},
    {"penalty-breaker",
     "Figure 18: B calls C twice or three times with identical delays, or not "
     "at all"},
    {"email",
     "mail relays over 19 nodes and 48 h: MSG hops, mostly at once, some after 10-15 s; "
     "frequent and rare routes"},
    {"shop",
     "microservices: an online shop (Go/gRPC demo shape), 12-21 RPCs per request, many "
     "repeated sequential calls; --parallelism N ~ N requests in flight"},
    {"booking",
     "microservices: train-ticket booking (Java benchmark shape), 11-30 RPCs, deep "
     "sequential chains; --parallelism N ~ N in flight"},
    {"social",
     "microservices: a social network (DeathStarBench shape), 12-24 RPCs, parallel "
     "fan-outs; --parallelism N ~ N in flight"},
};

// A file of src/gen/scenarios/, or nothing (GenScenariosTest checks every scenario has one).
std::string_view File(std::string_view name) {
  for (const ScenarioFile& f : ScenarioFiles()) {
    if (f.name == name) return f.text;
  }
  return {};
}

std::string Replace(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = text.find(from, pos)) != std::string_view::npos;
       pos = hit + from.size()) {
    out.append(text.substr(pos, hit - pos));
    out.append(to);
  }
  out.append(text.substr(pos));
  return out;
}

}  // namespace

std::span<const Scenario> BuiltinScenarios() { return kScenarios; }

Result<std::string> ScenarioConfigText(std::string_view name) {
  // multitier.toml.in is Project 5 Figure 10. %EXTRA% marks the WS -> AP call of each
  // request type, where multitier-added-delay adds 200 ms on WS2 only (§7.2); %HEADER%
  // each variant's own comment.
  const std::string_view multitier = File("multitier.toml.in");
  if (name == "multitier") {
    return Replace(Replace(multitier, "%EXTRA%", ""), "%HEADER%", "");
  }
  if (name == "multitier-added-delay") {
    std::string text = Replace(multitier, "%EXTRA%", ", extra = { WS2 = \"200ms\" }");
    return Replace(text, "%HEADER%",
                   "# multitier-added-delay: the same with 200 ms more at WS2 between the AUTH\n"
                   "# return and the AP call (the `extra` of each WS -> AP call). Extra delays\n"
                   "# do not move the loops' schedule, so with the same seed the instances,\n"
                   "# choices and counts equal multitier's exactly.\n");
  }
  if (name == "multitier-wan") {
    // At the paper's parallelism (Project 5 Figure 17; docs/nesting.md): 0.28 of
    // multitier's loops give the per-node parallelism of 1.6 that the paper measured.
    std::string text =
        Replace(Replace(multitier, "%EXTRA%", ""), "%HEADER%",
                "# multitier-wan: multitier with a network (the [network] table at the end),\n"
                "# at the paper's parallelism.\nparallelism = 0.28\n");
    return text + std::string(File("multitier-network.toml"));
  }
  for (const Scenario& s : kScenarios) {
    if (s.name == name) return std::string(File(fmt::format("{}.toml", name)));
  }
  std::vector<std::string_view> known;
  for (const Scenario& s : kScenarios) known.push_back(s.name);
  return Status::NotFound("unknown scenario '{}' (built-in: {}; or give a .toml file)", name,
                          fmt::join(known, ", "));
}

Result<GenConfig> LoadGenConfig(const std::string& scenario_or_path) {
  for (const Scenario& s : kScenarios) {
    if (s.name != scenario_or_path) continue;
    WEFT_ASSIGN_OR_RETURN(std::string text, ScenarioConfigText(s.name));
    return ParseGenConfig(text, fmt::format("{}.toml", s.name));
  }
  const bool looks_like_file = scenario_or_path == "-" ||
                               scenario_or_path.find('/') != std::string::npos ||
                               scenario_or_path.find('.') != std::string::npos;
  if (!looks_like_file) return ScenarioConfigText(scenario_or_path).status();
  WEFT_ASSIGN_OR_RETURN(std::string text, ReadFile(scenario_or_path));
  return ParseGenConfig(text, scenario_or_path == "-" ? "<stdin>" : scenario_or_path);
}

}  // namespace weft
