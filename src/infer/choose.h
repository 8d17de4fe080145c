// --algo auto: the most precise algorithm whose assumptions the trace does not contradict
// (docs/precise.md, "auto").
//
//   thread (vPath)           when no thread took in a request while it owed the reply to
//                            another, every call a thread sent lies inside a request it
//                            answered or was handed, no server's thread that never replies
//                            started a path, and no call followed an ambiguous hand-off
//                            (ThreadCounters: overlapping_requests, calls_outside_requests,
//                            root_calls_from_servers, calls_through_ambiguous_handoffs all 0);
//   fragment (BorderPatrol)  else, when no server sent a call outside every fragment, no
//                            output followed an ambiguous hand-off, no reply contradicted
//                            a hand-off and no output went elsewhere while a call was
//                            half read (FragmentCounters: server_calls_outside_fragments,
//                            outputs_through_ambiguous_handoffs,
//                            handoffs_contradicted_by_replies,
//                            outputs_beside_partial_inputs all 0);
//   linking (WAP5) or        else, or when the trace names no threads: they assume nothing
//   nesting (Project 5)      of threads. Both are run, and the one that explains more of
//                            the trace (ExplainedShare: more messages given a cause) is
//                            chosen. On a tie linking, which weighs both timestamps, or
//                            nesting when the trace has only send times (Project 5 was
//                            made for one timestamp per message) or when linking guessed
//                            most of its trees (more ambiguous links than its try-both
//                            budget weighs). So auto never picks an algorithm that
//                            explains less of the trace than the other.
//
// Deciding runs thread and, when thread does not fit, fragment, and then linking and
// nesting side by side on two threads; each at most once. The runs are handed back with the choice,
// so the chosen algorithm is not run again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "infer/fragment/fragment.h"
#include "infer/linking/linking.h"
#include "infer/nesting/nesting.h"
#include "infer/thread/thread.h"
#include "trace/trace.h"

namespace weft {

// What fragment's inputs_before_acting means and what to do, after the count of those not
// followed to their forward (SetAsideNotes).
inline constexpr std::string_view kInputsBeforeActing =
    "requests were followed by another input before their thread sent, connected or handed "
    "anything on, so their work may be in a later input's tree: if this was captured with "
    "--no-isolate, recapture with weft capture --isolate; if with isolation, the program set "
    "them aside and acted on them in a later turn (a queue of its own, such as a pool of "
    "server connections that had none free), and those trees are not exact";

enum class AutoAlgorithm { kThread, kFragment, kLinking, kNesting };

// "thread", "fragment", "linking" or "nesting": the --algo name.
std::string_view AutoAlgorithmName(AutoAlgorithm algorithm);

// What fragment's requests that shared a read with another, or were followed by another
// input before their thread acted, say (auto's reasons and `weft infer --algo fragment`'s
// notes): those followed to the call that forwarded them by its content, and those whose
// trees may be wrong, with what to do. "" where there is nothing to say.
struct SetAsideNotes {
  std::string found;           // what was followed, and how many first-come guesses
  std::string sharing_a_read;  // requests that shared a read and were not followed
  std::string before_acting;   // the rest of inputs_before_acting and kInputsBeforeActing
};
SetAsideNotes DescribeSetAside(const FragmentCounters& f);

// What auto read and why it chose what it chose.
struct AutoChoice {
  AutoAlgorithm algorithm = AutoAlgorithm::kLinking;
  bool threads_named = false;  // false: thread failed (no thread in the trace)
  // Read from thread's counters, when threads_named.
  int64_t overlapping_requests = 0;
  int64_t calls_outside_requests = 0;
  int64_t root_calls_from_servers = 0;
  int64_t calls_through_ambiguous_handoffs = 0;
  int64_t calls_never_answered = 0;  // > 0: a reason says what their trees lack
  // Read from fragment's counters, when fragment was run (thread did not fit).
  std::optional<int64_t> server_calls_outside_fragments;
  int64_t outputs_through_ambiguous_handoffs = 0;
  int64_t handoffs_contradicted_by_replies = 0;
  int64_t inputs_sharing_a_read = 0;  // > 0: auto suggests recapturing with --isolate
  int64_t outputs_beside_partial_inputs = 0;
  int64_t inputs_before_acting = 0;  // > 0: the same advice, from separate reads
  // When the statistical algorithms were weighed: the ExplainedShare of each.
  std::optional<double> linking_explained;
  std::optional<double> nesting_explained;
  // Linking's trees, and those with more ambiguous links than its try-both budget weighs
  // (LinkingCounters roots and budget_exhausted): on a tie, most of them guessed means
  // nesting.
  int64_t linking_trees = 0;
  int64_t linking_trees_guessed = 0;
  // One sentence per reason, in the order they were weighed.
  std::vector<std::string> reasons;

  // The line `weft infer --algo auto` prints after "auto: ".
  std::string Describe() const;
};

struct AutoInference {
  AutoChoice choice;
  // The runs made while deciding: thread's whenever the trace names threads, fragment's
  // when thread did not fit. The chosen one is among them unless linking was chosen.
  std::optional<ThreadInference> thread;
  std::optional<FragmentInference> fragment;
  // The statistical runs, when neither precise algorithm fit.
  std::optional<LinkingInference> linking;
  std::optional<NestingInference> nesting;
};

// The share of the trace's messages that `paths` gives a cause: messages with a parent in
// the most probable instance holding them (a root, or a message in no instance, has none).
double ExplainedShare(const PathSet& paths);

// Decides for `trace`, running linking and nesting with these options when neither precise
// algorithm fits. Errors of fragment, linking and nesting are returned; thread failing means
// the trace names no threads.
Result<AutoInference> ChooseAlgorithm(const Trace& trace, const LinkingOptions& linking = {},
                                      const NestingOptions& nesting = {});

}  // namespace weft
