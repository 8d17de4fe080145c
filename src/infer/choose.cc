// --algo auto's policy (infer/choose.h; docs/precise.md).
#include "infer/choose.h"

#include <fmt/format.h>

#include <utility>

namespace weft {

std::string_view AutoAlgorithmName(AutoAlgorithm algorithm) {
  switch (algorithm) {
    case AutoAlgorithm::kThread:
      return "thread";
    case AutoAlgorithm::kFragment:
      return "fragment";
    case AutoAlgorithm::kLinking:
      return "linking";
  }
  return "?";
}

namespace {

std::string_view PaperName(AutoAlgorithm algorithm) {
  switch (algorithm) {
    case AutoAlgorithm::kThread:
      return "thread (vPath)";
    case AutoAlgorithm::kFragment:
      return "fragment (BorderPatrol)";
    case AutoAlgorithm::kLinking:
      return "linking (WAP5)";
  }
  return "?";
}

}  // namespace

std::string AutoChoice::Describe() const {
  std::string why;
  for (const std::string& reason : reasons) why += why.empty() ? reason : "; " + reason;
  if (!threads_named) return fmt::format("{}: {}", why, PaperName(algorithm));
  return fmt::format("{}: {}", PaperName(algorithm), why);
}

Result<AutoInference> ChooseAlgorithm(const Trace& trace) {
  AutoInference result;
  AutoChoice& choice = result.choice;
  Result<ThreadInference> thread = InferThread(trace);
  if (!thread.ok()) {
    choice.algorithm = AutoAlgorithm::kLinking;
    choice.reasons = {"the trace names no threads, so neither precise algorithm applies"};
    return result;
  }
  choice.threads_named = true;
  choice.overlapping_requests = thread->counters.overlapping_requests;
  choice.calls_outside_requests = thread->counters.calls_outside_requests;
  choice.root_calls_from_servers = thread->counters.root_calls_from_servers;
  result.thread = std::move(*thread);
  if (choice.overlapping_requests == 0 && choice.calls_outside_requests == 0 &&
      choice.root_calls_from_servers == 0) {
    choice.algorithm = AutoAlgorithm::kThread;
    choice.reasons = {
        "every thread worked on one request at a time and every call lies inside a request its "
        "thread answered"};
    return result;
  }
  choice.reasons.push_back(fmt::format(
      "not thread: {} requests were taken in by a thread that still owed a reply, {} calls "
      "lie outside the requests their thread answered, {} calls came from a server's thread "
      "that never replies (a hand-off)",
      choice.overlapping_requests, choice.calls_outside_requests, choice.root_calls_from_servers));
  WEFT_ASSIGN_OR_RETURN(FragmentInference fragment, InferFragment(trace));
  const int64_t hidden = fragment.counters.server_calls_outside_fragments;
  choice.server_calls_outside_fragments = hidden;
  result.fragment = std::move(fragment);
  if (hidden == 0) {
    choice.algorithm = AutoAlgorithm::kFragment;
    choice.reasons.push_back("every call a server sent follows an input");
    return result;
  }
  choice.algorithm = AutoAlgorithm::kLinking;
  choice.reasons.push_back(fmt::format(
      "not fragment: servers sent {} calls before any input of theirs (a hidden hand-off)",
      hidden));
  return result;
}

}  // namespace weft
