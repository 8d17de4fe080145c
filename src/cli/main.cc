// weft: causal paths through distributed systems of black boxes. See README.md.
#include <fmt/format.h>

#include <cstdio>

#include "cli/command.h"

int main(int argc, char** argv) {
  CLI::App app(
      "weft finds the causal paths requests take through a distributed system of black "
      "boxes, and where their time goes.\n\nExample:\n  weft gen multitier -o mt.weft\n  weft "
      "infer mt.weft --algo truth -o mt.paths.json\n  weft paths mt.paths.json --top 10\n",
      "weft");
  app.require_subcommand(1);
  app.set_version_flag("--version", "weft 0.1");
  weft::Status result;
  weft::cli::AddGenCommand(app, result);
  weft::cli::AddSkewCommand(app, result);
  weft::cli::AddDropCommand(app, result);
  weft::cli::AddConvertCommand(app, result);
  weft::cli::AddInferCommand(app, result);
  weft::cli::AddPathsCommand(app, result);
  weft::cli::AddReportCommand(app, result);
  weft::cli::AddEvalCommand(app, result);
  weft::cli::AddTestbedCommand(app, result);
  weft::cli::AddCaptureCommand(app, result);
  weft::cli::AddReconcileCommand(app, result);
  weft::cli::AddQueryCommand(app, result);
  weft::cli::AddPivotCommand(app, result);
  auto* import = app.add_subcommand("import", "Make a message trace from other tools' records");
  import->require_subcommand(1);
  weft::cli::AddImportPcapCommand(*import, result);
  weft::cli::AddImportSpansCommand(*import, result);
  weft::cli::AddExportCommand(app, result);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (!result.ok()) {
    std::string name = app.get_subcommands().empty() ? "" : app.get_subcommands()[0]->get_name();
    fmt::print(stderr, "weft {}: {}\n", name, result.message());
    return 1;
  }
  return 0;
}
