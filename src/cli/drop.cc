// weft drop: the sniffer loss model of Project 5 §7.5.5 (peak capture rate, finite queue).
#include <fmt/format.h>

#include <cstdio>

#include "cli/command.h"
#include "gen/gen.h"
#include "trace/io.h"

namespace weft::cli {

void AddDropCommand(CLI::App& app, Status& result) {
  auto* cmd = app.add_subcommand(
      "drop", "Drop messages as a sniffer with a peak capture rate and a finite queue would");
  cmd->footer(
      "Messages arrive at their timestamps into a FIFO queue of --queue messages captured at\n"
      "--rate messages per second; a message that finds the queue full is lost (bursty loss,\n"
      "Project 5 §7.5.5). Path instances that lost a message lose their ground truth.\n\n"
      "Example:\n"
      "  weft drop mt.weft -o mt-lossy.weft --rate 400 --queue 64\n");
  static std::string input, output;
  static double rate = 0;
  static uint32_t queue = 64;
  cmd->add_option("input", input, "Trace to read (text or .weft; - for stdin)")->required();
  cmd->add_option("-o,--output", output, "Trace to write (- for stdout as text)")->required();
  cmd->add_option("--rate", rate, "Peak capture rate in messages per second")->required();
  cmd->add_option("--queue", queue, "Capture queue length in messages (default 64)");
  cmd->callback([&result] {
    result = [&]() -> Status {
      DropOptions options{rate, queue};
      WEFT_ASSIGN_OR_RETURN(Trace trace, LoadTrace(input));
      DropSummary summary;
      WEFT_ASSIGN_OR_RETURN(Trace kept, DropMessages(trace, options, &summary));
      WEFT_RETURN_IF_ERROR(SaveTrace(kept, output));
      fmt::print(stderr, "{}\n", FormatDropSummary(summary));
      return Status::Ok();
    }();
  });
}

}  // namespace weft::cli
