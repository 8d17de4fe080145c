// weft pivot: live Pivot Tracing queries (Pivot Tracing §2.2, §5) over the programs whose
// tracepoints (weft/tracepoint.h) run an agent on the same bus: install a query and
// stream its results each interval, list the live processes, uninstall a query, list
// their tracepoints.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "cli/command.h"
#include "core/file.h"
#include "core/time.h"
#include "pivot/frontend.h"
#include "query/output.h"

namespace weft::cli {
namespace {

std::atomic<bool> g_interrupted{false};

void StopStreaming(int) { g_interrupted.store(true); }

struct PivotFlags {
  std::string bus, text, interval = "1s", duration, format = "table", plot, id;
  bool bars = false;     // --bars: --plot draws the last interval as stacked bars
  int window_ms = 1000;  // agents reconnecting to a hub this run starts take up to 200 ms
};

// An empty --bus is $WEFT_PIVOT_BUS, else the embedded bus's default path (bus.h).
Result<pivot::Bus*> Open(const PivotFlags& f) { return pivot::OpenFrontEndBus(f.bus); }

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One interval's rows as `format` shows them; the CSV header only before the first.
void PrintInterval(const query::QueryResult& r, query::OutputFormat format, TimeNs interval,
                   TimeNs origin, bool first) {
  std::string out = query::FormatResult(r, format, {.interval = interval, .origin = origin});
  if (format == query::OutputFormat::kCsv && !first) {
    size_t nl = out.find('\n');
    out = nl == std::string::npos ? "" : out.substr(nl + 1);
  } else if (format == query::OutputFormat::kTable && !first) {
    out = "\n" + out;
  }
  fmt::print("{}", out);
  std::fflush(stdout);
}

// "2 partial results unsent (bus down), 5 bus messages dropped", or "" if nothing was lost.
std::string DescribeLost(const pivot::AgentDrops& d) {
  std::vector<std::string> parts;
  if (d.partials > 0)
    parts.push_back(fmt::format("{} partial results unsent (bus down)", d.partials));
  if (d.bus > 0) parts.push_back(fmt::format("{} bus messages dropped", d.bus));
  if (d.interned > 0) {
    parts.push_back(fmt::format("{} strings not kept (interner full)", d.interned));
  }
  if (d.children > 0) {
    parts.push_back(fmt::format("{} groups of forked children not handed over", d.children));
  }
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

Status RunInstall(const PivotFlags& f) {
  WEFT_ASSIGN_OR_RETURN(query::OutputFormat format, query::ParseOutputFormat(f.format));
  Result<TimeNs> interval = ParseDuration(f.interval);
  if (!interval.ok()) return interval.status().WithContext("--interval");
  if (*interval < pivot::kMinInterval || *interval > pivot::kMaxInterval) {
    return Status::InvalidArgument("--interval must be between 1ms and 1h, not {}", f.interval);
  }
  TimeNs duration = 0;
  if (!f.duration.empty()) {
    Result<TimeNs> d = ParseDuration(f.duration);
    if (!d.ok()) return d.status().WithContext("--for");
    if (*d <= 0) return Status::InvalidArgument("--for must be positive, not {}", f.duration);
    duration = *d;
  }
  WEFT_ASSIGN_OR_RETURN(pivot::Bus * bus, Open(f));
  WEFT_ASSIGN_OR_RETURN(
      auto session, pivot::LiveSession::Install(
                        *bus, f.text, {.interval_ns = *interval, .list_window_ms = f.window_ms}));
  fmt::print(stderr, "installed {} in {} process(es); {} to stop\n", session->id(),
             session->agents(), duration > 0 ? "--for " + f.duration + " or Ctrl-C" : "Ctrl-C");
  g_interrupted.store(false);
  std::signal(SIGINT, StopStreaming);
  std::signal(SIGTERM, StopStreaming);
  const int64_t start = NowNs();
  const TimeNs origin = (start / *interval) * *interval;
  bool first = true;
  std::string lost_shown;
  size_t refusals_shown = 0;
  auto show = [&](const std::vector<query::QueryResult>& results) {
    const std::vector<std::string> refusals = session->refusals();
    for (; refusals_shown < refusals.size(); ++refusals_shown) {
      fmt::print(stderr, "process {}\n", refusals[refusals_shown]);
    }
    for (const query::QueryResult& r : results) {
      PrintInterval(r, format, *interval, origin, first);
      first = false;
    }
    // Losses are shown as they are reported (with the first results after an outage).
    std::string lost = DescribeLost(session->lost());
    if (lost != lost_shown) {
      fmt::print(stderr, "agents lost so far: {}\n", lost);
      lost_shown = lost;
    }
  };
  while (!g_interrupted.load() && (duration == 0 || NowNs() - start < duration) &&
         refusals_shown < session->agents()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    show(session->TakeComplete(NowNs()));
  }
  show(session->Finish(2000));
  if (refusals_shown >= session->agents()) {
    return Status::InvalidArgument("every process refused query {}", session->id());
  }
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (session->drops() > 0 || session->late() > 0) {
    fmt::print(stderr, "{} tuples dropped by agents, {} partial results arrived too late\n",
               session->drops(), session->late());
  }
  if (!f.plot.empty()) {
    query::QueryResult series = session->Series();
    query::PlotOptions options{.interval = *interval, .origin = origin, .title = f.text};
    WEFT_ASSIGN_OR_RETURN(std::string svg, f.bars ? query::PlotBarsSvg(series, options)
                                                  : query::PlotResultSvg(series, options));
    WEFT_RETURN_IF_ERROR(WriteFile(f.plot, svg));
  }
  return Status::Ok();
}

Status RunList(const PivotFlags& f) {
  WEFT_ASSIGN_OR_RETURN(pivot::Bus * bus, Open(f));
  WEFT_ASSIGN_OR_RETURN(auto agents, pivot::ListAgents(*bus, f.window_ms));
  if (agents.empty()) {
    fmt::print("no live process answered on {} within {} ms\n", bus->url(), f.window_ms);
    return Status::Ok();
  }
  for (const pivot::AgentDescription& a : agents) {
    std::string lost = DescribeLost(a.lost);
    fmt::print("process {}@{}: {} tracepoints, {} queries{}\n", a.pid, a.host, a.tracepoints.size(),
               a.queries.size(), lost.empty() ? "" : "; lost: " + lost);
    for (const pivot::InstalledQueryInfo& q : a.queries) {
      fmt::print("  {}  slots {}-{}  {}{}\n    {}\n", q.id, q.slot_base, q.slot_base + q.slots,
                 q.woven ? "woven" : "no advice here",
                 q.error.empty() ? "" : " (" + q.error.substr(0, q.error.find('\n')) + ")", q.text);
    }
  }
  return Status::Ok();
}

Status RunTracepoints(const PivotFlags& f) {
  WEFT_ASSIGN_OR_RETURN(pivot::Bus * bus, Open(f));
  WEFT_ASSIGN_OR_RETURN(auto agents, pivot::ListAgents(*bus, f.window_ms));
  std::vector<query::Tracepoint> catalog = pivot::Catalog(agents);
  if (catalog.empty()) {
    fmt::print("no tracepoints: no live process answered on {} within {} ms\n", bus->url(),
               f.window_ms);
    return Status::Ok();
  }
  for (const query::Tracepoint& t : catalog) {
    size_t processes = 0;
    for (const pivot::AgentDescription& a : agents) {
      for (const query::Tracepoint& at : a.tracepoints) processes += at.name == t.name;
    }
    fmt::print("{}  ({} process{})\n  exports: {}\n", t.name, processes, processes == 1 ? "" : "es",
               fmt::join(t.exports, ", "));
  }
  return Status::Ok();
}

Status RunUninstall(const PivotFlags& f) {
  WEFT_ASSIGN_OR_RETURN(pivot::Bus * bus, Open(f));
  return pivot::UninstallQuery(*bus, f.id);
}

void AddBusOptions(CLI::App* cmd, PivotFlags& flags) {
  cmd->add_option("--bus", flags.bus,
                  "The bus the agents are on: unix:PATH, nats://HOST:PORT, or local (default: "
                  "$WEFT_PIVOT_BUS, else the embedded bus at $XDG_RUNTIME_DIR/weft-pivot.sock or "
                  "/tmp/weft-pivot-UID/bus.sock)");
  cmd->add_option("--wait", flags.window_ms, "How long to wait for live processes to answer, in ms")
      ->capture_default_str();
}

}  // namespace

void AddPivotCommand(CLI::App& app, Status& result) {
  auto* pivot = app.add_subcommand(
      "pivot", "Live Pivot Tracing queries over running programs with tracepoints");
  pivot->require_subcommand(1);
  pivot->footer(
      "Programs declare tracepoints with weft/tracepoint.h and run an agent\n"
      "(weft::pivot::StartAgentFromEnvironment, with WEFT_PIVOT_BUS set); each interval every\n"
      "agent publishes what the query's advice emitted in its process, and weft pivot merges\n"
      "them. docs/query.md has the language.\n\n"
      "Examples:\n"
      "  weft pivot tracepoints\n"
      "  # requests per client each second, for 30 s\n"
      "  weft pivot install 'From r In Server.Request GroupBy r.client Select r.client, COUNT'\n"
      "      --for 30s\n"
      "  # bytes read from disk per request type (a happened-before join), as CSV and a plot\n"
      "  weft pivot install 'From d In Disk.Read Join r In First(Server.Request) On r -> d\n"
      "      GroupBy r.type Select r.type, SUM(d.bytes)' --format csv --plot disk.svg\n"
      "  weft pivot list\n"
      "  weft pivot uninstall q3f2a9c41d7e0\n");
  static PivotFlags flags;

  auto* install = pivot->add_subcommand(
      "install", "Install a query into every live process and stream its results");
  install->add_option("query", flags.text, "The query")->required();
  install->add_option("--interval", flags.interval, "One set of results per interval (1s, 100ms)")
      ->capture_default_str();
  install->add_option("--for", flags.duration,
                      "Uninstall after this long (e.g. 30s); default: until Ctrl-C");
  install->add_option("--format", flags.format, "Output as table, csv or json")
      ->capture_default_str();
  install->add_option("--plot", flags.plot,
                      "At the end, draw the time series as an SVG line chart (one line per "
                      "group: the columns but the last; y is the last)");
  install->add_flag("--bars", flags.bars,
                    "With --plot: draw the last interval as stacked bars instead, one per row "
                    "labelled by its first column, a segment per other column (COUNT goes "
                    "into the label), as a breakdown of where time goes");
  AddBusOptions(install, flags);
  install->callback([&result] { result = RunInstall(flags); });

  auto* list = pivot->add_subcommand("list", "List the live processes and their queries");
  AddBusOptions(list, flags);
  list->callback([&result] { result = RunList(flags); });

  auto* tracepoints = pivot->add_subcommand(
      "tracepoints", "List the tracepoints the live processes registered, with their exports");
  AddBusOptions(tracepoints, flags);
  tracepoints->callback([&result] { result = RunTracepoints(flags); });

  auto* uninstall =
      pivot->add_subcommand("uninstall", "Remove a query (its id, from weft pivot list)");
  uninstall->add_option("id", flags.id, "The query's id")->required();
  AddBusOptions(uninstall, flags);
  uninstall->callback([&result] { result = RunUninstall(flags); });
}

}  // namespace weft::cli
