#include "pivot/untraced.h"

#include <dlfcn.h>

namespace weft::pivot {
namespace {

using SetUntraced = int (*)(int);

// Looked up once: the preload library is there from the process's start or never.
SetUntraced Setter() {
  static const SetUntraced setter =
      reinterpret_cast<SetUntraced>(dlsym(RTLD_DEFAULT, "weft_capture_set_untraced"));
  return setter;
}

}  // namespace

ScopedUntraced::ScopedUntraced() {
  if (SetUntraced set = Setter()) previous_ = set(1);
}

ScopedUntraced::~ScopedUntraced() {
  if (SetUntraced set = Setter()) set(previous_);
}

bool CaptureCanMarkUntraced() { return Setter() != nullptr; }

}  // namespace weft::pivot
