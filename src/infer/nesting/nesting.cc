// Project 5 §5.1: the nesting algorithm. See nesting.h for the outline.
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
#include <cassert>
#include <cmath>
#include <future>
#include <limits>
#include <system_error>
#include <thread>
#include <vector>

#include "core/progress.h"
#include "infer/call_pairs.h"
#include "paths/path_set_builder.h"

namespace weft {
namespace {

constexpr uint32_t kNone = ~0u;

// A CALL message and, once matched, its RETURN: a call pair (§5.1.1.1).
struct Call {
  MessageId call;
  MessageId ret;  // invalid until matched
  NodeId caller;
  NodeId callee;
  uint32_t candidates_begin = 0;  // candidate parents: candidates_[begin, begin + count)
  uint32_t candidate_count = 0;
  uint32_t parent = kNone;
  uint32_t first_child = kNone;
  uint32_t next_sibling = kNone;
  uint32_t child_count = 0;
};

// A returned call's times: it left its caller B, arrived at its callee, the return left
// the callee and arrived back at B (each on the clock of the node where it happened).
struct CallTimes {
  TimeNs departed = 0, arrived = 0, answered = 0, returned = 0;
};

// The children assigned to a parent with many of them (FindNestedPairs), as
// DescribeSiblings queries them: each child's departure, return and callee in the order
// assigned, and their returns in ascending order.
struct Sibling {
  TimeNs departed, returned;
  NodeId callee;
};
struct ChildSet {
  std::vector<Sibling> in_order;
  std::vector<TimeNs> returns;
  TimeNs latest_departure = std::numeric_limits<TimeNs>::min();
};

struct Triple {
  NodeId a, b, c;
  bool operator==(const Triple&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const Triple& t) {
    return H::combine(std::move(h), t.a.value(), t.b.value(), t.c.value());
  }
};

const double kLogBinBase = std::log(kNestingBinBase);

class Nesting {
 public:
  Nesting(const Trace& trace, const NestingOptions& options)
      : trace_(trace), cols_(trace.columns()), options_(options) {}

  Result<NestingInference> Run() {
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

 private:
  struct Segment;  // see FindSegments

  // A message's time on its sender's clock and on its receiver's clock; with one
  // timestamp per message both are that timestamp.
  TimeNs Sent(MessageId m) const { return trace_.SortTime(m); }
  TimeNs Received(MessageId m) const {
    TimeNs r = cols_.recv_time[m.value()];
    return r != kNoTime ? r : trace_.SortTime(m);
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
  void FindCallPairs() {
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
    size_t call_count =
        size_t(std::count(cols_.kind.begin(), cols_.kind.end(), MessageKind::kCall));
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
  void RecordCallTimes() {
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
  void ClosePair(uint32_t child, MessageId ret, std::vector<uint32_t>& active_into_caller,
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

  // The delay between a parent's arrival at B and the child's departure from B.
  TimeNs NestingDelay(uint32_t parent, uint32_t child) const {
    return times_[child].departed - times_[parent].arrived;
  }

  // The time from the child's return arriving at B to the parent's return leaving B.
  TimeNs ReturnGap(uint32_t parent, uint32_t child) const {
    return times_[parent].answered - times_[child].returned;
  }

  // Each (A, B, C) has a row of 2 x kNestingBins: call delays, then return gaps.
  static constexpr size_t kRowSize = 2 * kNestingBins;

  uint32_t TripleIndex(uint32_t parent, uint32_t child) {
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

  double& CallScore(uint32_t triple, int bin) {
    return scoreboard_[triple * kRowSize + size_t(bin)];
  }
  double& ReturnScore(uint32_t triple, int bin) {
    return scoreboard_[triple * kRowSize + kNestingBins + size_t(bin)];
  }

  // The evidence for `parent` from the scoreboard: the paper's call-delay score, times,
  // with return scoring, the return-gap score divided by the triple's total weight (so
  // that the product still counts like the paper's score: N x P(delay) x P(gap)).
  // The division is done once per bin (DivideReturnScores), not per candidate and pass.
  double RawScore(uint32_t k) const {
    const double* row = &scoreboard_[candidate_triples_[k] * kRowSize];
    double score = row[candidate_bins_[k].call];
    if (options_.score_returns) score *= row[kNestingBins + candidate_bins_[k].ret];
    return score;
  }

  // (1 + c)^-exponent for c = 0 .. kPenaltyTable - 1, so the hot loop needs no pow().
  static constexpr int kPenaltyTable = 64;
  static std::vector<double> PenaltyTable(double exponent) {
    std::vector<double> t(kPenaltyTable);
    for (int c = 0; c < kPenaltyTable; ++c) t[size_t(c)] = std::pow(1.0 + c, -exponent);
    return t;
  }
  static double Penalty(const std::vector<double>& table, int c, double exponent) {
    return c < kPenaltyTable ? table[size_t(c)] : std::pow(1.0 + c, -exponent);
  }

  // §5.1.1.2. Every child adds 1/N to the (A, B, C, delay) entry of each of its N
  // candidate parents; the entries of one (A, B, C) form a histogram of nesting delays
  // whose peaks are the delays that recur, i.e. the causal ones.
  void ScoreNestings() {
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
        bins.call = uint16_t(NestingDelayBin(NestingDelay(candidates_[k], child)));
        bins.ret = uint16_t(NestingDelayBin(ReturnGap(candidates_[k], child)));
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
  void DivideReturnScores() {
    for (size_t t = 0; t < triple_weight_.size(); ++t) {
      double* gaps = &scoreboard_[t * kRowSize + kNestingBins];
      for (int b = 0; b < kNestingBins; ++b) gaps[b] = gaps[b] / triple_weight_[t];
    }
  }

  // Convolves each histogram with a Gaussian, so that peaks widened by clock skew still
  // meet (§5.1.1.2, §7.5.6).
  void SmoothScoreboard() {
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
  void GenericPenaltyByNode() {
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
        generic_penalty_table_[b * kPenaltyTable + size_t(c)] =
            ScaledPenalty(generic_penalty_[b], c);
    }
  }
  static double ScaledPenalty(double z, int c) { return std::exp(-z * std::log1p(double(c))); }

  // How a child follows its parent's already assigned children at B (weft's sibling
  // scoring): first, after a sibling that has returned, or while one is still open; and
  // the gap from the parent's last event there (its arrival, or the latest sibling return
  // before the child left) to the child's departure. A serial server's next call follows
  // the previous call's return by a compute time, which is tighter evidence than the
  // delay from the parent's arrival that the call scoreboard sees.
  enum Place : uint8_t { kFirst, kAfterSibling, kOverlapping, kPlaces };
  struct Siblings {
    int any = 0, same = 0, overlapping = 0;  // for the penalties of §5.1.1.3
    Place place = kFirst;
    TimeNs gap = 0;
  };
  //
  // A parent's children are found through its list; once it has kManyChildren, also in
  // a ChildSet, so that this is a bisection, not a walk over every sibling for every
  // candidate of every pass (the walk made the shop's long series of calls quadratic per
  // request). The set relies on what FindNestedPairs guarantees: a child is described
  // only at parents whose children all come before it in call order, so all of them left
  // B no later. `seg` is the segment of the calls being chosen for; a parent beyond it
  // has no children yet (FindSegments).
  Siblings DescribeSiblings(uint32_t parent, uint32_t child, const Segment& seg) const {
    const CallTimes& c = times_[child];
    Siblings s;
    TimeNs last = times_[parent].arrived;
    const bool in_segment = parent >= seg.begin && parent < seg.end;
    if (in_segment && calls_[parent].child_count < kManyChildren) {
      for (uint32_t k = calls_[parent].first_child; k != kNone; k = calls_[k].next_sibling) {
        const CallTimes& t = times_[k];
        ++s.any;
        s.overlapping += t.departed < c.returned && t.returned > c.departed;
        if (t.returned <= c.departed && t.returned > last) {
          last = t.returned;
          s.place = kAfterSibling;
        }
        if (options_.same_child_penalty != 0) s.same += calls_[k].callee == calls_[child].callee;
      }
    } else if (in_segment) {
      const ChildSet& children = seg.child_sets[child_set_of_[parent]];
      s.any = int(children.in_order.size());
      // Siblings that returned by the time the child left, and the latest of them.
      // (Usually all of them: a serial server's children return one after another.)
      auto after = children.returns.end();
      if (!children.returns.empty() && children.returns.back() > c.departed)
        after = std::upper_bound(children.returns.begin(), children.returns.end(), c.departed);
      if (after != children.returns.begin() && *(after - 1) > last) {
        last = *(after - 1);
        s.place = kAfterSibling;
      }
      // A sibling overlaps the child if it left before the child's return arrived and
      // returned after the child left. All left before the child's return when the
      // latest did; else (a return stamped on another clock, one timestamp per message)
      // each is checked.
      if (children.latest_departure < c.returned) {
        s.overlapping = int(children.returns.end() - after);
      } else {
        for (const Sibling& k : children.in_order)
          s.overlapping += k.departed < c.returned && k.returned > c.departed;
      }
      if (options_.same_child_penalty != 0) {  // (1 + c)^0 is 1: the count would not matter
        for (const Sibling& k : children.in_order) s.same += k.callee == calls_[child].callee;
      }
    }
    if (s.overlapping) s.place = kOverlapping;
    s.gap = c.departed - last;
    assert(SameSiblings(s, DescribeSiblingsByWalk(parent, child, !in_segment)));
    return s;
  }

  // `s` (DescribeSiblings of `child` at some parent) with `extra` as one more child of
  // that parent: lookahead's trial of a child under a candidate.
  Siblings WithSibling(Siblings s, uint32_t child, uint32_t extra) const {
    const CallTimes& c = times_[child];
    const CallTimes& x = times_[extra];
    TimeNs last = c.departed - s.gap;  // the parent's arrival or the latest sibling return
    bool after_sibling = s.place == kAfterSibling || s.place == kOverlapping;
    ++s.any;
    s.same += calls_[extra].callee == calls_[child].callee;
    s.overlapping += x.departed < c.returned && c.departed < x.returned;
    if (x.returned <= c.departed && x.returned > last) {
      last = x.returned;
      after_sibling = true;
    }
    // (Overlapping hides whether a sibling had returned, but then the place stays
    // overlapping.)
    s.place = s.overlapping ? kOverlapping : after_sibling ? kAfterSibling : kFirst;
    s.gap = c.departed - last;
    return s;
  }

  // What DescribeSiblings computes, by walking the parent's children: its definition,
  // checked against it in debug builds.
  Siblings DescribeSiblingsByWalk(uint32_t parent, uint32_t child, bool other_segment) const {
    const Call& c = calls_[child];
    Siblings s;
    TimeNs departed = Sent(c.call);
    TimeNs last = Received(calls_[parent].call);
    auto visit = [&](uint32_t k) {
      assert(k != child);
      ++s.any;
      s.same += calls_[k].callee == c.callee;
      s.overlapping += Overlap(calls_[k], c);
      TimeNs returned = Received(calls_[k].ret);
      if (returned <= departed && returned > last) {
        last = returned;
        s.place = kAfterSibling;
      }
    };
    for (uint32_t k = other_segment ? kNone : calls_[parent].first_child; k != kNone;
         k = calls_[k].next_sibling)
      visit(k);
    if (s.overlapping) s.place = kOverlapping;
    s.gap = departed - last;
    return s;
  }
  bool SameSiblings(const Siblings& a, const Siblings& b) const {
    return a.any == b.any && a.overlapping == b.overlapping && a.place == b.place &&
           a.gap == b.gap && (options_.same_child_penalty == 0 || a.same == b.same);
  }

  // Children already given to `parent`; another segment's parents are never read (they
  // belong to another thread) and have none yet at this point of call order.
  uint32_t ChildCount(uint32_t parent, const Segment& seg) const {
    return parent >= seg.begin && parent < seg.end ? calls_[parent].child_count : 0;
  }

  // Gives `child` to `parent`, both in `seg` (FindNestedPairs).
  void Assign(uint32_t child, uint32_t parent, Segment& seg) {
    Call& c = calls_[child];
    c.parent = parent;
    c.next_sibling = calls_[parent].first_child;
    calls_[parent].first_child = child;
    const uint32_t count = ++calls_[parent].child_count;
    if (count < kManyChildren) return;
    uint32_t& set = child_set_of_[parent];
    if (set == kNone) {  // kept for later passes
      set = uint32_t(seg.child_sets.size());
      seg.child_sets.emplace_back();
    }
    ChildSet& children = seg.child_sets[set];
    auto add = [&](uint32_t k) {
      const CallTimes& t = times_[k];
      children.in_order.push_back({t.departed, t.returned, calls_[k].callee});
      children.returns.insert(
          std::upper_bound(children.returns.begin(), children.returns.end(), t.returned),
          t.returned);
      children.latest_departure = std::max(children.latest_departure, t.departed);
    };
    if (count > kManyChildren) {
      add(child);
      return;
    }
    children.in_order.clear();  // from an earlier pass
    children.returns.clear();
    children.latest_departure = std::numeric_limits<TimeNs>::min();
    for (uint32_t k = calls_[parent].first_child; k != kNone; k = calls_[k].next_sibling) add(k);
  }
  // From this many children on, a parent's are also kept in a ChildSet.
  static constexpr uint32_t kManyChildren = 8;

  // The sibling board (kPlaces x kNestingBins per triple) counts, per (A, B, C), the place
  // and gap of each child at the parent the previous pass chose. Unlike the call board it
  // counts chosen parents only, so it also learns that pass's mistakes, and each further
  // pass helps less (docs/nesting.md).
  static size_t SiblingBin(uint32_t triple, const Siblings& s) {
    return (size_t(triple) * kPlaces + s.place) * kNestingBins + size_t(NestingDelayBin(s.gap));
  }

  bool Overlap(const Call& x, const Call& y) const {
    return Sent(x.call) < Received(y.ret) && Sent(y.call) < Received(x.ret);
  }

  bool IsAncestor(uint32_t maybe_ancestor, uint32_t node) const {
    for (uint32_t p = calls_[node].parent; p != kNone; p = calls_[p].parent) {
      if (p == maybe_ancestor) return true;
    }
    return false;
  }

  // The penalised score of candidate `k` for a child that would follow the parent's other
  // children as `s` says (§5.1.1.3 with weft's sibling scoring).
  struct Penalties {
    std::vector<double> overlap, same, any;
  };
  double CandidateScore(uint32_t k, const Siblings& s, bool score_siblings,
                        const Penalties& pen) const {
    const NestingOptions& o = options_;
    double score = RawScore(k);
    if (s.overlapping) score *= Penalty(pen.overlap, s.overlapping, o.overlap_penalty);
    if (s.same) score *= Penalty(pen.same, s.same, o.same_child_penalty);
    if (s.any) {
      const size_t b = calls_[candidates_[k]].callee.value();  // the child's caller
      const double z = generic_penalty_[b];
      if (z == o.generic_child_penalty)
        score *= Penalty(pen.any, s.any, z);
      else if (z > 0 && s.any < kPenaltyTable && !generic_penalty_table_.empty())
        score *= generic_penalty_table_[b * kPenaltyTable + size_t(s.any)];
      else if (z > 0)
        score *= ScaledPenalty(z, s.any);
    }
    if (score_siblings) {  // P(place, gap | A, B, C), lightly smoothed toward unseen bins
      uint32_t triple = candidate_triples_[k];
      score *= sibling_factor_[SiblingBin(triple, s)];
    }
    return score;
  }

  // Whether `child` can be given to candidate `k` (with a skew window, not to its own
  // descendant).
  bool Admissible(uint32_t child, uint32_t k) const {
    return options_.skew_window == 0 || !IsAncestor(child, candidates_[k]);
  }

  // §5.1.1.3. Children in time order; each takes the candidate with the best penalised
  // score; ties go to the earliest parent. Every pass starts afresh. With `score_siblings`
  // the sibling board weighs in; with `learn` the pass fills the next pass's board with
  // each child's place and gap at its chosen parent, as they were when it was chosen.
  //
  // With NestingOptions::lookahead (weft's addition) a choice also weighs what it leaves
  // for the next call from the same node: each candidate's score is multiplied by the best
  // score that call could then get. Greedy choice in time order otherwise lets one child
  // take the parent that the next child fits far better, and the two trees' tails swap.
  void FindNestedPairs(bool score_siblings, bool learn) {
    const NestingOptions& o = options_;
    const Penalties pen{PenaltyTable(o.overlap_penalty), PenaltyTable(o.same_child_penalty),
                        PenaltyTable(o.generic_child_penalty)};
    for (Call& c : calls_) {
      c.parent = c.first_child = c.next_sibling = kNone;
      c.child_count = 0;
    }
    child_set_of_.resize(calls_.size(), kNone);  // the sets stay allocated from pass to pass
    for (Segment& seg : segments_) {
      seg.lookahead.assign(trace_.nodes().size(), LookaheadScores{});
      if (learn) {
        seg.board.assign(triples_.size() * kPlaces * kNestingBins, 0.0);
        seg.weight.assign(triples_.size(), 0.0);
      }
    }
    {
      std::vector<std::jthread> helpers;
      for (size_t i = 1; i < segments_.size(); ++i) {
        try {
          helpers.emplace_back([&, i] { ChooseParents(segments_[i], score_siblings, learn, pen); });
        } catch (const std::system_error&) {  // no thread to be had: this one chooses
          ChooseParents(segments_[i], score_siblings, learn, pen);
        }
      }
      ChooseParents(segments_[0], score_siblings, learn, pen);
    }
    if (learn) {
      // The segments' counts are whole numbers, so their sum is exact in any order.
      std::vector<double>& board = segments_[0].board;
      std::vector<double>& weight = segments_[0].weight;
      for (size_t i = 1; i < segments_.size(); ++i) {
        for (size_t b = 0; b < board.size(); ++b) board[b] += segments_[i].board[b];
        for (size_t t = 0; t < weight.size(); ++t) weight[t] += segments_[i].weight[t];
      }
      // Each bin's factor for the next pass, P(place, gap | A, B, C) lightly smoothed
      // toward unseen bins, computed once per bin instead of once per candidate.
      const size_t row = kPlaces * kNestingBins;
      for (size_t t = 0; t < triples_.size(); ++t) {
        for (size_t i = t * row; i < (t + 1) * row; ++i)
          board[i] = (board[i] + 0.01) / (weight[t] + 1.0);
      }
      sibling_factor_ = std::move(board);
    }
  }

  // FindNestedPairs for the children of one segment.
  void ChooseParents(Segment& seg, bool score_siblings, bool learn, const Penalties& pen) {
    const NestingOptions& o = options_;
    std::vector<double>& board = seg.board;
    std::vector<double>& weight = seg.weight;
    for (uint32_t child = seg.begin; child < seg.end; ++child) {
      Call& c = calls_[child];
      if (!c.ret.valid() || c.candidate_count == 0) continue;
      double best_score = 0;
      uint32_t best = kNone, best_k = 0;
      Siblings best_siblings;
      if (c.candidate_count == 1) {  // no choice to score
        uint32_t k = c.candidates_begin;
        if (Admissible(child, k)) {
          best = candidates_[k];
          best_k = k;
          if (learn) best_siblings = DescribeSiblings(best, child, seg);
        }
      }
      // The next call from this node that has a choice to make, and the two best of its
      // scores now (so that its best over candidates other than p is one comparison).
      // Lookahead scored this child's candidates as the next call of the previous call from
      // this node; those scores still hold where the parent has gained no child since
      // (within a pass a parent's children only grow, so their count tells).
      uint32_t next = c.candidate_count > 1 && o.lookahead ? next_from_caller_[child] : kNone;
      const LookaheadScores& ahead = seg.lookahead[c.caller.value()];
      const bool scored_ahead = c.candidate_count > 1 && ahead.call == child;
      LookaheadScores& next_ahead = seg.scratch;
      double next_best = 0, next_second = 0;
      uint32_t next_best_parent = kNone;
      if (next != kNone) {
        const Call& n = calls_[next];
        next_ahead.call = next;
        next_ahead.score.resize(n.candidate_count);
        next_ahead.siblings.resize(n.candidate_count);
        next_ahead.children.assign(n.candidate_count, kNone);
        for (uint32_t k = n.candidates_begin; k < n.candidates_begin + n.candidate_count; ++k) {
          if (!Admissible(next, k)) continue;
          const uint32_t i = k - n.candidates_begin;
          next_ahead.siblings[i] = DescribeSiblings(candidates_[k], next, seg);
          const double score = CandidateScore(k, next_ahead.siblings[i], score_siblings, pen);
          next_ahead.score[i] = score;
          next_ahead.children[i] = ChildCount(candidates_[k], seg);
          if (score > next_best) {
            next_second = next_best;
            next_best = score;
            next_best_parent = candidates_[k];
          } else if (score > next_second) {
            next_second = score;
          }
        }
      }
      uint32_t best_next_k = kNone;  // best's candidacy for next, and next's score under it
      double best_next_score = 0;
      Siblings best_next_siblings;
      for (uint32_t k = c.candidates_begin;
           c.candidate_count > 1 && k < c.candidates_begin + c.candidate_count; ++k) {
        uint32_t p = candidates_[k];
        if (!Admissible(child, k)) continue;
        const uint32_t i = k - c.candidates_begin;
        Siblings s;
        double score;
        if (scored_ahead && ahead.children[i] == ChildCount(p, seg)) {
          s = ahead.siblings[i];
          score = ahead.score[i];
        } else {
          s = DescribeSiblings(p, child, seg);
          score = CandidateScore(k, s, score_siblings, pen);
        }
        uint32_t next_k_of_p = kNone;
        double next_score_if_p = 0;
        Siblings next_siblings_if_p;
        if (next != kNone) {
          // Candidate lists are in call order (FindCallPairs), so p is found by bisection.
          const Call& n = calls_[next];
          const uint32_t* begin = candidates_.data() + n.candidates_begin;
          const uint32_t* end = begin + n.candidate_count;
          const uint32_t* at = std::lower_bound(begin, end, p);
          const uint32_t k_of_p = uint32_t(at - candidates_.data());
          next_k_of_p = at != end && *at == p && Admissible(next, k_of_p) ? k_of_p : kNone;
          const double best_other = next_best_parent == p ? next_second : next_best;
          if (next_k_of_p != kNone) {  // child joins p for the look
            next_siblings_if_p =
                WithSibling(next_ahead.siblings[next_k_of_p - n.candidates_begin], next, child);
            next_score_if_p = CandidateScore(next_k_of_p, next_siblings_if_p, score_siblings, pen);
          }
          score *= next_k_of_p == kNone ? best_other : std::max(next_score_if_p, best_other);
        }
        bool earlier = best != kNone && score == best_score &&
                       Received(calls_[p].call) < Received(calls_[best].call);
        if (best == kNone || score > best_score || earlier) {
          best_score = score;
          best = p;
          best_k = k;
          best_siblings = s;
          best_next_k = next_k_of_p;
          best_next_score = next_score_if_p;
          best_next_siblings = next_siblings_if_p;
        }
      }
      if (next != kNone) {
        // Once child goes to best, next's score there is the one tried for it.
        if (best_next_k != kNone) {
          const uint32_t i = best_next_k - calls_[next].candidates_begin;
          next_ahead.score[i] = best_next_score;
          next_ahead.siblings[i] = best_next_siblings;
          next_ahead.children[i] = ChildCount(best, seg) + 1;
        }
        std::swap(seg.lookahead[c.caller.value()], next_ahead);
      }
      if (best == kNone) continue;
      if (learn) {
        board[SiblingBin(candidate_triples_[best_k], best_siblings)] += 1;
        weight[candidate_triples_[best_k]] += 1;
      }
      Assign(child, best, seg);
    }
  }

  // Splits the calls into segments, one per thread, whose choices in FindNestedPairs are
  // independent of each other's: a cut before call i is taken where no call before i is
  // a candidate parent of a call from i on (no request is open across it at any node).
  // Then a call's candidates and their other children lie in its segment. Lookahead
  // weighs the last choices of a segment with calls of a later one, whose parents have
  // no children yet at that point of call order; DescribeSiblings sees them so. So each
  // segment chooses what one thread choosing in call order would, and the result does
  // not depend on the number of threads. With a skew window a parent can start after
  // its child, and the calls stay in one segment.
  void FindSegments() {
    const uint32_t n = uint32_t(calls_.size());
    const uint32_t threads = options_.threads > 0
                                 ? uint32_t(options_.threads)
                                 : std::max(1u, std::thread::hardware_concurrency());
    std::vector<uint32_t> cuts{0};
    if (threads > 1 && options_.skew_window == 0 && n >= 2 * kMinSegmentCalls) {
      std::vector<uint32_t> last_child(n, 0);  // per call: the last call it is a candidate of
      for (uint32_t child = 0; child < n; ++child) {
        const Call& c = calls_[child];
        if (!c.ret.valid()) continue;
        for (uint32_t k = c.candidates_begin; k < c.candidates_begin + c.candidate_count; ++k)
          last_child[candidates_[k]] = child;  // children in call order: the last one stays
      }
      uint32_t reach = 0;  // the last child of any call up to i
      for (uint32_t i = 0; i + 1 < n && cuts.size() < threads; ++i) {
        reach = std::max(reach, last_child[i]);
        const bool even_share = uint64_t(i + 1) * threads >= uint64_t(cuts.size()) * n;
        if (reach <= i && even_share && i + 1 - cuts.back() >= kMinSegmentCalls)
          cuts.push_back(i + 1);
      }
    }
    cuts.push_back(n);
    segments_.resize(cuts.size() - 1);
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      segments_[i].begin = cuts[i];
      segments_[i].end = cuts[i + 1];
    }
  }
  static constexpr uint32_t kMinSegmentCalls = 1024;

  // For each call, the next call (in call order) made by the same node that has more than
  // one candidate parent, or kNone: the call whose choice lookahead weighs.
  void FindNextFromCaller() {
    for (const Call& c : calls_) {  // FindNestedPairs bisects candidate lists
      const uint32_t* begin = candidates_.data() + c.candidates_begin;
      assert(std::is_sorted(begin, begin + c.candidate_count));
      (void)begin;
    }
    next_from_caller_.assign(calls_.size(), kNone);
    std::vector<uint32_t> last(trace_.nodes().size(), kNone);
    for (uint32_t i = 0; i < calls_.size(); ++i) {
      const Call& c = calls_[i];
      if (!c.ret.valid() || c.candidate_count < 2) continue;
      uint32_t& previous = last[c.caller.value()];
      if (previous != kNone) next_from_caller_[previous] = i;
      previous = i;
    }
  }

  // §5.1.1.4. One path instance per root call pair: its call and return, and those of
  // every call nested under it. Latencies are aggregated by the shared PathSetBuilder.
  Result<NestingInference> FindCallPaths(PathSetBuilder builder) {
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

  const Trace& trace_;
  const TraceColumns& cols_;
  const NestingOptions& options_;

  std::vector<Call> calls_;             // in order of the CALL messages
  std::vector<CallTimes> times_;        // per call, once returned
  std::vector<uint32_t> child_set_of_;  // per call: its ChildSet in its segment, or kNone
  // What lookahead found for a call's candidates when it looked ahead to it: per
  // candidate, the score, how the call would follow the parent's children, and the
  // parent's child count then (kNone: not admissible).
  struct LookaheadScores {
    uint32_t call = kNone;
    std::vector<double> score;
    std::vector<Siblings> siblings;
    std::vector<uint32_t> children;
  };
  // One thread's share of each pass of FindNestedPairs: the calls [begin, end), chosen
  // for independently of every other segment's (FindSegments).
  struct Segment {
    uint32_t begin = 0, end = 0;
    std::vector<ChildSet> child_sets;        // of the segment's parents, kept between passes
    std::vector<LookaheadScores> lookahead;  // per node: for its next call with a choice
    LookaheadScores scratch;
    std::vector<double> board, weight;  // what a learning pass counts (see SiblingBin)
  };
  std::vector<Segment> segments_;
  std::vector<uint32_t> candidates_;  // candidate parents, ranges per call
  struct Bins {
    uint16_t call;  // scoreboard bin of the call delay
    uint16_t ret;   // and of the return gap
  };
  static constexpr size_t kDirectTripleNodes = 128;
  std::vector<uint32_t> candidate_triples_;  // scoreboard row of each candidate
  std::vector<Bins> candidate_bins_;         // its two bins, computed once
  std::vector<uint32_t> direct_triples_;     // (a, b, c) -> row, when nodes are few
  absl::flat_hash_map<Triple, uint32_t> triples_;
  std::vector<double> scoreboard_;          // kRowSize per triple
  std::vector<double> triple_weight_;       // per triple: the weight it was given in all
  std::vector<double> sibling_factor_;      // per SiblingBin: its factor, from the last pass
  std::vector<uint32_t> next_from_caller_;  // see FindNextFromCaller
  std::vector<double> generic_penalty_;  // per node: z for parents there, see GenericPenaltyByNode
  std::vector<double> generic_penalty_table_;  // per node, when few: its penalty for c < 64

  int64_t returns_ = 0, call_pairs_ = 0, unmatched_calls_ = 0, unmatched_returns_ = 0;
  int64_t ignored_messages_ = 0, candidate_parents_ = 0, children_with_candidates_ = 0;
};

}  // namespace

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

// The definition of the bins (nesting.h): 1 + floor(log_1.05(delay / 100 ns)), clamped.
int DelayBinByLog(TimeNs delay) {
  if (delay < kNestingMinDelay) return 0;
  int bin = 1 + int(std::log(double(delay) / double(kNestingMinDelay)) / kLogBinBase);
  return std::min(bin, kNestingBins - 1);
}

// DelayBinByLog without a logarithm: binning every candidate's delay (and every sibling
// gap, for every candidate of every pass) by std::log took a tenth of `weft infer`. Each
// bin's smallest delay is found once by bisection over DelayBinByLog itself, so a delay
// gets exactly the bin the formula gives it (nesting_test checks both sides of every
// threshold). A delay's leading five bits (its octave and the next four bits) pick a
// starting bin; such a slice spans at most a factor 17/16 < 1.05^2, so at most two
// thresholds lie inside it and at most two comparisons finish the search.
class DelayBinTable {
 public:
  DelayBinTable() {
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

  int Bin(TimeNs delay) const {
    if (delay < kNestingMinDelay) return 0;
    const int octave = std::bit_width(uint64_t(delay)) - 1;  // >= 6: delay >= 100
    const int slice = int(delay >> (octave - kSliceBits)) & (kSlices - 1);
    int bin = first_bin_[octave * kSlices + slice];
    while (bin + 1 < kNestingBins && delay >= threshold_[bin + 1]) ++bin;
    return bin;
  }

 private:
  static constexpr int kSliceBits = 4;
  static constexpr int kSlices = 1 << kSliceBits;
  TimeNs threshold_[kNestingBins];  // the smallest delay of each bin (bin 0: none)
  uint16_t first_bin_[64 * kSlices];
};

const DelayBinTable kDelayBins;

}  // namespace

int NestingDelayBin(TimeNs delay) { return kDelayBins.Bin(delay); }

Result<NestingInference> InferNesting(const Trace& trace, const NestingOptions& options) {
  if (options.skew_window < 0)
    return Status::InvalidArgument("the skew window must not be negative");
  if (options.smoothing_bins < 0) return Status::InvalidArgument("smoothing must not be negative");
  if (options.sibling_passes < 0)
    return Status::InvalidArgument("sibling passes must not be negative");
  if (options.threads < 0) return Status::InvalidArgument("threads must not be negative");
  return Nesting(trace, options).Run();
}

}  // namespace weft
