// weft infer: a trace in, path instances and patterns out (.paths.json, docs/paths.md).
// Each algorithm is one entry in kAlgorithms; --algo lists exactly those.
#include <fmt/format.h>

#include "cli/command.h"
#include "infer/paths.h"
#include "infer/truth/truth.h"
#include "trace/io.h"

namespace weft::cli {
namespace {

struct Algorithm {
  std::string_view name;
  Result<PathSet> (*infer)(const Trace& trace);
};

constexpr Algorithm kAlgorithms[] = {
    {"truth", InferFromTruth},
};

std::string AlgorithmNames() {
  std::string names;
  for (const Algorithm& a : kAlgorithms) names += names.empty() ? std::string(a.name) : fmt::format(", {}", a.name);
  return names;
}

struct InferFlags {
  std::string input, output, algo;
};

Status RunInfer(const InferFlags& f) {
  const Algorithm* algorithm = nullptr;
  for (const Algorithm& a : kAlgorithms) {
    if (a.name == f.algo) algorithm = &a;
  }
  if (!algorithm) return Status::InvalidArgument("unknown algorithm '{}' (available: {})", f.algo, AlgorithmNames());
  WEFT_ASSIGN_OR_RETURN(Trace trace, LoadTrace(f.input));
  Result<PathSet> set = algorithm->infer(trace);
  if (!set.ok()) return set.status().WithContext(f.input);
  WEFT_RETURN_IF_ERROR(WritePaths(*set, f.output));
  fmt::print(stderr, "{}: {} path instances of {} patterns over {} of {} messages\n", f.algo, set->instance_count(),
             set->patterns.size(), set->messages.size(), trace.size());
  return Status::Ok();
}

}  // namespace

void AddInferCommand(CLI::App& app, Status& result) {
  auto* cmd = app.add_subcommand("infer", "Infer causal paths from a trace and write a paths file");
  cmd->footer(fmt::format(
      "Algorithms: {}. The paths file (.paths.json) holds every path instance and the\n"
      "aggregated path patterns; docs/paths.md describes it.\n\n"
      "Examples:\n"
      "  weft infer mt.weft --algo truth -o truth.paths.json\n"
      "  weft paths truth.paths.json --top 10\n",
      AlgorithmNames()));
  static InferFlags flags;
  cmd->add_option("trace", flags.input, "Trace to read (text or .weft; - for stdin)")->required();
  cmd->add_option("--algo", flags.algo, fmt::format("Inference algorithm: {}", AlgorithmNames()))->required();
  cmd->add_option("-o,--output", flags.output, "Paths file to write (- for stdout)")->required();
  cmd->callback([&result] { result = RunInfer(flags); });
}

}  // namespace weft::cli
