// Pairing each RETURN with the CALL it answers, shared by every inference algorithm.
//
// The algorithms need different rules, because they trust different things: the precise
// ones (thread, fragment) trust reconcile's call ids, which name one call each; nesting
// (Project 5 §5.1.1.1) pairs by node pair, with ids when it has them, and must survive
// lost and reordered messages; linking orders each pair on the one clock that saw both
// ends, so clock offsets cannot reorder a call and its return. Each rule is an option
// below; each algorithm's header says which it sets.
#pragma once

#include <cstdint>
#include <vector>

#include "core/id.h"
#include "trace/trace.h"

namespace weft {

struct CallPairingOptions {
  // What a CALL and its RETURN must share, beyond the return going back the way the call
  // came. With `nodes`, a CALL A->B pairs only with a RETURN B->A; with `call_id`, only
  // with one of the same call id. A message without a call id is left out (neither
  // paired nor counted) when `call_id` is set and `require_call_id` too; otherwise it
  // pairs by the rest of the key.
  bool nodes = true;
  bool call_id = true;
  bool require_call_id = true;

  // The order calls and returns are met in.
  enum class Order : uint8_t {
    // The trace's order (SortTime).
    kTrace,
    // Per (caller, callee, call id), on the clock that saw both ends: the caller's (call
    // sent, return received) when the message has a time there, else the callee's (call
    // received, return sent); a call timed only by the callee never pairs with a return
    // timed by the caller. At one instant calls come before returns, so a zero-time RPC
    // still pairs; then trace order.
    kLocalClock,
  };
  Order order = Order::kTrace;

  // Which CALL a RETURN answers among those met before it with its key.
  enum class Answer : uint8_t {
    kEarliestOpen,  // the earliest not yet answered (first in, first out)
    kLatestOpen,    // the latest not yet answered (a stack: nested calls on one key)
    kLatest,        // the latest, answered or not: ids are unique, a repeat is a resend
  };
  Answer answer = Answer::kEarliestOpen;

  // A RETURN met before any CALL it could answer waits for the next such CALL (under
  // clock skew a return can sort before its own call), instead of staying unmatched.
  bool returns_wait = false;
  // With call ids: a CALL whose key is still open means the open call lost its return
  // (ids are unique among open calls); that call is given up, unmatched, so that it cannot
  // pair with a much later return. The CALLs given up are listed in `CallPairs::given_up`.
  bool give_up_reused_ids = false;
};

struct CallPairs {
  // Per message: for a RETURN the CALL it answers, for a CALL its RETURN (with
  // Answer::kLatest, the first RETURN that answered it); invalid for messages left
  // unpaired and for MSG messages.
  std::vector<MessageId> partner;
  // With give_up_reused_ids: each CALL given up and the CALL that reused its key, in the
  // order the latter were met.
  struct GivenUp {
    MessageId call;
    MessageId by;
  };
  std::vector<GivenUp> given_up;
  // Over the messages the options let in (MSG messages never are).
  int64_t pairs = 0;              // RETURNs paired
  int64_t unmatched_calls = 0;    // CALLs without a RETURN, given up ones included
  int64_t unmatched_returns = 0;  // RETURNs without a CALL

  // The CALL a RETURN answers, or the RETURN of a CALL; invalid if none.
  MessageId PartnerOf(MessageId m) const { return partner[m.value()]; }
};

CallPairs PairCalls(const Trace& trace, const CallPairingOptions& options);

}  // namespace weft
