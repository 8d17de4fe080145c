// Message linking, WAP5 §5.1 (see linking.h). Departures from the paper, each for a
// reason given where it is made: candidate parents are capped per message
// (kMaxCandidates) and weak links dropped (min_link); a message whose most likely option
// is to be spontaneous starts a tree; a message already in a tree is not added again
// through a second parent; call-and-return paths are re-rooted into call trees.
#include "infer/linking/linking.h"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "infer/aggregate.h"
#include "infer/linking/linker.h"
#include "trace/clock_offsets.h"

namespace weft {
namespace linking {

// RPC mode (weft's addition, docs/linking.md). When messages are CALLs and RETURNs with
// call ids (as reconcile and gen give them), a RETURN's cause is its CALL, and a CALL's is
// the CALL into its sender that encloses it: arrived before it was sent and answered
// after its answer arrived, both ends on the sender's own clock, so clock offsets do not
// matter. Only the choice among enclosing calls is left to the delay model; everything
// else is decided, and path instances come out as call trees (path_set.h) directly.
//
// Calls and returns are paired by kLinkingCallPairing (linking.h).
//
// On a one-clock trace a call's send time is on the caller's clock and its return's on the
// callee's, which kLocalClock would never pair; the trace's order pairs them instead.
void Linker::PairCalls() {
  CallPairingOptions pairing = kLinkingCallPairing;
  if (one_clock_) pairing.order = CallPairingOptions::Order::kTrace;
  const CallPairs pairs = weft::PairCalls(trace_, pairing);
  answer_.assign(n_, kNone);
  answers_.assign(n_, kNone);
  for (size_t m = 0; m < n_; ++m) {
    const MessageId partner = pairs.partner[m];
    if (!partner.valid()) continue;
    (c_.kind[m] == MessageKind::kCall ? answer_ : answers_)[m] = partner.value();
  }
  rpc_ = pairs.pairs > 0;
  unpaired_returns_ = pairs.unmatched_returns;
}

template <typename F>
void Linker::ForEachCandidate(size_t m, F&& f) const {
  const Site s = site_[m];
  if (s.list == kNone) return;
  const bool enclosing_only = EnclosingOnly(m);
  const uint32_t m_answer = enclosing_only ? answer_[m] : kNone;
  const TimeNs m_answered = m_answer != kNone ? Arrival(m_answer) : kNoTime;
  // An enclosing call arrived at most the node's longest visit ago: older ones are
  // answered already, so the scan stops there (unless the node also gets messages that
  // are not paired calls, which may be candidates from further back).
  const TimeNs horizon = enclosing_only && reach_[s.list] != kNoTime
                             ? std::min(options_.window, reach_[s.list])
                             : options_.window;
  auto first = lists_.entries.begin() + lists_.begin[s.list];
  auto it = std::upper_bound(first, lists_.entries.begin() + lists_.begin[s.list + 1],
                             std::pair(s.time, UINT32_MAX));
  for (uint32_t seen = 0; it != first && seen < kMaxCandidates;) {
    --it;
    const uint32_t parent = it->second;
    if (parent == m) continue;  // a message to itself is not its own cause
    const TimeNs delay = s.time - it->first;
    if (delay > horizon) return;
    if (enclosing_only) {
      const MessageKind kind = c_.kind[parent];
      if (kind == MessageKind::kReturn) continue;
      if (kind == MessageKind::kCall && m_answered != kNoTime && answer_[parent] != kNone &&
          c_.send_time[answer_[parent]] != kNoTime && c_.send_time[answer_[parent]] < m_answered) {
        continue;  // answered before m's answer arrived: does not enclose m
      }
    } else if (rpc_ && answers_[m] != kNone) {
      return;  // a paired RETURN's cause is its call
    }
    // The return gap: how long after m's answer arrived the candidate was answered.
    TimeNs gap = kNoTime;
    if (enclosing_only && m_answered != kNoTime && c_.kind[parent] == MessageKind::kCall &&
        answer_[parent] != kNone && c_.send_time[answer_[parent]] != kNoTime) {
      gap = c_.send_time[answer_[parent]] - m_answered;
    }
    ++seen;
    if (!f(parent, delay, gap)) return;
  }
}

// Per node, how far back an enclosing call can have arrived: its longest visit (a paired
// call's arrival to its return's send, both on its clock); kNoTime, no limit, if it also
// receives calls never answered or free-form messages.
void Linker::ComputeReach() {
  const size_t nodes = trace_.nodes().size();
  reach_.assign(lists_.begin.size() - 1, kNoTime);
  std::vector<TimeNs> longest(nodes, 0);
  std::vector<bool> open_ended(nodes, false);
  for (size_t m = 0; m < n_; ++m) {
    if (Arrival(m) == kNoTime) continue;
    const uint32_t node = c_.receiver[m].value();
    if (c_.kind[m] == MessageKind::kMessage ||
        (c_.kind[m] == MessageKind::kCall && answer_[m] == kNone)) {
      open_ended[node] = true;
    } else if (c_.kind[m] == MessageKind::kCall) {
      const TimeNs answered = c_.send_time[answer_[m]];
      if (answered == kNoTime)
        open_ended[node] = true;
      else
        longest[node] = std::max(longest[node], answered - Arrival(m));
    }
  }
  for (size_t node = 0; node < nodes; ++node) {
    if (!open_ended[node]) reach_[node] = longest[node];
  }
}

void Linker::IndexSites() {
  // Pairs of (sender, receiver); per message its site: the node whose clock orders it
  // against its candidate parents, and which list holds those candidates.
  absl::flat_hash_map<uint64_t, uint32_t> pair_index;
  absl::flat_hash_map<uint64_t, uint32_t> back_list;  // (A, B) -> list of A->B sends
  const uint32_t nodes = uint32_t(trace_.nodes().size());
  pair_.resize(n_);
  site_.resize(n_);
  auto key = [](NodeId a, NodeId b) { return uint64_t(a.value()) << 32 | b.value(); };
  for (size_t m = 0; m < n_; ++m) {
    pair_[m] =
        pair_index.try_emplace(key(c_.sender[m], c_.receiver[m]), uint32_t(pair_index.size()))
            .first->second;
    if (c_.send_time[m] != kNoTime) {
      site_[m] = {c_.sender[m].value(), c_.send_time[m]};
    } else {  // a Trace has at least one of the two times
      auto [it, added] = back_list.try_emplace(key(c_.receiver[m], c_.sender[m]),
                                               nodes + uint32_t(back_list.size()));
      site_[m] = {it->second, c_.recv_time[m]};
    }
  }
  rate_.assign(pair_index.size(), 0);
  // Lists 0..nodes-1: messages into each node by arrival; then one list per (A, B) whose
  // B sent messages only A timed: A's sends to B.
  const size_t lists = nodes + back_list.size();
  lists_.begin.assign(lists + 1, 0);
  auto for_each_entry = [&](auto&& f) {
    for (size_t m = 0; m < n_; ++m) {
      if (Arrival(m) != kNoTime) f(c_.receiver[m].value(), Arrival(m), m);
      if (c_.send_time[m] == kNoTime) continue;
      auto it = back_list.find(key(c_.sender[m], c_.receiver[m]));
      if (it != back_list.end()) f(it->second, c_.send_time[m], m);
    }
  };
  for_each_entry([&](uint32_t list, TimeNs, size_t) { ++lists_.begin[list + 1]; });
  std::partial_sum(lists_.begin.begin(), lists_.begin.end(), lists_.begin.begin());
  lists_.entries.resize(lists_.begin.back());
  std::vector<uint32_t> fill(lists_.begin.begin(), lists_.begin.end() - 1);
  for_each_entry([&](uint32_t list, TimeNs t, size_t m) {
    lists_.entries[fill[list]++] = {t, uint32_t(m)};
  });
  for (size_t l = 0; l < lists; ++l) {
    std::sort(lists_.entries.begin() + lists_.begin[l],
              lists_.entries.begin() + lists_.begin[l + 1]);
  }
}

// Every message's candidate parents, found once: the scans of the time-sorted lists are
// the costly part, and steps 1 and 2 and every learning iteration read the same ones.
void Linker::CollectCandidates() {
  candidate_begin_.assign(n_ + 1, 0);
  for (size_t m = 0; m < n_; ++m) {
    candidate_begin_[m] = uint32_t(candidate_parent_.size());
    ForEachCandidate(m, [&](uint32_t parent, TimeNs delay, TimeNs gap) {
      candidate_parent_.push_back(parent);
      candidate_delay_.push_back(uint8_t(DelayBin(delay)));
      candidate_gap_.push_back(gap == kNoTime ? kNoGap : uint8_t(DelayBin(gap)));
      return true;
    });
  }
  candidate_begin_[n_] = uint32_t(candidate_parent_.size());
  candidate_p_.assign(candidate_parent_.size(), 0.0f);
}

// Step 1: d per sender->receiver pair, the mean over its messages of the delay since the
// latest possible parent, gaps over the window not counted (WAP5 §5.1, step 1).
void Linker::EstimateCausalDelays() {
  std::vector<double> sum(rate_.size(), 0);
  std::vector<uint64_t> count(rate_.size(), 0);
  for (size_t m = 0; m < n_; ++m) {
    if (candidate_begin_[m] == candidate_begin_[m + 1]) continue;
    sum[pair_[m]] += double(site_[m].time - ParentTime(m, candidate_parent_[candidate_begin_[m]]));
    ++count[pair_[m]];
  }
  for (size_t p = 0; p < rate_.size(); ++p) {
    // No sample: every message of the pair is spontaneous; the rate only has to be finite.
    const double d = count[p] ? sum[p] / double(count[p]) : double(options_.window);
    rate_[p] = 1.0 / std::max(d, 1.0);
  }
}

// Step 2: each candidate parent weighs e^(-delay/d), the spontaneous option e^(-y); the
// weights are normalised to probabilities (WAP5 §5.1, step 2; Figure 6). With the learned
// model a candidate weighs its delay bin's weight instead (times its return gap's, for
// RPC), the best possible parent 1 as in the paper's model, and spontaneity e^(-y) times
// the pair's learned share of spontaneous messages.
void Linker::ScoreParents(bool learned) {
  const double spontaneous_weight = std::exp(-options_.spontaneous_delay);
  spontaneous_.assign(n_, 1.0f);
  for (size_t m = 0; m < n_; ++m) {
    const uint32_t first = candidate_begin_[m], last = candidate_begin_[m + 1];
    if (first == last) continue;
    const uint32_t model = learned ? model_of_[pair_[m]] : kNone;
    const float* weight = learned ? &model_[size_t(model) * kModelSize] : nullptr;
    const double spontaneous =
        learned ? spontaneous_weight * model_spontaneous_[model] : spontaneous_weight;
    double total = spontaneous;
    const float floor = EnclosingOnly(m) ? kMinEnclosingWeight : 0.0f;
    for (uint32_t k = first; k < last; ++k) {
      double w;
      if (learned) {
        w = std::max(weight[candidate_delay_[k]], floor) *
            (candidate_gap_[k] != kNoGap ? std::max(weight[kDelayBins + candidate_gap_[k]], floor)
                                         : 1.0f);
      } else {
        w = std::exp(-double(site_[m].time - ParentTime(m, candidate_parent_[k])) *
                     rate_[pair_[m]]);
      }
      candidate_p_[k] = float(w);
      total += w;
    }
    for (uint32_t k = first; k < last; ++k) candidate_p_[k] = float(candidate_p_[k] / total);
    spontaneous_[m] = float(spontaneous / total);
  }
}

// The learned delay model (weft's departure from WAP5's exponential, which always favours
// the latest candidate and so loses the true parent whenever other messages arrive in
// between, i.e. at any parallelism). Like Project 5's scoreboard (§5.1.1.2), it learns
// each pair's delay distribution from the trace: per sender->receiver pair and log-sized
// delay bin, the expected number of parents found at that delay (the sum of the last
// iteration's link probabilities) over the number of candidates at that delay. A delay
// at which candidates usually are the parent weighs near 1; one where they rarely are,
// near 0. One iteration of this is one EM step; a few suffice.
void Linker::LearnDelays() {
  if (model_of_.empty()) {
    // A model per pair whose messages have candidates.
    model_of_.assign(rate_.size(), kNone);
    uint32_t models = 0;
    for (size_t m = 0; m < n_; ++m) {
      if (candidate_begin_[m] != candidate_begin_[m + 1] && model_of_[pair_[m]] == kNone)
        model_of_[pair_[m]] = models++;
    }
    model_.resize(size_t(models) * kModelSize);
    model_spontaneous_.resize(models);
  }
  std::vector<float> candidates_at(model_.size(), 0), parents_at(model_.size(), 0);
  std::vector<float> spontaneous(model_spontaneous_.size(), 0),
      messages(model_spontaneous_.size(), 0);
  for (size_t m = 0; m < n_; ++m) {
    const uint32_t first = candidate_begin_[m], last = candidate_begin_[m + 1];
    if (first == last) continue;
    const uint32_t model = model_of_[pair_[m]];
    const size_t base = size_t(model) * kModelSize;
    for (uint32_t k = first; k < last; ++k) {
      candidates_at[base + candidate_delay_[k]] += 1;
      parents_at[base + candidate_delay_[k]] += candidate_p_[k];
      if (candidate_gap_[k] == kNoGap) continue;
      candidates_at[base + kDelayBins + candidate_gap_[k]] += 1;
      parents_at[base + kDelayBins + candidate_gap_[k]] += candidate_p_[k];
    }
    spontaneous[model] += spontaneous_[m];
    messages[model] += 1;
  }
  // The prior of being spontaneous, per pair, with one pseudo-message that was.
  for (size_t model = 0; model < model_spontaneous_.size(); ++model) {
    model_spontaneous_[model] = (spontaneous[model] + 1) / (messages[model] + 1);
  }
  for (size_t base = 0; base < model_.size(); base += kDelayBins) {
    // One pseudo-candidate per bin keeps a bin seen once from weighing as much as one
    // seen a thousand times. Weights are scaled to a peak of 1.
    float peak = 0;
    for (size_t b = base; b < base + kDelayBins; ++b) {
      model_[b] = parents_at[b] / (candidates_at[b] + 1);
      peak = std::max(peak, model_[b]);
    }
    // Without any parent: no delay is likely; without any gap seen, gaps say nothing.
    const bool gaps = (base / kDelayBins) % 2 == 1;
    for (size_t b = base; b < base + kDelayBins; ++b)
      model_[b] = peak > 0 ? model_[b] / peak : gaps ? 1.0f : 0.0f;
  }
}

// The links: candidates at least min_link likely (weaker ones would only ever be
// probably-false decisions with a factor of nearly 1), by child and by parent.
void Linker::InvertLinks() {
  link_begin_.assign(n_ + 1, 0);
  for (size_t m = 0; m < n_; ++m) {
    link_begin_[m] = uint32_t(link_parent_.size());
    for (uint32_t k = candidate_begin_[m]; k < candidate_begin_[m + 1]; ++k) {
      if (candidate_p_[k] < options_.min_link) continue;
      link_parent_.push_back(candidate_parent_[k]);
      link_child_.push_back(uint32_t(m));
      link_p_.push_back(candidate_p_[k]);
    }
  }
  link_begin_[n_] = uint32_t(link_parent_.size());
  // The most likely option of each message, if it is a link.
  best_link_.assign(link_parent_.size(), false);
  for (size_t m = 0; m < n_; ++m) {
    uint32_t best = kNone;
    float best_p = spontaneous_[m];
    for (uint32_t l = link_begin_[m]; l < link_begin_[m + 1]; ++l) {
      if (link_p_[l] > best_p) best = l, best_p = link_p_[l];
    }
    if (best != kNone) best_link_[best] = true;
  }
  // Inverted: per parent, its links in order of child (time order).
  child_begin_.assign(n_ + 1, 0);
  for (uint32_t p : link_parent_) ++child_begin_[p + 1];
  std::partial_sum(child_begin_.begin(), child_begin_.end(), child_begin_.begin());
  child_link_.resize(link_parent_.size());
  std::vector<uint32_t> fill(child_begin_.begin(), child_begin_.end() - 1);
  for (size_t m = 0; m < n_; ++m) {
    for (uint32_t l = link_begin_[m]; l < link_begin_[m + 1]; ++l)
      child_link_[fill[link_parent_[l]]++] = l;
  }
}

Result<LinkingInference> Linker::Run() {
  if (!(options_.window > 0))
    return Status::InvalidArgument("the linking window x must be positive");
  if (!(options_.spontaneous_delay > 0))
    return Status::InvalidArgument("y (the spontaneous delay) must be positive");
  if (!(options_.min_link > 0 && options_.min_link < 0.5)) {
    return Status::InvalidArgument("min_link must be in (0, 0.5)");
  }
  if (!(options_.try_both_low >= 0 && options_.try_both_low <= options_.try_both_high &&
        options_.try_both_high <= 1)) {
    return Status::InvalidArgument("try-both bounds need 0 <= low <= high <= 1");
  }
  if (options_.try_both_budget > 20)
    return Status::InvalidArgument("a try-both budget over 20 would build 2^20 trees per root");
  n_ = trace_.size();
  one_clock_ = n_ > 0 && std::all_of(c_.recv_time.begin(), c_.recv_time.end(),
                                     [](TimeNs t) { return t == kNoTime; });
  if (options_.use_calls) PairCalls();
  IndexSites();
  if (rpc_) ComputeReach();
  CollectCandidates();
  lists_ = CandidateLists{};  // no longer needed
  EstimateCausalDelays();
  ScoreParents(false);
  for (uint32_t i = 0; i < options_.learning_iterations; ++i) {
    LearnDelays();
    ScoreParents(true);
  }
  InvertLinks();
  PathSetBuilder builder(trace_, "linking");
  builder.AllowSharedMessages();
  int64_t clients = 0;
  if (options_.aggregate_clients) {
    NodeAggregation aggregation = AggregateClients(trace_);
    clients = aggregation.clients;
    if (clients > 0)
      builder.RenameNodes(std::move(aggregation.names), std::move(aggregation.alias));
  }
  // Network latency per hop with the clock offsets removed (WAP5 §5.2).
  const ClockOffsets offsets = EstimateClockOffsets(trace_);
  builder.SetClockOffsets(offsets.node);
  WEFT_RETURN_IF_ERROR(BuildTrees(builder));
  LinkingInference result{std::move(builder).Finish(),
                          {.messages = int64_t(n_),
                           .pairs = int64_t(rate_.size()),
                           .links = int64_t(link_parent_.size()),
                           .roots = roots_,
                           .try_both = try_both_,
                           .budget_exhausted = exhausted_,
                           .truncated = truncated_,
                           .clients = clients,
                           .rpc = rpc_,
                           .unpaired_returns = unpaired_returns_}};
  PathSet& set = result.paths;
  set.clients_aggregated = clients > 0;
  set.clock_offsets = offsets.pairs;
  return result;
}

}  // namespace linking

Result<LinkingInference> InferLinking(const Trace& trace, const LinkingOptions& options) {
  linking::Linker linker(trace, options);
  return linker.Run();
}

}  // namespace weft
