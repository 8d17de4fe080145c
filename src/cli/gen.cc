// weft gen: maketrace (Project 5 §7.1.1), a synthetic trace with ground truth from a
// built-in scenario or a TOML config (docs/generator.md).
#include "gen/gen.h"

#include <fmt/format.h>

#include <cstdio>

#include "cli/command.h"
#include "core/file.h"
#include "trace/io.h"

namespace weft::cli {
namespace {

struct GenFlags {
  std::string input, output, duration;
  uint64_t messages = 0, seed = 0;
  double parallelism = 1, deviation = 1;
  bool list = false, print_config = false, send_times_only = false;
};

Status RunGen(const CLI::App& cmd, const GenFlags& f) {
  if (f.list) {
    for (const Scenario& s : BuiltinScenarios()) {
      fmt::print("{:<22} {}\n", s.name, s.description);
    }
    return Status::Ok();
  }
  if (f.input.empty()) {
    return Status::InvalidArgument(
        "give a scenario or a config file (weft gen --list shows the "
        "built-in scenarios)");
  }
  if (f.print_config) {
    bool builtin = false;
    for (const Scenario& s : BuiltinScenarios()) builtin |= s.name == f.input;
    Result<std::string> text = builtin ? ScenarioConfigText(f.input) : ReadFile(f.input);
    if (!text.ok()) return text.status();
    fmt::print("{}", *text);
    return Status::Ok();
  }
  if (f.output.empty()) return Status::InvalidArgument("give the output trace with -o FILE");
  WEFT_ASSIGN_OR_RETURN(GenConfig config, LoadGenConfig(f.input));
  if (cmd.count("--messages")) {
    if (f.messages == 0) return Status::InvalidArgument("--messages must be positive");
    config.messages = f.messages;
  }
  if (cmd.count("--duration")) {
    Result<TimeNs> d = ParseDuration(f.duration);
    if (!d.ok()) return Status::InvalidArgument("--duration: {}", d.status().message());
    if (*d <= 0) return Status::InvalidArgument("--duration must be positive");
    config.duration = *d;
    config.messages = 0;
  }
  if (cmd.count("--seed")) config.seed = f.seed;
  if (cmd.count("--parallelism")) {
    if (!(f.parallelism > 0)) return Status::InvalidArgument("--parallelism must be positive");
    config.parallelism = f.parallelism;
  }
  if (cmd.count("--deviation")) {
    if (!(f.deviation >= 0)) return Status::InvalidArgument("--deviation must not be negative");
    config.deviation = f.deviation;
  }
  if (f.send_times_only) config.send_times_only = true;
  GenSummary summary;
  WEFT_ASSIGN_OR_RETURN(Trace trace, MakeTrace(config, &summary));
  WEFT_RETURN_IF_ERROR(SaveTrace(trace, f.output));
  fmt::print(stderr, "{}\n", FormatGenSummary(summary));
  return Status::Ok();
}

}  // namespace

void AddGenCommand(CLI::App& app, Status& result) {
  auto* cmd = app.add_subcommand(
      "gen", "Generate a synthetic trace with ground truth from tracelets (maketrace)");
  cmd->footer(
      "SCENARIO is a built-in scenario (--list shows them) or a TOML config file; the config\n"
      "format is in docs/generator.md. The output is binary for .weft names, text otherwise.\n\n"
      "Examples:\n"
      "  weft gen multitier -o mt.weft\n"
      "  weft gen multitier --messages 2000000 --seed 7 -o big.weft\n"
      "  weft gen children-parallel --parallelism 4 --deviation 2 -o cp.trace\n"
      "  weft gen shop --parallelism 4 --send-times-only -o shop4.weft\n"
      "  weft gen email --print-config > mail.toml && weft gen mail.toml -o mail.weft\n");
  static GenFlags f;
  cmd->add_option("scenario", f.input, "Built-in scenario name or TOML config file (- for stdin)");
  cmd->add_option("-o,--output", f.output,
                  "Trace to write (.weft binary, else text; - for stdout)");
  auto* messages = cmd->add_option("--messages", f.messages,
                                   "Length in messages (whole paths: stops starting new ones)");
  cmd->add_option("--duration", f.duration, "Length in time, e.g. 500s, 2h")->excludes(messages);
  cmd->add_option("--seed", f.seed, "Random seed (default: the config's)");
  cmd->add_option("--parallelism", f.parallelism, "Factor on every tracelet's loop count");
  cmd->add_option("--deviation", f.deviation, "Factor on every delay's standard deviation");
  cmd->add_flag("--send-times-only", f.send_times_only,
                "One timestamp per message, the send time, as span data gives (timestamps = "
                "\"send\")");
  cmd->add_flag("--list", f.list, "List the built-in scenarios");
  cmd->add_flag("--print-config", f.print_config, "Print the scenario's TOML config and exit");
  cmd->callback([cmd, &result] { result = RunGen(*cmd, f); });
}

}  // namespace weft::cli
