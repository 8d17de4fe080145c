// The eval report as a table for people and as JSON for scripts (docs/eval.md).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "eval/eval.h"

namespace weft {

namespace {

std::string Percent(double fraction) { return fmt::format("{:.2f}%", 100.0 * fraction); }

void AppendCountsRow(std::string& out, std::string_view name, const ErrorCounts& c) {
  out += fmt::format("{:<16}{:>10}{:>10}{:>10}{:>10}{:>10}{:>9}{:>9}\n", name, c.truth, c.inferred,
                     c.correct, c.false_positives, c.false_negatives,
                     Percent(c.FalsePositiveRate()), Percent(c.FalseNegativeRate()));
}

nlohmann::ordered_json CountsJson(const ErrorCounts& c) {
  return {{"truth", c.truth},
          {"inferred", c.inferred},
          {"correct", c.correct},
          {"false_positives", c.false_positives},
          {"false_negatives", c.false_negatives},
          {"false_positive_rate", c.FalsePositiveRate()},
          {"false_negative_rate", c.FalseNegativeRate()}};
}

}  // namespace

std::string FormatEvalReport(const EvalReport& r) {
  std::string out;
  out += fmt::format("{} paths against {} paths over a trace of {} messages\n",
                     r.inferred_algorithm, r.truth_algorithm, r.trace_messages);
  out += fmt::format(
      "{} messages have no ground truth and are not counted ({} of them in inferred instances); "
      "{} truth messages were left out of every inferred instance\n\n",
      r.messages_without_truth, r.inferred_without_truth, r.truth_messages_unassigned);
  out += fmt::format("{:<16}{:>10}{:>10}{:>10}{:>10}{:>10}{:>9}{:>9}\n", "counted by", "truth",
                     "inferred", "correct", "false pos", "false neg", "FP rate", "FN rate");
  AppendCountsRow(out, "path patterns", r.patterns);
  AppendCountsRow(out, "path instances", r.instances);
  AppendCountsRow(out, "messages", r.messages);
  const RequestOutcomes& q = r.requests;
  out += fmt::format(
      "\nrequests (whole trees): {} exact ({}), {} wrong parents ({}), {} orphaned ({}), "
      "{} mis-stitched ({}) of {}\n",
      q.exact, Percent(q.Share(q.exact)), q.wrong_parents, Percent(q.Share(q.wrong_parents)),
      q.orphaned, Percent(q.Share(q.orphaned)), q.mis_stitched, Percent(q.Share(q.mis_stitched)),
      q.requests);
  out += fmt::format(
      "parent links: {} of {} messages other than returns have their true parent ({})\n",
      r.parent_links.correct, r.parent_links.messages, Percent(r.parent_links.Share()));

  if (!r.top_n.empty()) {
    out +=
        fmt::format("\ntop-N false negatives (Figure 17): truth ranked by count, inferred by {}\n",
                    PatternOrderName(r.inferred_order));
    out += fmt::format("{:>5}", "N");
    for (double t : r.tolerances)
      out += fmt::format("{:>12}", t == 0 ? std::string("FN") : "FN " + Percent(t));
    out += fmt::format("{:>10}\n", "FN/N");
    for (const TopNPoint& p : r.top_n) {
      out += fmt::format("{:>5}", p.n);
      for (uint64_t fn : p.false_negatives) out += fmt::format("{:>12}", fn);
      double rate = p.false_negatives.empty() ? 0 : double(p.false_negatives[0]) / p.n;
      out += fmt::format("{:>10}\n", Percent(rate));
    }
  }
  if (!r.missed.empty()) {
    out += fmt::format("\nmissed at N = {} (truth rank, truth count, inferred rank and {}):\n",
                       r.top_n.back().n, PatternOrderName(r.inferred_order));
    for (const MissedPattern& m : r.missed) {
      std::string inferred = m.inferred_rank
                                 ? fmt::format("#{} ({:g})", m.inferred_rank, m.inferred_score)
                                 : std::string("not inferred");
      out += fmt::format("  #{:<4} {:>8}  {:<18} {}\n", m.truth_rank, m.truth_count, inferred,
                         m.shape);
    }
  }
  out += fmt::format(
      "\nlatency error of the {} correctly inferred patterns (weighted by truth count)\n",
      r.latency_patterns);
  out += fmt::format("  end-to-end latency: mean {}  max {}\n", Percent(r.mean_latency_error),
                     Percent(r.max_latency_error));
  out += fmt::format("  element delays:     mean {}  max {}\n", Percent(r.mean_delay_error),
                     Percent(r.max_delay_error));
  if (r.undefined_errors) {
    out +=
        fmt::format("  ({} errors undefined: the truth value is 0 and the inferred one is not)\n",
                    r.undefined_errors);
  }
  return out;
}

std::string FormatEvalReportJson(const EvalReport& r) {
  nlohmann::ordered_json j;
  j["truth_algorithm"] = r.truth_algorithm;
  j["inferred_algorithm"] = r.inferred_algorithm;
  j["trace_messages"] = r.trace_messages;
  j["messages_without_truth"] = r.messages_without_truth;
  j["inferred_without_truth"] = r.inferred_without_truth;
  j["truth_messages_unassigned"] = r.truth_messages_unassigned;
  j["patterns"] = CountsJson(r.patterns);
  j["instances"] = CountsJson(r.instances);
  j["messages"] = CountsJson(r.messages);
  j["requests"] = {{"requests", r.requests.requests},
                   {"exact", r.requests.exact},
                   {"wrong_parents", r.requests.wrong_parents},
                   {"orphaned", r.requests.orphaned},
                   {"mis_stitched", r.requests.mis_stitched}};
  j["parent_links"] = {{"messages", r.parent_links.messages},
                       {"correct", r.parent_links.correct},
                       {"share", r.parent_links.Share()}};
  j["inferred_order"] = PatternOrderName(r.inferred_order);
  j["tolerances"] = r.tolerances;
  nlohmann::ordered_json curve = nlohmann::ordered_json::array();
  for (const TopNPoint& p : r.top_n)
    curve.push_back({{"n", p.n}, {"false_negatives", p.false_negatives}});
  j["top_n"] = std::move(curve);
  nlohmann::ordered_json missed = nlohmann::ordered_json::array();
  for (const MissedPattern& m : r.missed) {
    missed.push_back({{"truth_rank", m.truth_rank},
                      {"key", m.key},
                      {"shape", m.shape},
                      {"truth_count", m.truth_count},
                      {"inferred_rank", m.inferred_rank},
                      {"inferred_score", m.inferred_score}});
  }
  j["missed"] = std::move(missed);
  nlohmann::ordered_json latency = nlohmann::ordered_json::array();
  for (const PatternLatencyError& e : r.latency) {
    latency.push_back({{"key", e.key},
                       {"truth_count", e.truth_count},
                       {"latency_error", e.latency_error ? nlohmann::ordered_json(*e.latency_error)
                                                         : nlohmann::ordered_json()},
                       {"max_delay_error", e.max_delay_error}});
  }
  j["latency"] = {
      {"patterns", r.latency_patterns},           {"mean_latency_error", r.mean_latency_error},
      {"max_latency_error", r.max_latency_error}, {"mean_delay_error", r.mean_delay_error},
      {"max_delay_error", r.max_delay_error},     {"undefined_errors", r.undefined_errors},
      {"per_pattern", std::move(latency)}};
  // Keys carry node names, which need not be valid UTF-8: replace rather than throw.
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace weft
