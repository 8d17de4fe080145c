#include "pivot/current_baggage.h"

#include <unistd.h>

namespace weft::pivot {

namespace internal {

thread_local constinit Baggage* installed_baggage = nullptr;

Baggage& ThreadOwnBaggage() {
  thread_local Baggage own;
  return own;
}

}  // namespace internal

Baggage TakeCurrentBaggage() {
  return std::move(CurrentBaggage());  // leaves it empty
}

void SetCurrentBaggage(Baggage baggage) { CurrentBaggage() = std::move(baggage); }

ScopedBaggage::ScopedBaggage(Baggage baggage) : saved_(TakeCurrentBaggage()) {
  CurrentBaggage() = std::move(baggage);
}

ScopedBaggage::~ScopedBaggage() {
  Baggage inner = std::move(CurrentBaggage());
  CurrentBaggage() = std::move(saved_);
  saved_ = std::move(inner);
}

pid_t ForkWithBaggage() {
  Baggage branch = CurrentBaggage().Split();
  pid_t pid = fork();
  if (pid == 0) {
    CurrentBaggage() = std::move(branch);
  } else if (pid < 0) {
    CurrentBaggage().Join(std::move(branch));
  }
  return pid;
}

}  // namespace weft::pivot
