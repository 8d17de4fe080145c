// The `weft pivot` front end's logic (Pivot Tracing §2.2 Figure 2): list the live
// processes and their tracepoints, install a query into all of them, merge their partial
// results per interval as they stream in, and uninstall it.
//
// A query is compiled here first, against the tracepoints every live process registered
// (collected from list replies), so that a bad name is a diagnostic before anything is
// installed; the agents compile the same text against the same catalog, so every process
// has the same units and baggage slots. The session picks the query's slot base above
// every query installed now.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "pivot/bus.h"
#include "pivot/merge.h"
#include "pivot/protocol.h"
#include "query/result.h"

namespace weft::pivot {

// The bus `weft pivot` talks over, kept for the process's life: "local" is the
// process-wide in-process bus (agents started in this same process: tests); "" and the
// others as OpenBus, where a front end that finds no hub at a unix: path becomes it.
Result<Bus*> OpenFrontEndBus(std::string_view url);

// Every agent that answers a list request within `window_ms`.
Result<std::vector<AgentDescription>> ListAgents(Bus& bus, int window_ms);

// The tracepoints of every agent, one per name (the first agent's exports), by name.
std::vector<query::Tracepoint> Catalog(const std::vector<AgentDescription>& agents);

struct SessionOptions {
  int64_t interval_ns = 1'000'000'000;
  bool optimize = true;
  int list_window_ms = 300;  // how long to wait for list replies
};

// One installed query, from install to uninstall.
class LiveSession {
 public:
  // Lists the agents, compiles `text` against their tracepoints, subscribes to the
  // results and installs the query. An error if the query does not compile (a diagnostic
  // with line, column and caret) or no agent answers.
  static Result<std::unique_ptr<LiveSession>> Install(Bus& bus, std::string text,
                                                      const SessionOptions& options);
  ~LiveSession();

  const std::string& id() const { return id_; }
  size_t agents() const { return agents_; }

  // The intervals complete by `now_ns` (wall clock), each merged over every agent, in
  // order; each is returned once. An interval is complete once every agent that answered
  // the list has sent its partials for it, or else once a grace period (half the
  // interval, at most 500 ms) has passed after its end; partials arriving later are
  // counted in late().
  std::vector<query::QueryResult> TakeComplete(int64_t now_ns);
  // Uninstalls the query, waits up to `timeout_ms` for the final partials of as many
  // agents as answered the list (one whose compile failed sends none),
  // and returns the intervals not yet returned.
  std::vector<query::QueryResult> Finish(int timeout_ms);
  // Every interval seen so far (for a plot).
  query::QueryResult Series() const;
  // Every interval's tuples together, as one result without intervals.
  query::QueryResult Total() const;

  // Tuples the agents dropped (PartialResults::drops), summed over every interval.
  uint64_t drops() const;
  uint64_t late() const;
  // What the agents lost besides (unsent partials, bus drops, interner drops), summed
  // over the agents, each agent's latest count.
  AgentDrops lost() const;
  // The processes that refused the query ("pid@host: why"): it did not compile there, or
  // another front end installed a query with the same baggage slots at the same moment.
  std::vector<std::string> refusals() const;

 private:
  LiveSession(Bus& bus) : bus_(bus) {}
  void OnPartials(std::string_view payload);

  Bus& bus_;
  std::string id_;
  int64_t interval_ns_ = 0;
  size_t agents_ = 0;
  uint64_t subscription_ = 0;
  bool finished_ = false;

  mutable std::mutex mu_;
  ResultMerger pending_;  // intervals not yet returned
  ResultMerger all_;      // every interval, for Series
  std::vector<int64_t> returned_;
  std::vector<std::string> finals_;                    // agents that sent their final partials
  std::map<int64_t, std::set<std::string>> reported_;  // pending intervals: who sent partials
  std::map<std::string, AgentDrops> lost_;             // by agent, the latest counts
  std::vector<std::string> refusals_;
  uint64_t late_ = 0, bad_ = 0;
};

// Publishes an uninstall for `id` (and flushes).
Status UninstallQuery(Bus& bus, std::string_view id);

}  // namespace weft::pivot
