// Processors still to come: they behave as the one-shot processor (no ends).
#include "capture/protocols/processors.h"

namespace weft::capture::protocols::internal {

void InitPostgres(Parser*) {}
size_t ConsumePostgres(Parser*, const uint8_t*, size_t length, bool*) { return length; }
void InitRedis(Parser*) {}
size_t ConsumeRedis(Parser*, const uint8_t*, size_t length, bool*) { return length; }
void InitDns(Parser*) {}
size_t ConsumeDns(Parser*, const uint8_t*, size_t length, bool*) { return length; }
void SetDnsAttributes(Parser*, const uint8_t*, size_t) {}

}  // namespace weft::capture::protocols::internal
