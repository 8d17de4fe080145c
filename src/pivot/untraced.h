// Weft's own threads under `weft capture`: the agent and the bus talk to the front end over
// sockets, and a capture of the program must not record that traffic as the program's
// (inference would take bus messages for the program's requests). While a ScopedUntraced
// lives, the calling thread is marked untraced in the capture's preload library, and every
// thread it creates meanwhile is marked for its whole life: nothing they do is logged
// (docs/capture.md, "Weft's own threads").
//
// The mark is set through weft_capture_set_untraced, found with dlsym in the running
// process, so that nothing links against the preload library: without it (the program
// runs untraced) a ScopedUntraced does nothing.
#pragma once

namespace weft::pivot {

class ScopedUntraced {
 public:
  ScopedUntraced();
  ~ScopedUntraced();
  ScopedUntraced(const ScopedUntraced&) = delete;
  ScopedUntraced& operator=(const ScopedUntraced&) = delete;

 private:
  int previous_ = 0;
};

// Whether the capture's preload library is in this process (and so whether a
// ScopedUntraced marks anything).
bool CaptureCanMarkUntraced();

}  // namespace weft::pivot
