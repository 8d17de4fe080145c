// Project 5 §5.1.1.3: each child's most likely parent, with the child penalties, and
// weft's additions: the sibling scoreboard learned pass by pass, lookahead to the next
// call from the same node, and segments of the trace chosen for on threads of their own
// (nesting.cc's header lists the departures from Figure 4; nesting_state.h the state).
// The inner loop's helpers are marked inline: defined outside the class, GCC kept them
// calls, and `weft infer` on the 2M-message shop trace took a fifth more CPU.
#include <algorithm>
#include <cassert>
#include <limits>
#include <system_error>
#include <thread>
#include <vector>

#include "infer/nesting/nesting_state.h"

namespace weft::nesting_detail {

// How `child` would follow `parent`'s children (Siblings). A parent's children are found
// through its list; once it has kManyChildren, also in a ChildSet, so that this is a
// bisection, not a walk over every sibling for every candidate of every pass (the walk
// made the shop's long series of calls quadratic per request). The set relies on what
// FindNestedPairs guarantees: a child is described only at parents whose children all
// come before it in call order, so all of them left B no later. `seg` is the segment of
// the calls being chosen for; a parent beyond it has no children yet (FindSegments).
inline Nesting::Siblings Nesting::DescribeSiblings(uint32_t parent, uint32_t child,
                                                   const Segment& seg) const {
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
inline Nesting::Siblings Nesting::WithSibling(Siblings s, uint32_t child, uint32_t extra) const {
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
Nesting::Siblings Nesting::DescribeSiblingsByWalk(uint32_t parent, uint32_t child,
                                                  bool other_segment) const {
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

// Gives `child` to `parent`, both in `seg` (FindNestedPairs).
void Nesting::Assign(uint32_t child, uint32_t parent, Segment& seg) {
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
        std::upper_bound(children.returns.begin(), children.returns.end(), t.returned), t.returned);
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

inline double Nesting::CandidateScore(uint32_t k, const Siblings& s, bool score_siblings,
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

// §5.1.1.3. Children in time order; each takes the candidate with the best penalised
// score; ties go to the earliest parent. Every pass starts afresh. With `score_siblings`
// the sibling board weighs in; with `learn` the pass fills the next pass's board with
// each child's place and gap at its chosen parent, as they were when it was chosen.
//
// With NestingOptions::lookahead (weft's addition) a choice also weighs what it leaves
// for the next call from the same node: each candidate's score is multiplied by the best
// score that call could then get. Greedy choice in time order otherwise lets one child
// take the parent that the next child fits far better, and the two trees' tails swap.
void Nesting::FindNestedPairs(bool score_siblings, bool learn) {
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
void Nesting::ChooseParents(Segment& seg, bool score_siblings, bool learn, const Penalties& pen) {
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
void Nesting::FindSegments() {
  const uint32_t n = uint32_t(calls_.size());
  const uint32_t threads = options_.threads > 0 ? uint32_t(options_.threads)
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

// For each call, the next call (in call order) made by the same node that has more than
// one candidate parent, or kNone: the call whose choice lookahead weighs.
void Nesting::FindNextFromCaller() {
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

}  // namespace weft::nesting_detail
