#include "pivot/advice_context.h"

#include <utility>

namespace weft::pivot {
namespace {

query::Baggage& ThreadBaggage() {
  thread_local query::Baggage bag;
  return bag;
}

}  // namespace

query::Baggage& CurrentAdviceBaggage() { return ThreadBaggage(); }

query::Baggage TakeAdviceBaggage() {
  query::Baggage out = std::move(ThreadBaggage());
  ThreadBaggage().Clear();
  return out;
}

void SetAdviceBaggage(query::Baggage bag) { ThreadBaggage() = std::move(bag); }

void ClearAdviceBaggage() { ThreadBaggage().Clear(); }

query::Baggage BranchAdviceBaggage() {
  query::Baggage branch;
  ThreadBaggage().SplitInto(branch);
  return branch;
}

void JoinAdviceBaggage(const query::Baggage& branch) { ThreadBaggage().Join(branch); }

}  // namespace weft::pivot
