// The nesting algorithm's state (Project 5 §5.1), shared by its two halves: nesting.cc
// (§5.1.1.1 call pairs and candidate parents, §5.1.1.2 the scoreboard, §5.1.1.4 the
// paths) and choose_parents.cc (§5.1.1.3 each child's parent, with weft's sibling scoring
// and lookahead). Internal to the algorithm; nesting.h is its interface.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "infer/nesting/nesting.h"
#include "paths/path_set_builder.h"

namespace weft::nesting_detail {

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

// NestingDelayBin: the bins' definition (DelayBinByLog, nesting.cc) without a logarithm.
// Binning every candidate's delay (and every sibling gap, for every candidate of every
// pass) by std::log took a tenth of `weft infer`. Each bin's smallest delay is found once
// by bisection over DelayBinByLog itself, so a delay gets exactly the bin the formula
// gives it (nesting_test checks both sides of every threshold). A delay's leading five
// bits (its octave and the next four bits) pick a starting bin; such a slice spans at
// most a factor 17/16 < 1.05^2, so at most two thresholds lie inside it and at most two
// comparisons finish the search. Here so that the hot loops of both files inline Bin.
class DelayBinTable {
 public:
  DelayBinTable();  // nesting.cc

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

extern const DelayBinTable kDelayBins;  // nesting.cc

class Nesting {
 public:
  Nesting(const Trace& trace, const NestingOptions& options)
      : trace_(trace), cols_(trace.columns()), options_(options) {}

  Result<NestingInference> Run();

 private:
  struct Segment;  // see FindSegments

  // nesting.cc: §5.1.1.1 (call pairs and each call's candidate parents), §5.1.1.2 (the
  // scoreboard) and §5.1.1.4 (the paths).
  void FindCallPairs();
  void RecordCallTimes();
  template <typename Prune>
  void ClosePair(uint32_t child, MessageId ret, std::vector<uint32_t>& active_into_caller,
                 Prune& prune);
  uint32_t TripleIndex(uint32_t parent, uint32_t child);
  void ScoreNestings();
  void DivideReturnScores();
  void SmoothScoreboard();
  void GenericPenaltyByNode();
  Result<NestingInference> FindCallPaths(PathSetBuilder builder);

  // choose_parents.cc: §5.1.1.3, each child's parent, with weft's sibling scoring and
  // lookahead (with ChooseParents, CandidateScore and the sibling descriptions below).
  void FindSegments();
  void FindNextFromCaller();
  void FindNestedPairs(bool score_siblings, bool learn);
  void Assign(uint32_t child, uint32_t parent, Segment& seg);

  // A message's time on its sender's clock and on its receiver's clock; with one
  // timestamp per message both are that timestamp.
  TimeNs Sent(MessageId m) const { return trace_.SortTime(m); }
  TimeNs Received(MessageId m) const {
    TimeNs r = cols_.recv_time[m.value()];
    return r != kNoTime ? r : trace_.SortTime(m);
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
  Siblings DescribeSiblings(uint32_t parent, uint32_t child, const Segment& seg) const;
  Siblings WithSibling(Siblings s, uint32_t child, uint32_t extra) const;
  Siblings DescribeSiblingsByWalk(uint32_t parent, uint32_t child, bool other_segment) const;
  bool SameSiblings(const Siblings& a, const Siblings& b) const {
    return a.any == b.any && a.overlapping == b.overlapping && a.place == b.place &&
           a.gap == b.gap && (options_.same_child_penalty == 0 || a.same == b.same);
  }

  // Children already given to `parent`; another segment's parents are never read (they
  // belong to another thread) and have none yet at this point of call order.
  uint32_t ChildCount(uint32_t parent, const Segment& seg) const {
    return parent >= seg.begin && parent < seg.end ? calls_[parent].child_count : 0;
  }

  // From this many children on, a parent's are also kept in a ChildSet.
  static constexpr uint32_t kManyChildren = 8;

  // The sibling board (kPlaces x kNestingBins per triple) counts, per (A, B, C), the place
  // and gap of each child at the parent the previous pass chose. Unlike the call board it
  // counts chosen parents only, so it also learns that pass's mistakes, and each further
  // pass helps less (docs/nesting.md).
  static size_t SiblingBin(uint32_t triple, const Siblings& s) {
    return (size_t(triple) * kPlaces + s.place) * kNestingBins + size_t(kDelayBins.Bin(s.gap));
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
                        const Penalties& pen) const;
  void ChooseParents(Segment& seg, bool score_siblings, bool learn, const Penalties& pen);

  // Whether `child` can be given to candidate `k` (with a skew window, not to its own
  // descendant).
  bool Admissible(uint32_t child, uint32_t k) const {
    return options_.skew_window == 0 || !IsAncestor(child, candidates_[k]);
  }

  static constexpr uint32_t kMinSegmentCalls = 1024;  // the fewest a segment gets

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

}  // namespace weft::nesting_detail
