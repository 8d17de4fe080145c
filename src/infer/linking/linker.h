// The message-linking engine, shared by linking.cc (steps 1 and 2, and the run) and
// trees.cc (step 3). Internal to infer/linking: linking.h is the public header.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "infer/linking/linking.h"
#include "paths/path_set_builder.h"
#include "trace/trace.h"

namespace weft::linking {

constexpr uint32_t kNone = UINT32_MAX;
// Candidate parents considered per message, latest first. Identical timestamps (a burst
// logged at one instant) would otherwise make the work quadratic; beyond a few dozen
// candidates no single one can be likely anyway.
constexpr uint32_t kMaxCandidates = 64;
// A tree stops growing at this many messages (a trace that links into one chain).
constexpr uint32_t kMaxTreeMessages = 100'000;

// Delay bins of the learned model: 0 below 1 us, then log base 1.1 (a tenth of a delay
// apart), to beyond an hour.
constexpr int kDelayBins = 240;
constexpr size_t kModelSize = 2 * kDelayBins;
constexpr uint8_t kNoGap = 255;  // a candidate without a return gap
static_assert(kDelayBins <= kNoGap);
// The least an enclosing call's delay (or gap) weighs in the learned model, against a
// peak of 1: a rare path's delays are unusual for its pair, and would otherwise be learned
// as impossible. Spontaneity weighs e^(-y) times the pair's learned share of spontaneous
// messages, so a pair whose messages always have a cause links even unusual delays. Only
// for RPC, where enclosing is itself strong evidence and candidates are few: among the
// dozens of candidates a free-form message can have, such a floor would drown the parent.
constexpr float kMinEnclosingWeight = 0.05f;
inline int DelayBin(TimeNs delay) {
  if (delay < 1000) return 0;
  const int bin = 1 + int(std::log(double(delay) / 1000.0) * (1 / std::log(1.1)));
  return std::min(bin, kDelayBins - 1);
}

// Where and when a message could have been caused. If its sender B was traced: by a
// message into B that arrived before it was sent, on B's clock. If only the receiver A
// was traced: by a message from A to B sent before it arrived, on A's clock (WAP5 §5.1:
// "only allow causality back to the same node", A->B->A).
struct Site {
  uint32_t list = kNone;  // index into the candidate lists
  TimeNs time = kNoTime;
};

// A time-sorted list of messages per site: CSR over (time, message).
struct CandidateLists {
  std::vector<uint32_t> begin;
  std::vector<std::pair<TimeNs, uint32_t>> entries;
};

class Linker {
 public:
  Linker(const Trace& trace, const LinkingOptions& options)
      : trace_(trace), c_(trace.columns()), options_(options) {}
  Result<LinkingInference> Run();

 private:
  void PairCalls();
  void IndexSites();
  void ComputeReach();
  // Calls f(parent, delay, gap) for message m's candidate parents, latest first, until f
  // returns false: messages into its site within the window, at most kMaxCandidates,
  // and in RPC mode for a CALL only CALLs that enclose it (see PairCalls) or MSGs.
  template <typename F>
  void ForEachCandidate(size_t m, F&& f) const;
  void CollectCandidates();
  void EstimateCausalDelays();
  // Step 2 with the exponential model (learned = false) or the learned one.
  void ScoreParents(bool learned);
  void LearnDelays();
  void InvertLinks();
  Status BuildTrees(PathSetBuilder& builder);
  // Step 3's recursion: expands tree_ from message tree_[next] and its child link `link`
  // on, branching on try-both decisions; emits every finished instance.
  Status Expand(size_t next, uint32_t link, double probability, uint32_t budget,
                PathSetBuilder& builder);
  Status Emit(double probability, PathSetBuilder& builder);
  // Adds message m to the tree under tree_[parent] (-1: as the root), with its RETURN
  // under it in RPC mode.
  void Join(uint32_t m, int32_t parent);
  // Removes what was added after the tree had `size` messages.
  void Shrink(size_t size);
  // RPC mode: a CALL from a traced node may only be caused by a CALL enclosing it.
  bool EnclosingOnly(size_t m) const {
    return rpc_ && c_.kind[m] == MessageKind::kCall && c_.send_time[m] != kNoTime;
  }
  // The time of candidate `parent` on the clock of message m's site.
  TimeNs ParentTime(size_t m, uint32_t parent) const {
    return c_.send_time[m] != kNoTime ? Arrival(parent) : c_.send_time[parent];
  }
  // When message m arrived: its receive time; on a one-clock trace (no receive time
  // anywhere: span data, one-sided logs) its send time, the network taken as instant.
  TimeNs Arrival(size_t m) const {
    return one_clock_ && c_.recv_time[m] == kNoTime ? c_.send_time[m] : c_.recv_time[m];
  }

  const Trace& trace_;
  const TraceColumns& c_;
  const LinkingOptions& options_;
  size_t n_ = 0;

  // No message has a receive time: every time is a send time, read as on one clock.
  bool one_clock_ = false;
  // RPC mode: calls paired with their returns by call id (kNone if unpaired).
  bool rpc_ = false;
  std::vector<uint32_t> answer_;   // per CALL: its RETURN
  std::vector<uint32_t> answers_;  // per RETURN: its CALL
  int64_t unpaired_returns_ = 0;
  std::vector<TimeNs> reach_;   // per candidate list (see ComputeReach)
  std::vector<Site> site_;      // per message
  CandidateLists lists_;        // per site list
  std::vector<uint32_t> pair_;  // per message: its sender->receiver pair
  std::vector<double> rate_;    // per pair: lambda = 1/d, per nanosecond
  // The learned model (see LearnDelays): per pair with candidates, a weight per delay
  // bin and then one per return-gap bin (kModelSize in all).
  std::vector<uint32_t> model_of_;  // per pair: index into model_, or kNone
  std::vector<float> model_;
  std::vector<float> model_spontaneous_;  // per model: the share of its messages spontaneous

  // Per message its candidate parents (CSR), latest first: the parent, the delay bin,
  // the return-gap bin (kNoGap if none), and after step 2 the probability.
  std::vector<uint32_t> candidate_begin_;
  std::vector<uint32_t> candidate_parent_;
  std::vector<uint8_t> candidate_delay_;
  std::vector<uint8_t> candidate_gap_;
  std::vector<float> candidate_p_;
  // Step 2: per message its parent links (CSR), and its probability of being spontaneous.
  std::vector<uint32_t> link_begin_;
  std::vector<uint32_t> link_parent_;
  std::vector<uint32_t> link_child_;
  std::vector<float> link_p_;
  std::vector<float> spontaneous_;
  std::vector<bool> best_link_;  // per link: its child's most likely option
  // The same links by parent (the possible-child trees of WAP5 Figure 8).
  std::vector<uint32_t> child_begin_;
  std::vector<uint32_t> child_link_;  // link index

  // Step 3 state.
  std::vector<uint32_t> tree_;        // messages in the tree being built, parents first
  std::vector<int32_t> tree_parent_;  // index in tree_ of each one's cause
  std::vector<uint32_t> in_tree_;     // per message: 1 + its index in tree_, or 0
  std::vector<int32_t> call_parent_;  // scratch for call trees
  int64_t roots_ = 0, try_both_ = 0, exhausted_ = 0, truncated_ = 0;
  bool hit_budget_ = false;
};

}  // namespace weft::linking
