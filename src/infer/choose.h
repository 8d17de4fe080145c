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
//                            output followed an ambiguous hand-off and no reply contradicted
//                            a hand-off (FragmentCounters: server_calls_outside_fragments,
//                            outputs_through_ambiguous_handoffs,
//                            handoffs_contradicted_by_replies all 0);
//   linking (WAP5)           else, or when the trace names no threads: it assumes nothing
//                            of threads.
//
// Deciding runs thread and, when thread does not fit, fragment; each at most once. The
// runs are handed back with the choice, so the chosen precise algorithm is not run again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "infer/fragment/fragment.h"
#include "infer/thread/thread.h"
#include "trace/trace.h"

namespace weft {

enum class AutoAlgorithm { kThread, kFragment, kLinking };

// "thread", "fragment" or "linking": the --algo name.
std::string_view AutoAlgorithmName(AutoAlgorithm algorithm);

// What auto read and why it chose what it chose.
struct AutoChoice {
  AutoAlgorithm algorithm = AutoAlgorithm::kLinking;
  bool threads_named = false;  // false: thread failed (no thread in the trace)
  // Read from thread's counters, when threads_named.
  int64_t overlapping_requests = 0;
  int64_t calls_outside_requests = 0;
  int64_t root_calls_from_servers = 0;
  int64_t calls_through_ambiguous_handoffs = 0;
  // Read from fragment's counters, when fragment was run (thread did not fit).
  std::optional<int64_t> server_calls_outside_fragments;
  int64_t outputs_through_ambiguous_handoffs = 0;
  int64_t handoffs_contradicted_by_replies = 0;
  int64_t inputs_sharing_a_read = 0;  // > 0: auto suggests recapturing with --isolate
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
};

// Decides for `trace`. Only an error of fragment's is returned; thread failing means the
// trace names no threads, and linking is chosen.
Result<AutoInference> ChooseAlgorithm(const Trace& trace);

}  // namespace weft
