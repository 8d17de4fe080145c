// Message linking, step 3 (WAP5 §5.1, "Building trees"; Figure 4): path instances from
// the links, with probably-true, probably-false and try-both decisions.
#include <algorithm>

#include "core/progress.h"
#include "infer/linking/linker.h"

namespace weft::linking {

Status Linker::Emit(double probability, PathSetBuilder& builder) {
  const size_t size = tree_.size();
  std::span<const int32_t> parents = tree_parent_;
  if (options_.call_trees && !rpc_) {
    // Call trees (path_set.h): a CALL's parent is the CALL into its sender that encloses it,
    // a RETURN's the CALL it answers. Both are "the enclosing call" of the message: its
    // cause if that is a CALL into the sender; if its cause is a RETURN, the enclosing
    // call of the CALL that RETURN answers. Every result is an ancestor, so the instance
    // stays a tree; where the chain breaks (MSG, or no enclosing call) the cause stays.
    call_parent_.assign(size, -1);
    for (size_t i = 1; i < size; ++i) {
      const int32_t cause = tree_parent_[i];
      const uint32_t m = tree_[i];
      int32_t parent = cause;
      if (c_.kind[m] != MessageKind::kMessage) {
        const MessageKind cause_kind = c_.kind[tree_[size_t(cause)]];
        if (cause_kind == MessageKind::kReturn) {
          const int32_t answered = call_parent_[size_t(cause)];
          const int32_t enclosing = answered >= 0 ? call_parent_[size_t(answered)] : -1;
          if (enclosing >= 0) parent = enclosing;
        }
      }
      call_parent_[i] = parent;
    }
    parents = call_parent_;
  }
  std::vector<MessageId> messages(size);
  for (size_t i = 0; i < size; ++i) messages[i] = MessageId(tree_[i]);
  return builder.AddInstance(messages, parents, std::max(probability, 1e-300));
}

void Linker::Join(uint32_t m, int32_t parent) {
  tree_.push_back(m);
  tree_parent_.push_back(parent);
  in_tree_[m] = uint32_t(tree_.size());
  if (rpc_ && answer_[m] != kNone && !in_tree_[answer_[m]]) {
    tree_.push_back(answer_[m]);
    tree_parent_.push_back(int32_t(tree_.size() - 2));
    in_tree_[answer_[m]] = uint32_t(tree_.size());
  }
}

void Linker::Shrink(size_t size) {
  for (size_t k = size; k < tree_.size(); ++k) in_tree_[tree_[k]] = 0;
  tree_.resize(size);
  tree_parent_.resize(size);
}

Status Linker::Expand(size_t next, uint32_t link, double probability, uint32_t budget,
                      PathSetBuilder& builder) {
  const size_t entry_size = tree_.size();
  for (; next < tree_.size(); ++next, link = 0) {
    const uint32_t m = tree_[next];
    for (uint32_t j = child_begin_[m] + link; j < child_begin_[m + 1]; ++j) {
      const uint32_t l = child_link_[j];
      const uint32_t child = link_child_[l];
      if (in_tree_[child]) continue;
      const double p = link_p_[l];
      const bool ambiguous = best_link_[l]
                                 ? p < options_.try_both_high
                                 : p >= options_.try_both_low && p <= options_.try_both_high;
      if (ambiguous && budget > 0) {
        // Try both: with the link (the child joins) and without, each going on from the
        // next link; both branches emit their instances.
        ++try_both_;
        const uint32_t offset = j - child_begin_[m] + 1;
        const size_t before = tree_.size();
        Join(child, int32_t(next));
        Status status = Expand(next, offset, probability * p, budget - 1, builder);
        Shrink(before);
        if (status.ok()) status = Expand(next, offset, probability * (1 - p), budget - 1, builder);
        Shrink(entry_size);
        return status;
      }
      if (ambiguous) hit_budget_ = true;
      const bool include =
          ambiguous ? (best_link_[l] || p >= 0.5) : p > options_.try_both_high || best_link_[l];
      if (include && tree_.size() < kMaxTreeMessages) {
        Join(child, int32_t(next));
        probability *= p;
      } else {
        if (include) ++truncated_;
        probability *= 1 - p;
      }
    }
  }
  Status status = Emit(probability, builder);
  Shrink(entry_size);
  return status;
}

// Step 3: a tree from every message that is probably spontaneous, or for which being
// spontaneous is its most likely option, or ambiguous (WAP5 §5.1, step 3; Figure 4).
Status Linker::BuildTrees(PathSetBuilder& builder) {
  in_tree_.assign(n_, 0);
  Progress progress("linking", n_, "messages");
  for (size_t r = 0; r < n_; ++r) {
    progress.Update(r);
    if (site_[r].list == kNone) continue;
    const double ps = spontaneous_[r];
    bool most_likely = true;
    for (uint32_t l = link_begin_[r]; l < link_begin_[r + 1]; ++l) most_likely &= link_p_[l] <= ps;
    if (!(most_likely || ps >= options_.try_both_low)) continue;
    if (rpc_ && answers_[r] != kNone) continue;  // a paired RETURN is in its call's tree
    ++roots_;
    hit_budget_ = false;
    Join(uint32_t(r), -1);
    WEFT_RETURN_IF_ERROR(Expand(0, 0, ps, options_.try_both_budget, builder));
    Shrink(0);
    exhausted_ += hit_budget_;
  }
  return Status::Ok();
}

}  // namespace weft::linking
