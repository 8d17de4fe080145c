// weft skew: Project 5's skewer (§7.5.6), per-node clock offsets added to a trace.
#include <fmt/format.h>

#include <cstdio>

#include "cli/command.h"
#include "gen/gen.h"
#include "trace/io.h"

namespace weft::cli {
namespace {

struct SkewFlags {
  std::string input, output, random_sd;
  std::vector<std::string> offsets;
  uint64_t seed = 1;
};

Status RunSkew(const CLI::App& cmd, const SkewFlags& f) {
  SkewOptions options;
  options.seed = f.seed;
  for (const std::string& text : f.offsets) {
    WEFT_ASSIGN_OR_RETURN(auto offset, ParseNodeOffset(text));
    options.offsets.push_back(std::move(offset));
  }
  if (cmd.count("--random")) {
    Result<TimeNs> sd = ParseDuration(f.random_sd);
    if (!sd.ok()) return Status::InvalidArgument("--random: {}", sd.status().message());
    if (*sd < 0) return Status::InvalidArgument("--random must not be negative");
    options.random_sd = *sd;
  }
  if (options.offsets.empty() && options.random_sd == 0) {
    return Status::InvalidArgument("give --offset NODE=+30ms (repeatable) or --random SD");
  }
  WEFT_ASSIGN_OR_RETURN(Trace trace, LoadTrace(f.input));
  std::vector<TimeNs> applied;
  WEFT_ASSIGN_OR_RETURN(Trace skewed, SkewTrace(trace, options, &applied));
  WEFT_RETURN_IF_ERROR(SaveTrace(skewed, f.output));
  std::vector<std::string> shown;
  for (size_t i = 0; i < applied.size(); ++i) {
    if (applied[i] == 0) continue;
    shown.push_back(fmt::format("{}={}{}", skewed.NodeName(NodeId(uint32_t(i))),
                                applied[i] > 0 ? "+" : "", FormatDuration(applied[i])));
  }
  fmt::print(stderr, "skewed {} messages; {} of {} nodes shifted{}{}\n", skewed.size(),
             shown.size(), applied.size(), shown.empty() ? "" : ": ",
             fmt::join(shown.begin(), shown.begin() + std::min<size_t>(shown.size(), 12), ", "));
  return Status::Ok();
}

}  // namespace

void AddSkewCommand(CLI::App& app, Status& result) {
  auto* cmd = app.add_subcommand("skew", "Add per-node clock skew to a trace (Project 5 skewer)");
  cmd->footer(
      "A node's offset shifts the send times of the messages it sent and the receive times of\n"
      "the messages it received; the trace is re-sorted and keeps its ground truth.\n\n"
      "Examples:\n"
      "  weft skew mt.weft -o mt-skew.weft --offset WS2=+30ms\n"
      "  weft skew mt.weft -o mt-rand.weft --random 5ms --seed 3 --offset DB=-2ms\n");
  static SkewFlags f;
  cmd->add_option("input", f.input, "Trace to read (text or .weft; - for stdin)")->required();
  cmd->add_option("-o,--output", f.output, "Trace to write (- for stdout as text)")->required();
  cmd->add_option("--offset", f.offsets, "NODE=+30ms: that node's clock runs ahead (or -: behind)");
  cmd->add_option("--random", f.random_sd,
                  "Give every node without --offset a random offset with this deviation");
  cmd->add_option("--seed", f.seed, "Seed for --random (default 1)");
  cmd->callback([cmd, &result] { result = RunSkew(*cmd, f); });
}

}  // namespace weft::cli
