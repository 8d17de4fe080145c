// The HTML report: one self-contained page a person opens in a browser, with no network
// access at all (inline CSS, inline JavaScript, inline SVG; the data embedded as JSON in
// the page). It shows the path patterns ranked, each with its count, share and end-to-end
// latency percentiles and an expandable call tree whose elements carry their delay
// histograms; a waterfall per request (a lane per node, a time axis, calls as bars, as
// Jaeger draws a trace) for the slowest requests and any embedded request a user picks;
// each node's own delay histogram (WAP5 Figure 11); and the accuracy summary when the
// caller scored the paths against a truth.
//
// The page stays small on big runs: only `max_waterfalls` requests are embedded (the
// slowest, then a few from each pattern so that every pattern shown has an example), and
// the page says how many of how many it holds.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "paths/path_set.h"
#include "trace/trace.h"

namespace weft {

struct HtmlReportOptions {
  std::string title;                // e.g. the paths file's name
  std::vector<uint32_t> ranked;     // the patterns to show, best first (all if empty)
  const Trace* trace = nullptr;     // the trace the paths came from; no waterfalls without it
  size_t max_waterfalls = 200;      // requests embedded for waterfalls, at most
  size_t examples_per_pattern = 3;  // of those, kept for each pattern shown
  std::string accuracy_text;        // `weft eval`'s report; "" if no truth was given
  std::vector<std::pair<std::string, std::string>> accuracy_figures;  // headline numbers
  std::string accuracy_source;  // what the truth was, for the page
  std::string notice;           // a line shown above everything ("" for none)
};

// The page. An error if `options.trace` is not the trace `set` was inferred from.
Result<std::string> HtmlReport(const PathSet& set, const HtmlReportOptions& options);

}  // namespace weft
