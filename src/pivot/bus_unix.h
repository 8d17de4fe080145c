// The transports behind OpenBus (bus.h); only open_bus.cc and tests include this.
#pragma once

#include <memory>
#include <string>

#include "pivot/bus.h"

namespace weft::pivot {

// The embedded bus at `path` (bus_unix.cc): the hub if options.may_host and no hub holds
// the path, else a client that connects (now or later, in the background).
Result<std::unique_ptr<Bus>> OpenUnixBus(const std::string& path, const OpenBusOptions& options);

// A NATS client for "nats://HOST:PORT" (bus_nats.cc). Never fails for want of a server.
Result<std::unique_ptr<Bus>> OpenNatsBus(const std::string& url, const OpenBusOptions& options);

}  // namespace weft::pivot
