// Chrome trace-event JSON (the "JSON Object Format" of the Trace Event Format document):
// {"traceEvents": [...]} with a process per service, "M" events naming processes and
// lanes, and an "X" (complete) event per span. Perfetto and chrome://tracing draw the X
// events of one (pid, tid) as a stack, which is only right if they nest: each lane here
// holds events that nest properly (one starts after another ends, or lies inside it), and
// a span that would cross another goes to the next lane.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "export/spans_from_paths.h"

namespace weft {
namespace {

using Json = nlohmann::ordered_json;

struct Placed {
  const Span* span;
  size_t tree;
};

struct Lane {
  uint32_t thread;                // the thread its events ran in; 0: unknown
  std::vector<TimeNs> open_ends;  // ends of the events still open at the last start
};

}  // namespace

std::string FormatChromeTrace(const std::vector<SpanTree>& trees) {
  TimeNs t0 = 0;
  bool first = true;
  std::vector<std::string> services;
  std::map<std::string, std::vector<Placed>, std::less<>> by_service;
  for (size_t t = 0; t < trees.size(); ++t) {
    for (const Span& span : trees[t].spans) {
      if (first || span.start < t0) t0 = span.start;
      first = false;
      auto [it, added] = by_service.try_emplace(span.service);
      if (added) services.push_back(span.service);
      it->second.push_back({&span, t});
    }
  }
  auto us = [&](TimeNs t) { return double(t - t0) / 1000.0; };
  // Events are written as they are made: a large export never holds the document as JSON.
  std::string out = "{\"traceEvents\":[";
  bool first_event = true;
  auto emit = [&](const Json& event) {
    if (!first_event) out += ',';
    first_event = false;
    out += event.dump(-1, ' ', false, Json::error_handler_t::replace);
  };
  for (size_t p = 0; p < services.size(); ++p) {
    int pid = int(p + 1);
    emit(Json{{"name", "process_name"},
              {"ph", "M"},
              {"pid", pid},
              {"tid", 0},
              {"args", {{"name", services[p]}}}});
    std::vector<Placed>& placed = by_service[services[p]];
    // Longer first at equal starts, so that a parent comes before what it contains.
    std::stable_sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
      if (a.span->start != b.span->start) return a.span->start < b.span->start;
      return a.span->end > b.span->end;
    });
    std::vector<Lane> lanes;
    std::vector<Json> lane_events;
    for (const Placed& x : placed) {
      const Span& s = *x.span;
      size_t chosen = lanes.size();
      for (size_t l = 0; l < lanes.size(); ++l) {
        Lane& lane = lanes[l];
        if (lane.thread != s.thread) continue;
        while (!lane.open_ends.empty() && lane.open_ends.back() <= s.start)
          lane.open_ends.pop_back();
        if (lane.open_ends.empty() || lane.open_ends.back() >= s.end) {
          chosen = l;
          break;
        }
      }
      if (chosen == lanes.size()) lanes.push_back({s.thread, {}});
      lanes[chosen].open_ends.push_back(s.end);
      Json args = {{"trace_id", s.trace_id}, {"span_id", s.span_id}};
      if (!s.parent_id.empty()) args["parent_id"] = s.parent_id;
      for (const auto& [key, value] : s.attributes) args[key] = value;
      emit(Json{{"name", s.name},
                {"cat", "weft"},
                {"ph", "X"},
                {"ts", us(s.start)},
                {"dur", double(s.end - s.start) / 1000.0},
                {"pid", pid},
                {"tid", int(chosen + 1)},
                {"args", std::move(args)}});
    }
    // Name the lanes: the thread where known, numbered when one thread needed several.
    std::map<uint32_t, int> seen;
    for (size_t l = 0; l < lanes.size(); ++l) {
      int n = ++seen[lanes[l].thread];
      std::string name = lanes[l].thread != 0 ? fmt::format("thread {}", lanes[l].thread)
                                              : fmt::format("lane {}", n);
      if (lanes[l].thread != 0 && n > 1) name += fmt::format(" ({})", n);
      emit(Json{{"name", "thread_name"},
                {"ph", "M"},
                {"pid", pid},
                {"tid", int(l + 1)},
                {"args", {{"name", name}}}});
    }
  }
  Json other = {{"source", "weft export chrome"},
                {"start_unix_ns", fmt::format("{}", t0)},
                {"requests", trees.size()}};
  out += "],\"displayTimeUnit\":\"ms\",\"otherData\":";
  out += other.dump(-1, ' ', false, Json::error_handler_t::replace);
  out += "}\n";
  return out;
}

}  // namespace weft
