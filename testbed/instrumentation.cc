#include "testbed/instrumentation.h"

#include <memory>
#include <utility>

#include "testbed/wire.h"

#ifndef WEFT_NO_TRACEPOINTS
#include "pivot/current_baggage.h"
#endif

namespace weft::testbed {

WEFT_TRACEPOINT(kRequestTracepoint, "Testbed.Request", "type", "bytes", "client", "server", "time");
WEFT_TRACEPOINT(kCallTracepoint, "Testbed.Call", "type", "bytes", "tier", "to", "server",
                "replicas", "time");
WEFT_TRACEPOINT(kReplyTracepoint, "Testbed.Reply", "type", "status", "bytes", "latency", "server",
                "time");
WEFT_TRACEPOINT(kDiskReadTracepoint, "Testbed.DiskRead", "type", "bytes", "server", "duration",
                "time");
WEFT_TRACEPOINT(kQueueWaitTracepoint, "Testbed.QueueWait", "wait", "stage", "server", "time");

int64_t TimeIfWoven(const pivot::Tracepoint& tracepoint) {
  return tracepoint.woven() ? WallNow() : 0;
}

#ifndef WEFT_NO_TRACEPOINTS

RequestBaggage BranchCurrentBaggage() {
  RequestBaggage branch;
  branch.live = pivot::CurrentBaggage().Split();
  return branch;
}

void JoinCurrentBaggage(RequestBaggage&& branch) {
  pivot::CurrentBaggage().Join(std::move(branch.live));
}

std::string BaggageForCall() {
  std::string bytes;
  pivot::CurrentBaggage().SplitSerializeTo(bytes);
  return bytes;
}

std::string BaggageForReply(uint64_t& packs) {
  packs = pivot::CurrentBaggage().packs();
  return pivot::CurrentBaggage().SerializeReply();
}

bool BaggageForReplyChanged(std::string& bytes, uint64_t packs) {
  pivot::Baggage& current = pivot::CurrentBaggage();
  // Advice that packed nothing leaves the bytes as they were, unless it decoded them and
  // found them malformed: then the reply carries what is left (nothing).
  if (current.packs() == packs && current.decode_status().ok()) return false;
  std::string again = current.SerializeReply();
  if (again == bytes) return false;
  bytes = std::move(again);
  return true;
}

void JoinReplyBaggage(std::string&& bytes) {
  if (bytes.empty()) return;
  pivot::Baggage branch;
  if (branch.DeserializeOwned(std::move(bytes)).ok())
    pivot::CurrentBaggage().Join(std::move(branch));
}

void ReceiveBaggage(RequestBaggage& bag, std::string&& bytes, bool from_server) {
  // Refused bytes (counted in pivot::GlobalBaggageCounters) leave a new request's baggage.
  bag.from_caller = from_server || !bytes.empty();
  if (!bytes.empty()) (void)bag.live.DeserializeOwned(std::move(bytes));
}

#endif  // WEFT_NO_TRACEPOINTS

}  // namespace weft::testbed
