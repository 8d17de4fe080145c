// The weft command line: one file per subcommand, each adding itself to the app. A
// subcommand's callback stores its Status in `result`; main prints a non-ok one as
// "weft <subcommand>: <message>" and exits 1.
#pragma once

#include <CLI/CLI.hpp>

#include "core/status.h"

namespace weft::cli {

void AddConvertCommand(CLI::App& app, Status& result);
void AddGenCommand(CLI::App& app, Status& result);
void AddSkewCommand(CLI::App& app, Status& result);
void AddDropCommand(CLI::App& app, Status& result);
void AddInferCommand(CLI::App& app, Status& result);
void AddPathsCommand(CLI::App& app, Status& result);
void AddEvalCommand(CLI::App& app, Status& result);
void AddReportCommand(CLI::App& app, Status& result);
void AddTestbedCommand(CLI::App& app, Status& result);
void AddCaptureCommand(CLI::App& app, Status& result);  // capture and events
void AddReconcileCommand(CLI::App& app, Status& result);
void AddQueryCommand(CLI::App& app, Status& result);
void AddPivotCommand(CLI::App& app, Status& result);  // install, list, uninstall, tracepoints
// Subcommands of `weft import` (`import` is the App they add themselves to).
void AddImportPcapCommand(CLI::App& import, Status& result);
void AddImportSpansCommand(CLI::App& import, Status& result);
void AddExportCommand(CLI::App& app, Status& result);

}  // namespace weft::cli
