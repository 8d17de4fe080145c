// Project 5 §5.1: the nesting algorithm. See nesting.h for the outline.
//
// This file pairs calls, fills the scoreboard and writes the paths; choose_parents.cc
// chooses each child's parent; nesting_state.h holds what they share.
//
// Where weft departs from Figure 4:
// - Times come from the middle node's own clock when the trace has receive times: a call
//   B->C is compared with its candidate parent A->B by the parent's arrival at B and the
//   child's departure from B (Project 5's traces had one timestamp per message, which is
//   what weft uses when receive times are missing).
// - The penalties multiply by (1 + c)^-x, not c^-x: with c counting children already
//   assigned, c^-x is infinite at c = 0 and no penalty at c = 1.
// - Optionally (NestingOptions::score_returns) a second scoreboard of return gaps, the
//   time from the child's return to the parent's return, weighs in: the last child of a
//   parent returns a characteristic time before its parent does, so the return side tells
//   apart candidates that the call side cannot (docs/nesting.md has the figures).
// - With NestingOptions::sibling_passes (default 3) FindNestedPairs runs again, each
//   candidate's score also weighed by a sibling scoreboard learned from the previous
//   pass's choices: whether the child would come first among its parent's children, after
//   a returned sibling (and how long after its return), or overlapping an open one. It
//   learns from data what the overlap penalty assumes (RPC-style children run in series)
//   and the compute gap between one call's return and the next call.
// - With NestingOptions::lookahead (default) each choice is weighed by the best choice it
//   leaves the next call from the same node, instead of Figure 4's greedy choice: two
//   close calls from a node with two free parents otherwise let the first take the parent
//   the second fits better, and the two trees swap tails (docs/nesting.md, "Lookahead").
// - With NestingOptions::scale_generic_penalty (default) the generic child penalty z fades
//   at nodes whose visits make few calls (GenericPenaltyByNode).
// - Candidate parents that never return (cut off by the end of the trace) are dropped, and
//   with a skew window a parent that would close a cycle is skipped.
#include "infer/nesting/nesting.h"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <future>
#include <limits>
#include <vector>

#include "core/progress.h"
#include "infer/call_pairs.h"
#include "infer/nesting/nesting_state.h"
#include "paths/path_set_builder.h"

namespace weft {
namespace nesting_detail {

Result<NestingInference> Nesting::Run() {
  // The path set's builder fingerprints the trace and sizes its tables; that is done on
  // another thread meanwhile.
  std::future<PathSetBuilder> builder =
      std::async(std::launch::async, [this] { return PathSetBuilder(trace_, "nesting"); });
  FindCallPairs();
  ScoreNestings();
  GenericPenaltyByNode();
  if (options_.lookahead) FindNextFromCaller();
  FindSegments();
  const int passes = options_.sibling_passes;
  for (int pass = 0; pass <= passes; ++pass) FindNestedPairs(pass > 0, pass < passes);
  return FindCallPaths(builder.get());
}

// §5.1.1.1. Pairs calls with returns (PairCalls with NestingCallPairing), then walks the
// trace once in time order, keeping for each node the calls into it that are open (or
// closed less than the skew window ago): when a return closes the call A->B, the calls
// into A open at that moment and made before A->B are its candidate parents.
//
// Two departures keep one lost or reordered message from harming the rest. A return
// that finds no open call waits: under clock skew it can sort before its own call,
// which then pairs with it (the pair closes at the call). And with call ids, a call
// whose key is still open means the open call lost its return (ids are unique among
// open calls); that call is closed as unmatched, so a later reuse of its id cannot
// stretch it over seconds of trace and make it every child's candidate parent.
void Nesting::FindCallPairs() {
  const TimeNs w = options_.skew_window;
  const CallPairs pairs = PairCalls(trace_, NestingCallPairing(options_));
  std::vector<std::vector<uint32_t>> active_into(trace_.nodes().size());
  std::vector<uint32_t> call_index(trace_.size());  // per CALL message: its index in calls_
  std::vector<bool> lost;                           // per call: closed as unmatched
  // Drops calls that can no longer be a parent: lost, or returned longer ago than w.
  auto prune = [&](std::vector<uint32_t>& active, TimeNs now) {
    std::erase_if(active, [&](uint32_t i) {
      const Call& c = calls_[i];
      return lost[i] || (c.ret.valid() && (w == 0 || Sent(c.ret) + w < now));
    });
  };
  // Sized once: growing by doubling would copy these hot arrays and fault in pages twice.
  size_t call_count = size_t(std::count(cols_.kind.begin(), cols_.kind.end(), MessageKind::kCall));
  calls_.reserve(call_count);
  lost.reserve(call_count);
  candidates_.reserve(2 * call_count);
  size_t next_given_up = 0;
  Progress progress("nesting: call pairs", trace_.size(), "messages");
  for (uint32_t i = 0; i < trace_.size(); ++i) {
    progress.Update(i);
    MessageId m(i);
    MessageKind kind = cols_.kind[i];
    if (kind == MessageKind::kMessage) {
      ++ignored_messages_;
      continue;
    }
    const MessageId partner = pairs.partner[i];
    if (kind == MessageKind::kCall) {
      uint32_t index = uint32_t(calls_.size());
      call_index[i] = index;
      calls_.push_back(Call{.call = m, .caller = cols_.sender[i], .callee = cols_.receiver[i]});
      lost.push_back(false);
      std::vector<uint32_t>& active = active_into[cols_.receiver[i].value()];
      if ((active.size() & 15) == 15) prune(active, Sent(m));
      active.push_back(index);
      if (partner.valid() && partner.value() < i) {  // a return that waited for it
        ClosePair(index, partner, active_into[cols_.sender[i].value()], prune);
      }
      for (; next_given_up < pairs.given_up.size() && pairs.given_up[next_given_up].by == m;
           ++next_given_up) {
        lost[call_index[pairs.given_up[next_given_up].call.value()]] = true;
      }
      continue;
    }
    // A RETURN from B to A closes the call A->B it answers.
    if (partner.valid() && partner.value() < i) {
      const uint32_t child = call_index[partner.value()];
      ClosePair(child, m, active_into[calls_[child].caller.value()], prune);
    }
  }
  returns_ = pairs.pairs + pairs.unmatched_returns;
  unmatched_returns_ = pairs.unmatched_returns;
  unmatched_calls_ = pairs.unmatched_calls;
  RecordCallTimes();
  // Now that every pair is known, keep only candidates that returned and that nest
  // the child on the middle node's own clock, within the skew window: arrived before
  // the child left and returned after the child's return arrived. The walk above
  // orders by send times; with receive times a parent can be sent before its child
  // yet arrive after it, and such an impossible candidate's negative delay would pile
  // up in bin 0 of the scoreboard and attract every choice. Without receive times this
  // removes nothing the walk admitted.
  for (uint32_t child = 0; child < calls_.size(); ++child) {
    Call& c = calls_[child];
    if (!c.ret.valid()) continue;
    const CallTimes& t = times_[child];
    uint32_t* begin = candidates_.data() + c.candidates_begin;
    uint32_t* end = std::remove_if(begin, begin + c.candidate_count, [&](uint32_t p) {
      const CallTimes& parent = times_[p];
      return !calls_[p].ret.valid() || parent.arrived > t.departed + w ||
             parent.answered + w < t.returned;
    });
    c.candidate_count = uint32_t(end - begin);
  }
}

// Each returned call's times, read once from the trace's columns for the hot loops
// that follow.
void Nesting::RecordCallTimes() {
  times_.resize(calls_.size());
  for (size_t i = 0; i < calls_.size(); ++i) {
    const Call& c = calls_[i];
    if (!c.ret.valid()) continue;
    times_[i] = {.departed = Sent(c.call),
                 .arrived = Received(c.call),
                 .answered = Sent(c.ret),
                 .returned = Received(c.ret)};
  }
}

// Pairs call `child` with its return `ret` and records its candidate parents: the calls
// into its caller A still open when the return arrived, made before the child (in
// trace order; with a skew window, up to w after it).
template <typename Prune>
void Nesting::ClosePair(uint32_t child, MessageId ret, std::vector<uint32_t>& active_into_caller,
                        Prune& prune) {
  const TimeNs w = options_.skew_window;
  Call& c = calls_[child];
  c.ret = ret;
  ++call_pairs_;
  prune(active_into_caller, Received(ret));
  c.candidates_begin = uint32_t(candidates_.size());
  TimeNs departed = Sent(c.call);
  for (uint32_t p : active_into_caller) {
    if (p == child) continue;
    bool before = w == 0 ? p < child : Received(calls_[p].call) < departed + w;
    if (before) candidates_.push_back(p);
  }
  c.candidate_count = uint32_t(candidates_.size()) - c.candidates_begin;
}

uint32_t Nesting::TripleIndex(uint32_t parent, uint32_t child) {
  Triple t{calls_[parent].caller, calls_[parent].callee, calls_[child].callee};
  // With few nodes a direct table spares a hash lookup per candidate.
  uint32_t* direct = nullptr;
  if (!direct_triples_.empty()) {
    size_t n = trace_.nodes().size();
    direct = &direct_triples_[(size_t(t.a.value()) * n + t.b.value()) * n + t.c.value()];
    if (*direct != kNone) return *direct;
  }
  auto [it, inserted] = triples_.try_emplace(t, uint32_t(triples_.size()));
  if (inserted) {
    scoreboard_.resize(scoreboard_.size() + kRowSize, 0.0);
    triple_weight_.push_back(0.0);
  }
  if (direct) *direct = it->second;
  return it->second;
}

// §5.1.1.2. Every child adds 1/N to the (A, B, C, delay) entry of each of its N
// candidate parents; the entries of one (A, B, C) form a histogram of nesting delays
// whose peaks are the delays that recur, i.e. the causal ones.
void Nesting::ScoreNestings() {
  candidate_triples_.resize(candidates_.size());
  candidate_bins_.resize(candidates_.size());
  size_t n = trace_.nodes().size();
  if (n <= kDirectTripleNodes) direct_triples_.assign(n * n * n, kNone);
  for (uint32_t child = 0; child < calls_.size(); ++child) {
    const Call& c = calls_[child];
    if (!c.ret.valid() || c.candidate_count == 0) continue;
    double weight = 1.0 / c.candidate_count;
    candidate_parents_ += c.candidate_count;
    ++children_with_candidates_;
    for (uint32_t k = c.candidates_begin; k < c.candidates_begin + c.candidate_count; ++k) {
      uint32_t triple = TripleIndex(candidates_[k], child);
      candidate_triples_[k] = triple;
      Bins& bins = candidate_bins_[k];
      bins.call = uint16_t(kDelayBins.Bin(NestingDelay(candidates_[k], child)));
      bins.ret = uint16_t(kDelayBins.Bin(ReturnGap(candidates_[k], child)));
      CallScore(triple, bins.call) += weight;
      ReturnScore(triple, bins.ret) += weight;
      triple_weight_[triple] += weight;
    }
  }
  if (options_.smoothing_bins > 0) SmoothScoreboard();
  DivideReturnScores();
}

// Divides each return-gap score by its triple's total weight (RawScore), once the
// scoreboard is complete.
void Nesting::DivideReturnScores() {
  for (size_t t = 0; t < triple_weight_.size(); ++t) {
    double* gaps = &scoreboard_[t * kRowSize + kNestingBins];
    for (int b = 0; b < kNestingBins; ++b) gaps[b] = gaps[b] / triple_weight_[t];
  }
}

// Convolves each histogram with a Gaussian, so that peaks widened by clock skew still
// meet (§5.1.1.2, §7.5.6).
void Nesting::SmoothScoreboard() {
  const double sigma = options_.smoothing_bins;
  const int radius = int(std::ceil(3 * sigma));
  std::vector<double> kernel(size_t(2 * radius + 1));
  double total = 0;
  for (int d = -radius; d <= radius; ++d)
    total += kernel[size_t(d + radius)] = std::exp(-0.5 * d * d / (sigma * sigma));
  for (double& k : kernel) k /= total;
  std::vector<double> row(kNestingBins);
  for (size_t t = 0; t < 2 * triples_.size(); ++t) {  // call and return histograms
    double* h = &scoreboard_[t * kNestingBins];
    for (int b = 0; b < kNestingBins; ++b) {
      double sum = 0;
      for (int d = -radius; d <= radius; ++d) {
        int src = b + d;
        if (src >= 0 && src < kNestingBins) sum += h[src] * kernel[size_t(d + radius)];
      }
      row[size_t(b)] = sum;
    }
    std::copy(row.begin(), row.end(), h);
  }
}

// The generic child penalty's exponent for parents at each node B (the child's caller).
// §5.1.1.3's z says a parent with more children is less likely to take another; it
// spreads children evenly over the open parents. That holds where each visit at B makes
// a long series of calls (the shop's frontend and checkout, about 11 and 15 per visit),
// where the parent with most children is furthest along its series. Where visits make
// one or two calls, a count tells the path (children-d-cc: C twice, or D once), not the
// progress, and z sends a parent's second child to a fresh parent. So z is scaled by
// max(0, 1 - 1.5 / m), with m the calls from B that have a candidate parent per call
// into B: 0 up to 1.5 calls per visit, z/4 at 2, 0.9z at 15. With it no cell of Figures
// 18-22 is worse than before issue 21 (docs/nesting.md); 1.2 or 2 in place of 1.5 do
// as well, 1.0 does not.
void Nesting::GenericPenaltyByNode() {
  const size_t nodes = trace_.nodes().size();
  generic_penalty_.assign(nodes, options_.generic_child_penalty);
  if (!options_.scale_generic_penalty) return;
  std::vector<double> calls_into(nodes, 0.0), calls_from(nodes, 0.0);
  for (const Call& c : calls_) {
    if (!c.ret.valid()) continue;
    calls_into[c.callee.value()] += 1;
    if (c.candidate_count > 0) calls_from[c.caller.value()] += 1;
  }
  for (size_t b = 0; b < nodes; ++b) {
    const double m = calls_into[b] > 0 ? calls_from[b] / calls_into[b] : 0.0;
    generic_penalty_[b] *= m > 0 ? std::max(0.0, 1.0 - 1.5 / m) : 0.0;
  }
  if (nodes > kDirectTripleNodes) return;  // few nodes: a table spares exp() per candidate
  generic_penalty_table_.resize(nodes * kPenaltyTable);
  for (size_t b = 0; b < nodes; ++b) {
    for (int c = 0; c < kPenaltyTable; ++c)
      generic_penalty_table_[b * kPenaltyTable + size_t(c)] = ScaledPenalty(generic_penalty_[b], c);
  }
}

// §5.1.1.4. One path instance per root call pair: its call and return, and those of
// every call nested under it. Latencies are aggregated by the shared PathSetBuilder.
Result<NestingInference> Nesting::FindCallPaths(PathSetBuilder builder) {
  std::vector<MessageId> messages;
  std::vector<int32_t> parents;
  std::vector<std::pair<uint32_t, int32_t>> stack;  // (call, index of the parent's call message)
  int64_t roots = 0;
  for (uint32_t root = 0; root < calls_.size(); ++root) {
    if (!calls_[root].ret.valid() || calls_[root].parent != kNone) continue;
    ++roots;
    messages.clear();
    parents.clear();
    stack.assign(1, {root, -1});
    while (!stack.empty()) {
      auto [call, parent_index] = stack.back();
      stack.pop_back();
      int32_t call_index = int32_t(messages.size());
      messages.push_back(calls_[call].call);
      parents.push_back(parent_index);
      messages.push_back(calls_[call].ret);
      parents.push_back(call_index);
      for (uint32_t s = calls_[call].first_child; s != kNone; s = calls_[s].next_sibling) {
        stack.push_back({s, call_index});
      }
    }
    WEFT_RETURN_IF_ERROR(builder.AddInstance(messages, parents));
  }
  return NestingInference{std::move(builder).Finish(),
                          {.calls = int64_t(calls_.size()),
                           .returns = returns_,
                           .call_pairs = call_pairs_,
                           .unmatched_calls = unmatched_calls_,
                           .unmatched_returns = unmatched_returns_,
                           .ignored_messages = ignored_messages_,
                           .roots = roots,
                           .candidate_parents = candidate_parents_,
                           .children_with_candidates = children_with_candidates_}};
}

}  // namespace nesting_detail

CallPairingOptions NestingCallPairing(const NestingOptions& options) {
  return {
      .nodes = true,
      .call_id = options.use_call_ids,
      .require_call_id = false,
      .order = CallPairingOptions::Order::kTrace,
      .answer = CallPairingOptions::Answer::kEarliestOpen,
      .returns_wait = true,
      .give_up_reused_ids = true,
  };
}

namespace {

const double kLogBinBase = std::log(kNestingBinBase);

// The definition of the bins (nesting.h): 1 + floor(log_1.05(delay / 100 ns)), clamped.
int DelayBinByLog(TimeNs delay) {
  if (delay < kNestingMinDelay) return 0;
  int bin = 1 + int(std::log(double(delay) / double(kNestingMinDelay)) / kLogBinBase);
  return std::min(bin, kNestingBins - 1);
}

}  // namespace

namespace nesting_detail {

DelayBinTable::DelayBinTable() {
  threshold_[0] = std::numeric_limits<TimeNs>::min();
  for (int bin = 1; bin < kNestingBins; ++bin) {
    TimeNs low = threshold_[bin - 1] < kNestingMinDelay ? kNestingMinDelay : threshold_[bin - 1];
    TimeNs high = TimeNs(1) << 62;  // far beyond the last bin (about 7 hours)
    while (low < high) {            // the smallest delay whose bin is at least `bin`
      TimeNs mid = low + (high - low) / 2;
      if (DelayBinByLog(mid) >= bin)
        high = mid;
      else
        low = mid + 1;
    }
    threshold_[bin] = low;
  }
  for (int octave = 0; octave < 63; ++octave) {
    for (int slice = 0; slice < kSlices; ++slice) {
      TimeNs first = octave < kSliceBits ? TimeNs(1) << octave
                                         : TimeNs(kSlices + slice) << (octave - kSliceBits);
      first_bin_[octave * kSlices + slice] = uint16_t(DelayBinByLog(first));
    }
  }
}

const DelayBinTable kDelayBins;

}  // namespace nesting_detail

int NestingDelayBin(TimeNs delay) { return nesting_detail::kDelayBins.Bin(delay); }

Result<NestingInference> InferNesting(const Trace& trace, const NestingOptions& options) {
  if (options.skew_window < 0)
    return Status::InvalidArgument("the skew window must not be negative");
  if (options.smoothing_bins < 0) return Status::InvalidArgument("smoothing must not be negative");
  if (options.sibling_passes < 0)
    return Status::InvalidArgument("sibling passes must not be negative");
  if (options.threads < 0) return Status::InvalidArgument("threads must not be negative");
  return nesting_detail::Nesting(trace, options).Run();
}

}  // namespace weft
