#include "infer/call_pairs.h"

#include <absl/container/flat_hash_map.h>
#include <absl/container/inlined_vector.h>

#include <algorithm>
#include <tuple>

namespace weft {
namespace {

using Options = CallPairingOptions;

// Everything a CALL and its RETURN share under the options, compared exactly: the fields
// the options leave out are invalid (or false) in every key.
struct CallKey {
  NodeId caller;
  NodeId callee;
  StringId id;
  bool caller_clock = false;  // Order::kLocalClock: timed by the caller, not the callee
  bool operator==(const CallKey&) const = default;
  auto operator<=>(const CallKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const CallKey& k) {
    return H::combine(std::move(h), k.caller.value(), k.callee.value(), k.id.value(),
                      k.caller_clock);
  }
};

// Meets calls and returns one at a time, in the order the options ask for, and pairs them.
class Pairer {
 public:
  Pairer(const Options& options, CallPairs& out) : options_(options), out_(out) {}

  void MeetCall(uint32_t m, const CallKey& key) {
    if (options_.returns_wait && !pending_.empty()) {
      if (auto it = pending_.find(key); it != pending_.end()) {
        const uint32_t ret = it->second.front();
        it->second.erase(it->second.begin());
        if (it->second.empty()) pending_.erase(it);
        Pair(m, ret);
        return;
      }
    }
    auto& calls = open_[key];
    if (options_.answer == Options::Answer::kLatest) {
      calls.clear();  // only the latest is ever answered
    } else if (options_.give_up_reused_ids && key.id.valid()) {
      for (uint32_t call : calls) out_.given_up.push_back({MessageId(call), MessageId(m)});
      calls.clear();
    }
    calls.push_back(m);
  }

  void MeetReturn(uint32_t m, const CallKey& key) {
    auto it = open_.find(key);
    if (it == open_.end()) {
      if (options_.returns_wait) pending_[key].push_back(m);
      return;
    }
    auto& calls = it->second;
    uint32_t call = calls.back();
    switch (options_.answer) {
      case Options::Answer::kEarliestOpen:
        call = calls.front();
        calls.erase(calls.begin());
        break;
      case Options::Answer::kLatestOpen:
        calls.pop_back();
        break;
      case Options::Answer::kLatest:
        break;
    }
    if (calls.empty()) open_.erase(it);
    Pair(call, m);
  }

  // Order::kLocalClock meets each key's messages together: what is left of one key's
  // can be dropped when the next key's begin.
  void Forget(const CallKey& key) {
    open_.erase(key);
    pending_.erase(key);
  }

 private:
  void Pair(uint32_t call, uint32_t ret) {
    out_.partner[ret] = MessageId(call);
    if (!out_.partner[call].valid()) out_.partner[call] = MessageId(ret);
  }

  const Options& options_;
  CallPairs& out_;
  absl::flat_hash_map<CallKey, absl::InlinedVector<uint32_t, 1>> open_;     // calls
  absl::flat_hash_map<CallKey, absl::InlinedVector<uint32_t, 1>> pending_;  // returns
};

void PairInTraceOrder(const Trace& trace, const Options& options, CallPairs& out) {
  const TraceColumns& c = trace.columns();
  const bool need_id = options.call_id && options.require_call_id;
  Pairer pairer(options, out);
  for (uint32_t i = 0; i < trace.size(); ++i) {
    const MessageKind kind = c.kind[i];
    if (kind == MessageKind::kMessage || (need_id && !c.call_id[i].valid())) continue;
    const bool call = kind == MessageKind::kCall;
    CallKey key;
    if (options.nodes) {
      key.caller = call ? c.sender[i] : c.receiver[i];
      key.callee = call ? c.receiver[i] : c.sender[i];
    }
    if (options.call_id) key.id = c.call_id[i];
    if (call)
      pairer.MeetCall(i, key);
    else
      pairer.MeetReturn(i, key);
  }
}

void PairOnLocalClocks(const Trace& trace, const Options& options, CallPairs& out) {
  const TraceColumns& c = trace.columns();
  const bool need_id = options.call_id && options.require_call_id;
  struct Entry {
    CallKey key;
    TimeNs time;
    bool is_return;
    uint32_t message;
  };
  std::vector<Entry> entries;
  for (uint32_t i = 0; i < trace.size(); ++i) {
    const MessageKind kind = c.kind[i];
    if (kind == MessageKind::kMessage || (need_id && !c.call_id[i].valid())) continue;
    const bool ret = kind == MessageKind::kReturn;
    Entry e{.is_return = ret, .message = i};
    if (options.nodes) {
      e.key.caller = ret ? c.receiver[i] : c.sender[i];
      e.key.callee = ret ? c.sender[i] : c.receiver[i];
    }
    if (options.call_id) e.key.id = c.call_id[i];
    const TimeNs at_caller = ret ? c.recv_time[i] : c.send_time[i];
    const TimeNs at_callee = ret ? c.send_time[i] : c.recv_time[i];
    e.key.caller_clock = at_caller != kNoTime;
    e.time = e.key.caller_clock ? at_caller : at_callee;
    entries.push_back(e);
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.key, a.time, a.is_return, a.message) <
           std::tie(b.key, b.time, b.is_return, b.message);
  });
  Pairer pairer(options, out);
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (i > 0 && !(entries[i - 1].key == e.key)) pairer.Forget(entries[i - 1].key);
    if (e.is_return)
      pairer.MeetReturn(e.message, e.key);
    else
      pairer.MeetCall(e.message, e.key);
  }
}

}  // namespace

CallPairs PairCalls(const Trace& trace, const CallPairingOptions& options) {
  CallPairs out;
  out.partner.assign(trace.size(), MessageId());
  if (options.order == Options::Order::kTrace)
    PairInTraceOrder(trace, options, out);
  else
    PairOnLocalClocks(trace, options, out);
  const TraceColumns& c = trace.columns();
  const bool need_id = options.call_id && options.require_call_id;
  for (size_t i = 0; i < trace.size(); ++i) {
    const MessageKind kind = c.kind[i];
    if (kind == MessageKind::kMessage || (need_id && !c.call_id[i].valid())) continue;
    if (kind == MessageKind::kReturn) {
      if (out.partner[i].valid())
        ++out.pairs;
      else
        ++out.unmatched_returns;
    } else {
      out.unmatched_calls += !out.partner[i].valid();
    }
  }
  return out;
}

}  // namespace weft
