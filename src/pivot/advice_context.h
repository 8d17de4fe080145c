// The baggage that live advice runs on: this thread's current request's.
//
// SEAM (to rewire when the live baggage library, weft_pivot_baggage, is merged): until
// then the current baggage is a thread_local query::Baggage, and a request's baggage
// moves between threads only through the helpers below. The advice gets its baggage
// from CurrentAdviceBaggage() alone, so rewiring means replacing that one function (and
// these helpers) with the live baggage's thread-local current baggage.
#pragma once

#include "query/baggage.h"

namespace weft::pivot {

// This thread's current baggage. Advice packs into and unpacks from it.
query::Baggage& CurrentAdviceBaggage();

// Hand-off to another thread: takes this thread's baggage (leaving it empty), for the
// receiving thread to SetAdviceBaggage.
query::Baggage TakeAdviceBaggage();
// Makes `bag` this thread's current baggage (a request arriving, a hand-off received).
void SetAdviceBaggage(query::Baggage bag);
// Empties this thread's baggage (the request ended).
void ClearAdviceBaggage();
// A branch (Table 4's split): the copy a concurrent branch (a spawned task, a message
// sent) carries; tuples either side packs afterwards stay invisible to the other.
query::Baggage BranchAdviceBaggage();
// Where a branch rejoins (Table 4's join): merges its baggage into this thread's.
void JoinAdviceBaggage(const query::Baggage& branch);

}  // namespace weft::pivot
