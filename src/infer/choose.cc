// --algo auto's policy (infer/choose.h; docs/precise.md).
#include "infer/choose.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <thread>
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
    case AutoAlgorithm::kNesting:
      return "nesting";
  }
  return "?";
}

SetAsideNotes DescribeSetAside(const FragmentCounters& f) {
  SetAsideNotes notes;
  if (const int64_t found = f.set_aside_forwards_found + f.shared_read_forwards_found; found > 0) {
    notes.found = fmt::format(
        "{} requests set aside by their program or read together with another were followed "
        "to the call that forwarded them, by its content (the same SQL, HTTP method and URL, "
        "DNS name, ...)",
        found);
    if (f.set_aside_forwards_guessed > 0) {
      notes.found += fmt::format(
          "; {} of them chosen first-come among requests with the same content, a guess "
          "where the program does not serve them in the order they came",
          f.set_aside_forwards_guessed);
    }
  }
  auto also = [&](std::string note) { notes.found += (notes.found.empty() ? "" : "; ") + note; };
  if (f.set_aside_forwards_reordered > 0) {
    also(fmt::format(
        "the order of the replies gave {} forwards another request than their thread's "
        "inputs did (a loop answers requests as their replies come, but may forward them in "
        "any order; a guess where several replies wait)",
        f.set_aside_forwards_reordered));
  }
  if (f.contradicted_handoffs_mended_by_replies > 0) {
    also(fmt::format(
        "{} replies answered another request than the one handed to their thread, at nodes "
        "where those hand-offs placed nothing that stands: only forwards the replies gave "
        "again, or nothing but replies (an interpreter lock's passes, not work)",
        f.contradicted_handoffs_mended_by_replies));
  }
  if (const int64_t rest = f.inputs_sharing_a_read - f.shared_read_forwards_found; rest > 0) {
    notes.sharing_a_read = fmt::format(
        "{} requests arrived in a read that brought another too, and the later ones' work "
        "may be given to the first: recapture with weft capture --isolate",
        rest);
  }
  if (const int64_t rest = f.inputs_before_acting - f.set_aside_forwards_found; rest > 0)
    notes.before_acting = fmt::format("{} {}", rest, kInputsBeforeActing);
  return notes;
}

double ExplainedShare(const PathSet& paths) {
  if (paths.trace_messages == 0) return 0;
  std::vector<double> best(paths.trace_messages, -1);
  std::vector<bool> caused(paths.trace_messages, false);
  for (size_t i = 0; i < paths.instance_count(); ++i) {
    auto msgs = paths.InstanceMessages(i);
    auto parents = paths.InstanceParents(i);
    for (size_t k = 0; k < msgs.size(); ++k) {
      const uint32_t m = msgs[k].value();
      if (paths.probability[i] <= best[m]) continue;
      best[m] = paths.probability[i];
      caused[m] = parents[k] >= 0;
    }
  }
  return double(std::count(caused.begin(), caused.end(), true)) / double(paths.trace_messages);
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
    case AutoAlgorithm::kNesting:
      return "nesting (Project 5)";
  }
  return "?";
}

// Runs linking and nesting and keeps the one that explains more of the trace.
Status ChooseStatistical(const Trace& trace, const LinkingOptions& linking_options,
                         const NestingOptions& nesting_options, AutoInference& result) {
  AutoChoice& choice = result.choice;
  // Both only read the trace: linking runs on a second thread while nesting runs here, so
  // deciding takes about as long as the slower of the two, not both.
  std::optional<Result<LinkingInference>> linking_run;
  double by_linking = 0;
  std::thread linking_thread([&] {
    linking_run.emplace(InferLinking(trace, linking_options));
    if (linking_run->ok()) by_linking = ExplainedShare((*linking_run)->paths);
  });
  Result<NestingInference> nesting_run = InferNesting(trace, nesting_options);
  const double by_nesting = nesting_run.ok() ? ExplainedShare(nesting_run->paths) : 0;
  linking_thread.join();
  // Checked in place, not moved out first (WEFT_ASSIGN_OR_RETURN): once InferLinking is in
  // the same unity batch, GCC 12 at -O3 warns that the moved Result's Status may be
  // uninitialized.
  if (!linking_run->ok()) return linking_run->status();
  if (!nesting_run.ok()) return nesting_run.status();
  LinkingInference linking = std::move(**linking_run);
  NestingInference nesting = std::move(*nesting_run);
  choice.linking_explained = by_linking;
  choice.nesting_explained = by_nesting;
  // On a tie: linking, which weighs both timestamps, unless the trace has only one per
  // message (Project 5's nesting was made for such traces, linking's delay model for two)
  // or linking guessed most of its trees: a tree with more ambiguous links than its
  // try-both budget can weigh gets the rest by a greedy guess its probabilities do not
  // cover. On the microservice scenarios linking guesses 70-99% of its trees and gets
  // 0.2-45% of them exactly right against nesting's 32-97% (docs/microservices.md).
  const TraceColumns& c = trace.columns();
  const bool one_clock =
      std::all_of(c.recv_time.begin(), c.recv_time.end(), [](TimeNs t) { return t == kNoTime; });
  choice.linking_trees = linking.counters.roots;
  choice.linking_trees_guessed = linking.counters.budget_exhausted;
  const bool mostly_guessed = 2 * choice.linking_trees_guessed > choice.linking_trees;
  const bool tie = by_nesting == by_linking;
  choice.algorithm = by_nesting > by_linking || (tie && (one_clock || mostly_guessed))
                         ? AutoAlgorithm::kNesting
                         : AutoAlgorithm::kLinking;
  std::string why;
  if (!tie) {
    why = by_nesting > by_linking ? "nesting explains more" : "linking explains more";
  } else if (one_clock) {
    why = "a tie, and with one timestamp per message nesting (made for such traces) is preferred";
  } else if (mostly_guessed) {
    why = fmt::format(
        "a tie, and linking guessed {} of its {} trees (more ambiguous links than its try-both "
        "budget weighs), so nesting is preferred",
        choice.linking_trees_guessed, choice.linking_trees);
  } else {
    why = "a tie, and with receive times linking (which weighs both timestamps) is preferred";
  }
  choice.reasons.push_back(
      fmt::format("linking gives {:.2f}% of the messages a cause, nesting "
                  "{:.2f}%: {}",
                  100 * by_linking, 100 * by_nesting, why));
  result.linking = std::move(linking);
  result.nesting = std::move(nesting);
  return Status::Ok();
}

// vPath's model is a request answered by a reply; a call nobody answered is a one-way
// message or one still open when the trace ended, and whatever its server did for it
// lies in no tree, whichever algorithm is chosen (docs/precise.md, "Not yet": a broker).
void NoteUnansweredCalls(AutoChoice& choice) {
  if (choice.calls_never_answered == 0) return;
  choice.reasons.push_back("but " + DescribeUnansweredCalls(choice.calls_never_answered));
}

}  // namespace

std::string AutoChoice::Describe() const {
  std::string why;
  for (const std::string& reason : reasons) why += why.empty() ? reason : "; " + reason;
  if (!threads_named) return fmt::format("{}: {}", why, PaperName(algorithm));
  return fmt::format("{}: {}", PaperName(algorithm), why);
}

Result<AutoInference> ChooseAlgorithm(const Trace& trace, const LinkingOptions& linking,
                                      const NestingOptions& nesting) {
  AutoInference result;
  AutoChoice& choice = result.choice;
  Result<ThreadInference> thread = InferThread(trace);
  if (!thread.ok()) {
    choice.algorithm = AutoAlgorithm::kLinking;
    choice.reasons = {"the trace names no threads, so neither precise algorithm applies"};
    WEFT_RETURN_IF_ERROR(ChooseStatistical(trace, linking, nesting, result));
    return result;
  }
  choice.threads_named = true;
  choice.overlapping_requests = thread->counters.overlapping_requests;
  choice.calls_outside_requests = thread->counters.calls_outside_requests;
  choice.root_calls_from_servers = thread->counters.root_calls_from_servers;
  choice.calls_through_ambiguous_handoffs = thread->counters.calls_through_ambiguous_handoffs;
  choice.calls_never_answered = thread->counters.calls_never_answered;
  const int64_t handoffs = thread->counters.calls_through_handoffs;
  const int64_t astray = thread->counters.calls_handoffs_led_astray;
  result.thread = std::move(*thread);
  if (choice.overlapping_requests == 0 && choice.calls_outside_requests == 0 &&
      choice.root_calls_from_servers == 0 && choice.calls_through_ambiguous_handoffs == 0) {
    choice.algorithm = AutoAlgorithm::kThread;
    choice.reasons = {
        "every thread worked on one request at a time and every call lies inside a request its "
        "thread answered"};
    if (handoffs > 0) {
      choice.reasons.back() +=
          fmt::format(" or was handed (followed {} calls through hand-offs)", handoffs);
    }
    if (astray > 0) {
      choice.reasons.back() += fmt::format(
          "; {} calls whose hand-offs led to no request or to one already answered (an "
          "interpreter lock's passes) went with the request their thread answered next",
          astray);
    }
    NoteUnansweredCalls(choice);
    return result;
  }
  choice.reasons.push_back(fmt::format(
      "not thread: {} requests were taken in by a thread that still owed a reply, {} calls "
      "lie outside the requests their thread answered, {} calls came from a server's thread "
      "that never replies (a hand-off)",
      choice.overlapping_requests, choice.calls_outside_requests, choice.root_calls_from_servers));
  if (choice.calls_through_ambiguous_handoffs > 0) {
    choice.reasons.back() +=
        fmt::format(", {} calls were placed through hand-offs that could have gone elsewhere",
                    choice.calls_through_ambiguous_handoffs);
  }
  WEFT_ASSIGN_OR_RETURN(FragmentInference fragment, InferFragment(trace));
  const FragmentCounters& f = fragment.counters;
  const int64_t hidden = f.server_calls_outside_fragments;
  choice.server_calls_outside_fragments = hidden;
  choice.outputs_through_ambiguous_handoffs = f.outputs_through_ambiguous_handoffs;
  choice.handoffs_contradicted_by_replies = f.handoffs_contradicted_by_replies;
  choice.inputs_sharing_a_read = f.inputs_sharing_a_read;
  choice.outputs_beside_partial_inputs = f.outputs_beside_partial_inputs;
  choice.inputs_before_acting = f.inputs_before_acting;
  result.fragment = std::move(fragment);
  const int64_t guessed = f.outputs_through_ambiguous_handoffs;
  const int64_t contradicted = f.handoffs_contradicted_by_replies;
  const int64_t half_read = f.outputs_beside_partial_inputs;
  if (hidden == 0 && guessed == 0 && contradicted == 0 && half_read == 0) {
    choice.algorithm = AutoAlgorithm::kFragment;
    choice.reasons.push_back("every call a server sent follows an input");
    if (f.handoffs_carrying_requests > 0) {
      choice.reasons.back() += fmt::format(" or a hand-off ({} hand-offs carried requests)",
                                           f.handoffs_carrying_requests);
    }
  } else {
    choice.algorithm = AutoAlgorithm::kLinking;
    std::string why = "not fragment:";
    auto add = [&](int64_t n, std::string_view what) {
      if (n == 0) return;
      why += fmt::format("{} {} {}", why.back() == ':' ? "" : ",", n, what);
    };
    add(hidden, "calls were sent by servers before any input of theirs (a hidden hand-off)");
    add(guessed,
        "calls or messages followed a hand-off that could have gone elsewhere (a wake-up or "
        "timer shared by several requests)");
    add(contradicted, "replies answered a request other than the one handed to their thread");
    add(half_read,
        "calls or messages went to another request while their thread was part way through "
        "reading a call (streamed on for that call, or not: times cannot tell)");
    choice.reasons.push_back(why);
  }
  if (choice.algorithm == AutoAlgorithm::kLinking)
    WEFT_RETURN_IF_ERROR(ChooseStatistical(trace, linking, nesting, result));
  // Hand-offs that misled fragment (a reply contradicting one, or one that could have gone
  // elsewhere, or a call left outside every fragment where hand-offs were followed) most
  // often come from a runtime's own helper threads, which wait on condition variables
  // and eventfds for work of their own (Node.js: V8's platform workers) and which capture
  // logs as hand-offs (docs/precise.md, Node.js).
  if (contradicted + guessed + hidden > 0 && f.handoffs_carrying_requests > 0) {
    choice.reasons.push_back(
        "if the program's helper threads synchronise for work of their own (a JavaScript "
        "runtime's, as Node.js's do), recapture with weft capture --sync off");
  }
  // A read that brought several requests at once gives the later ones' work to the first
  // (BorderPatrol §3.2) where their forwards do not say whose they are: event isolation
  // cuts such reads at each request's end. The same from separate reads: a loop that
  // reads every ready input before acting on any (weighed where fragment is kept; a
  // rejected fragment's trees are not given), or, with isolation, one that sets a request
  // aside for a later turn (pgbouncer's clients waiting for a free server connection:
  // docs/precise.md).
  const SetAsideNotes notes = DescribeSetAside(f);
  if (!notes.sharing_a_read.empty()) choice.reasons.push_back(notes.sharing_a_read);
  if (choice.algorithm == AutoAlgorithm::kFragment) {
    if (!notes.found.empty()) choice.reasons.push_back(notes.found);
    if (!notes.before_acting.empty()) choice.reasons.push_back(notes.before_acting);
  }
  NoteUnansweredCalls(choice);
  return result;
}

}  // namespace weft
