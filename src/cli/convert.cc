// weft convert: between the text and binary trace formats.
#include <fmt/format.h>

#include "cli/command.h"
#include "trace/io.h"

namespace weft::cli {

void AddConvertCommand(CLI::App& app, Status& result) {
  auto* cmd = app.add_subcommand("convert", "Convert a trace between text and binary (.weft)");
  cmd->footer(
      "The output format follows the output name: .weft is binary, anything else is text.\n\n"
      "Examples:\n  weft convert run.trace -o run.weft\n  weft convert run.weft -o - | head\n");
  static std::string input, output;
  cmd->add_option("input", input, "Trace to read (text or .weft; - for stdin)")->required();
  cmd->add_option("-o,--output", output, "Trace to write (- for stdout as text)")->required();
  cmd->callback([&result] {
    Result<Trace> trace = LoadTrace(input);
    if (!trace.ok()) {
      result = trace.status();
      return;
    }
    result = SaveTrace(*trace, output);
  });
}

}  // namespace weft::cli
