// The accuracy metrics of Project 5 §7.5.1: false positives and negatives counted by path
// patterns, by path instances and by messages; the top-N false-negative curve of Figure
// 17 with tolerances for near ties; the latency error of correctly inferred patterns.
//
// Where weft is more precise than the paper: an inferred instance is correct only if it
// has exactly the messages and the parent links of a truth instance (the paper compares
// "paths" without saying how); and a message the algorithm left out of every instance is
// a false negative but not a false positive (docs/eval.md works the paper's example).
#include "eval/eval.h"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <cmath>

#include "report/describe.h"

namespace weft {

namespace {

// Where a truth message sits: its instance and its parent message (invalid for a root).
struct TruthPlace {
  uint32_t instance;
  MessageId parent;
};

// |inferred - truth| / |truth|; unset when truth is 0 and inferred is not.
std::optional<double> RelativeError(double truth, double inferred) {
  if (truth == 0) return inferred == 0 ? std::optional<double>(0.0) : std::nullopt;
  return std::fabs(inferred - truth) / std::fabs(truth);
}

void CountInstancesAndMessages(const PathSet& truth, const PathSet& inferred, EvalReport& r) {
  absl::flat_hash_map<MessageId, TruthPlace> place;
  place.reserve(truth.messages.size());
  for (size_t t = 0; t < truth.instance_count(); ++t) {
    auto msgs = truth.InstanceMessages(t);
    auto parents = truth.InstanceParents(t);
    for (size_t k = 0; k < msgs.size(); ++k) {
      place[msgs[k]] = {uint32_t(t), parents[k] < 0 ? MessageId() : msgs[size_t(parents[k])]};
    }
  }
  r.instances.truth = truth.instance_count();
  r.instances.inferred = inferred.instance_count();
  r.messages.truth = truth.messages.size();
  r.messages_without_truth = truth.trace_messages - truth.messages.size();

  for (size_t i = 0; i < inferred.instance_count(); ++i) {
    auto msgs = inferred.InstanceMessages(i);
    auto parents = inferred.InstanceParents(i);
    uint64_t with_truth = 0;
    bool correct = true;
    uint32_t instance = UINT32_MAX;
    for (size_t k = 0; k < msgs.size(); ++k) {
      auto it = place.find(msgs[k]);
      if (it == place.end()) {
        correct = false;
        continue;
      }
      ++with_truth;
      const TruthPlace& p = it->second;
      if (instance == UINT32_MAX) instance = p.instance;
      MessageId parent = parents[k] < 0 ? MessageId() : msgs[size_t(parents[k])];
      if (p.instance != instance || p.parent != parent) correct = false;
    }
    // Same messages as the truth instance: all of them found there, and as many.
    if (correct && msgs.size() != truth.InstanceMessages(instance).size()) correct = false;
    r.messages.inferred += with_truth;
    r.inferred_without_truth += msgs.size() - with_truth;
    if (correct) {
      ++r.instances.correct;
      r.messages.correct += msgs.size();
    } else {
      r.messages.false_positives += with_truth;
    }
  }
  r.instances.false_positives = r.instances.inferred - r.instances.correct;
  r.instances.false_negatives = r.instances.truth - r.instances.correct;
  r.messages.false_negatives = r.messages.truth - r.messages.correct;
  // Counted by message: probabilistic instances (linking) may share messages.
  std::vector<bool> assigned(truth.trace_messages, false);
  for (MessageId m : inferred.messages) assigned[m.value()] = true;
  r.truth_messages_unassigned = 0;
  for (MessageId m : truth.messages) r.truth_messages_unassigned += !assigned[m.value()];
}

void CountRequests(const PathSet& truth, const PathSet& inferred, EvalReport& r) {
  // Each truth message's kind, from its element in its instance's pattern.
  std::vector<MessageKind> truth_kind(truth.trace_messages, MessageKind::kMessage);
  for (size_t t = 0; t < truth.instance_count(); ++t) {
    const PathPattern& pattern = truth.patterns[truth.pattern[t]];
    auto msgs = truth.InstanceMessages(t);
    for (size_t k = 0; k < msgs.size(); ++k) truth_kind[msgs[k].value()] = pattern.elements[k].kind;
  }
  // Each message's inferred instance (the most probable one holding it) and parent there.
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> instance_of(inferred.trace_messages, kNone);
  std::vector<MessageId> parent_of(inferred.trace_messages);
  for (size_t i = 0; i < inferred.instance_count(); ++i) {
    auto msgs = inferred.InstanceMessages(i);
    auto parents = inferred.InstanceParents(i);
    for (size_t k = 0; k < msgs.size(); ++k) {
      uint32_t& held = instance_of[msgs[k].value()];
      if (held != kNone && inferred.probability[held] >= inferred.probability[i]) continue;
      held = uint32_t(i);
      parent_of[msgs[k].value()] = parents[k] < 0 ? MessageId() : msgs[size_t(parents[k])];
    }
  }
  // Which request each inferred instance holds messages of (kMixed: more than one).
  constexpr uint32_t kMixed = UINT32_MAX - 1;
  std::vector<uint32_t> request_of(inferred.instance_count(), kNone);
  for (size_t t = 0; t < truth.instance_count(); ++t) {
    for (MessageId m : truth.InstanceMessages(t)) {
      uint32_t i = instance_of[m.value()];
      if (i == kNone) continue;
      request_of[i] = request_of[i] == kNone || request_of[i] == t ? uint32_t(t) : kMixed;
    }
  }
  r.requests.requests = truth.instance_count();
  for (size_t t = 0; t < truth.instance_count(); ++t) {
    auto msgs = truth.InstanceMessages(t);
    auto parents = truth.InstanceParents(t);
    bool mixed = false, spread = false, same_parents = true;
    uint32_t first = instance_of[msgs[0].value()];
    for (size_t k = 0; k < msgs.size(); ++k) {
      uint32_t i = instance_of[msgs[k].value()];
      spread = spread || i == kNone || i != first;
      mixed = mixed || (i != kNone && request_of[i] == kMixed);
      MessageId parent = parents[k] < 0 ? MessageId() : msgs[size_t(parents[k])];
      const bool right = i != kNone && parent_of[msgs[k].value()] == parent;
      same_parents = same_parents && parent_of[msgs[k].value()] == parent;
      if (truth_kind[msgs[k].value()] != MessageKind::kReturn) {
        ++r.parent_links.messages;
        r.parent_links.correct += right;
      }
    }
    if (mixed) {
      ++r.requests.mis_stitched;
    } else if (spread || inferred.InstanceMessages(first).size() != msgs.size()) {
      ++r.requests.orphaned;  // the instance also holds messages without ground truth
    } else if (same_parents) {
      ++r.requests.exact;
    } else {
      ++r.requests.wrong_parents;
    }
  }
}

void CountPatterns(const PathSet& truth, const PathSet& inferred,
                   const absl::flat_hash_map<std::string_view, uint32_t>& inferred_by_key,
                   EvalReport& r) {
  r.patterns.truth = truth.patterns.size();
  r.patterns.inferred = inferred.patterns.size();
  for (const PathPattern& p : truth.patterns) {
    if (inferred_by_key.contains(p.key)) ++r.patterns.correct;
  }
  r.patterns.false_positives = r.patterns.inferred - r.patterns.correct;
  r.patterns.false_negatives = r.patterns.truth - r.patterns.correct;
}

// Figure 17: for each N, the top-N truth patterns (by count) missing from the inferred
// top N. A miss is forgiven under tolerance t > 0 when its inferred score is at least
// (1 - t) times the N-th inferred score: it was within t of making the cut. t = 0 counts
// every miss, exact ties with the N-th included.
void TopNCurve(const PathSet& truth, const PathSet& inferred, const EvalOptions& options,
               EvalReport& r) {
  std::vector<uint32_t> truth_rank = RankPatterns(truth, PatternOrder::kCount);
  std::vector<uint32_t> inferred_rank = RankPatterns(inferred, r.inferred_order);
  absl::flat_hash_map<std::string_view, size_t> position;  // key -> 0-based inferred rank
  for (size_t j = 0; j < inferred_rank.size(); ++j)
    position[inferred.patterns[inferred_rank[j]].key] = j;

  const size_t max_n = std::min<size_t>(size_t(std::max(options.max_n, 0)),
                                        std::max(truth_rank.size(), inferred_rank.size()));
  for (size_t n = 1; n <= max_n; ++n) {
    TopNPoint point;
    point.n = int(n);
    point.false_negatives.assign(r.tolerances.size(), 0);
    bool has_nth = n <= inferred_rank.size();
    double nth =
        has_nth ? PatternScore(inferred.patterns[inferred_rank[n - 1]], r.inferred_order) : 0;
    for (size_t j = 0; j < std::min(n, truth_rank.size()); ++j) {
      const PathPattern& tp = truth.patterns[truth_rank[j]];
      auto it = position.find(tp.key);
      if (it != position.end() && it->second < n) continue;
      double score =
          it == position.end()
              ? 0
              : PatternScore(inferred.patterns[inferred_rank[it->second]], r.inferred_order);
      for (size_t t = 0; t < r.tolerances.size(); ++t) {
        bool forgiven = r.tolerances[t] > 0 && it != position.end() && has_nth &&
                        score >= (1 - r.tolerances[t]) * nth;
        if (!forgiven) ++point.false_negatives[t];
      }
      if (n == max_n) {
        MissedPattern m;
        m.truth_rank = int(j + 1);
        m.key = tp.key;
        m.shape = CompactShape(truth, tp);
        m.truth_count = tp.count;
        m.inferred_rank = it == position.end() ? 0 : int(it->second + 1);
        m.inferred_score = score;
        r.missed.push_back(std::move(m));
      }
    }
    r.top_n.push_back(std::move(point));
  }
}

void LatencyErrors(const PathSet& truth, const PathSet& inferred,
                   const absl::flat_hash_map<std::string_view, uint32_t>& inferred_by_key,
                   EvalReport& r) {
  double latency_weight = 0, latency_sum = 0, delay_weight = 0, delay_sum = 0;
  for (uint32_t t : RankPatterns(truth, PatternOrder::kCount)) {
    const PathPattern& tp = truth.patterns[t];
    auto it = inferred_by_key.find(tp.key);
    if (it == inferred_by_key.end()) continue;
    const PathPattern& ip = inferred.patterns[it->second];
    PatternLatencyError e;
    e.key = tp.key;
    e.truth_count = tp.count;
    const double w = double(tp.count);
    if (!tp.latency.empty() && !ip.latency.empty()) {
      e.latency_error = RelativeError(tp.latency.mean(), ip.latency.mean());
      if (e.latency_error) {
        latency_sum += w * *e.latency_error;
        latency_weight += w;
        r.max_latency_error = std::max(r.max_latency_error, *e.latency_error);
      } else {
        ++r.undefined_errors;
      }
    }
    // Equal keys mean equal shapes, so elements correspond one to one.
    for (size_t k = 1; k < tp.elements.size() && k < ip.elements.size(); ++k) {
      const LatencyHistogram& td = tp.elements[k].delay;
      const LatencyHistogram& id = ip.elements[k].delay;
      if (td.empty() || id.empty()) continue;
      std::optional<double> err = RelativeError(td.mean(), id.mean());
      if (!err) {
        ++r.undefined_errors;
        continue;
      }
      e.max_delay_error = std::max(e.max_delay_error, *err);
      delay_sum += w * *err;
      delay_weight += w;
    }
    r.max_delay_error = std::max(r.max_delay_error, e.max_delay_error);
    r.latency.push_back(std::move(e));
  }
  r.latency_patterns = r.latency.size();
  r.mean_latency_error = latency_weight > 0 ? latency_sum / latency_weight : 0;
  r.mean_delay_error = delay_weight > 0 ? delay_sum / delay_weight : 0;
}

}  // namespace

Result<EvalReport> Evaluate(const PathSet& truth, const PathSet& inferred,
                            const EvalOptions& options) {
  if (truth.trace_messages != inferred.trace_messages ||
      truth.trace_fingerprint != inferred.trace_fingerprint) {
    return Status::InvalidArgument(
        "the truth and the inferred paths come from different traces (truth: {} messages, "
        "fingerprint "
        "{:016x}; inferred: {} messages, fingerprint {:016x})",
        truth.trace_messages, truth.trace_fingerprint, inferred.trace_messages,
        inferred.trace_fingerprint);
  }
  for (double t : options.tolerances) {
    if (!(t >= 0 && t < 1)) return Status::InvalidArgument("tolerance {} is outside [0, 1)", t);
  }
  EvalReport r;
  r.truth_algorithm = truth.algorithm;
  r.inferred_algorithm = inferred.algorithm;
  r.trace_messages = truth.trace_messages;
  r.tolerances = options.tolerances;
  if (options.inferred_order) {
    r.inferred_order = *options.inferred_order;
  } else {
    bool probabilistic = std::any_of(inferred.probability.begin(), inferred.probability.end(),
                                     [](double p) { return p < 1.0; });
    r.inferred_order = probabilistic ? PatternOrder::kExpected : PatternOrder::kCount;
  }
  absl::flat_hash_map<std::string_view, uint32_t> inferred_by_key;
  for (size_t i = 0; i < inferred.patterns.size(); ++i)
    inferred_by_key[inferred.patterns[i].key] = uint32_t(i);

  CountPatterns(truth, inferred, inferred_by_key, r);
  CountInstancesAndMessages(truth, inferred, r);
  CountRequests(truth, inferred, r);
  TopNCurve(truth, inferred, options, r);
  if (r.missed.size() > size_t(std::max(options.max_listed, 0)))
    r.missed.resize(size_t(std::max(options.max_listed, 0)));
  LatencyErrors(truth, inferred, inferred_by_key, r);
  return r;
}

}  // namespace weft
