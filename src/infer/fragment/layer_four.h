// After fragment's forward scan (fragment.h): a layer-4 proxy's connections paired.
#pragma once

#include <vector>

#include "core/id.h"
#include "trace/trace.h"

namespace weft {

// A layer-4 proxy passes each client's bytes on over a connection of its own: where the
// first call on a connection a thread opened was placed in the first request of a client
// connection read after the connect (a client taken up: fragment.cc), and every call on it has
// the bytes of that connection's request in the same place, sent after it was read, and
// a reply of the bytes of its answer, read before that was sent, each call forwards its
// request, whatever turn sent it (hitch without isolation reads several clients'
// requests in one turn and forwards them in the next, in its own order). An HTTP proxy
// rewrites heads, and a pool's connection carries other clients' requests: neither fits.
// `call_of`: per RETURN the CALL it answers; `parent`: the scan's, given again where paired.
void PairLayerFourConnections(const Trace& trace, const std::vector<MessageId>& call_of,
                              std::vector<MessageId>& parent);

}  // namespace weft
