// weft reconcile: the event logs of a capture directory -> one message trace.
#include "reconcile/reconcile.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <iterator>

#include "cli/command.h"
#include "trace/io.h"

namespace weft::cli {

void AddReconcileCommand(CLI::App& app, Status& result) {
  auto* cmd =
      app.add_subcommand("reconcile", "Turn the event logs of `weft capture` into a message trace");
  cmd->footer(
      "Reads every DIR/<host>/*.wev, pairs the two ends of each TCP connection by 4-tuple\n"
      "and lifetime (Unix stream sockets by inode), cuts each direction into messages where\n"
      "it turns (vPath §3.2), and lines the two sides up by byte offset. UDP datagrams pair\n"
      "by ports, size and payload hash, Unix datagrams by path (socketpair: inode), size and\n"
      "payload hash; a pipe's message ends when its reader drains it. Peers that were not\n"
      "traced are named by endpoint. Prints a one-line summary, one line per log that\n"
      "lost something, and one per log that could not be read at all (\"skipped:\", a\n"
      "stray file or a damaged header: the other logs are still reconciled). Several\n"
      "directories (one per host) merge into one trace: each host keeps its own clock,\n"
      "and how far the hosts' clocks disagree is estimated from\n"
      "the messages between them (WAP5 §5.2) and printed. See docs/reconcile.md.\n\n"
      "Examples:\n"
      "  weft capture -o run -- ./start-my-services.sh\n"
      "  weft reconcile run -o run.weft --nodes process\n"
      "  weft reconcile run -o run.weft --nodes name\n"
      "  weft reconcile web-host/run db-host/run -o both.weft\n");
  static std::vector<std::string> directories;
  static std::string output, nodes = "host";
  cmd->add_option("dir", directories, "Capture directories (weft capture -o DIR), one or more")
      ->required();
  cmd->add_option("-o,--output", output, "Trace to write (.weft, text, or - for stdout)")
      ->required();
  cmd->add_option("--nodes", nodes,
                  "Node names: host (host:program, default), process (host:program[pid]), "
                  "thread (host:program[pid/tid]), name (host:name, the name ps shows: "
                  "servers that name themselves, like the testbed's web0 and app0)");
  cmd->callback([&result] {
    result = [&]() -> Status {
      WEFT_ASSIGN_OR_RETURN(reconcile::NodeNaming naming, reconcile::ParseNodeNaming(nodes));
      reconcile::ReadProblems problems;
      auto start = std::chrono::steady_clock::now();
      std::vector<capture::EventLog> logs;
      for (const std::string& directory : directories) {
        WEFT_ASSIGN_OR_RETURN(std::vector<capture::EventLog> more,
                              reconcile::ReadCaptureDirectory(directory, &problems));
        std::move(more.begin(), more.end(), std::back_inserter(logs));
      }
      auto read_done = std::chrono::steady_clock::now();
      reconcile::ReconcileSummary summary;
      WEFT_ASSIGN_OR_RETURN(Trace trace, reconcile::Reconcile(logs, {.nodes = naming}, &summary));
      summary.unreadable_logs = problems.unreadable.size();
      auto done = std::chrono::steady_clock::now();
      WEFT_RETURN_IF_ERROR(SaveTrace(trace, output));
      double reconcile_s = std::chrono::duration<double>(done - read_done).count();
      double read_s = std::chrono::duration<double>(read_done - start).count();
      fmt::print(stderr, "{} logs: {} (read {:.3f} s, reconciled in {:.3f} s)\n", logs.size(),
                 summary.OneLine(), read_s, reconcile_s);
      if (std::string clocks = summary.HostClocks(); !clocks.empty())
        fmt::print(stderr, "{}\n", clocks);
      if (std::string note = summary.TlsNote(); !note.empty()) fmt::print(stderr, "{}\n", note);
      for (const std::string& line : problems.unreadable) fmt::print(stderr, "skipped: {}\n", line);
      for (const std::string& line : problems.losses) fmt::print(stderr, "lost: {}\n", line);
      for (const std::string& line : summary.losses) fmt::print(stderr, "lost: {}\n", line);
      return Status::Ok();
    }();
  });
}

}  // namespace weft::cli
