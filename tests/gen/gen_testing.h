// Helpers for the gen tests: ground-truth checks and path signatures.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gen/gen.h"

namespace weft {

inline GenConfig MustLoad(const std::string& name) {
  Result<GenConfig> c = LoadGenConfig(name);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? std::move(c).value() : GenConfig{};
}

inline Trace MustMake(const GenConfig& config, GenSummary* summary = nullptr) {
  Result<Trace> t = MakeTrace(config, summary);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? std::move(t).value() : Trace{};
}

// Counts violations of the convention of paths/path_set.h in a trace's ground truth, reporting
// the first few: one root per path, parents in the same path and earlier; a RET's parent
// is the CALL it answers (reversed endpoints, same call id, answered once); a CALL's parent
// is a CALL into its sender that encloses it in time; every call answered; with
// `msg_hops`, a MSG's parent is the message that arrived at its sender.
inline int CountTruthViolations(const Trace& trace, bool msg_hops = false) {
  const TraceColumns& c = trace.columns();
  const size_t n = trace.size();
  int bad = 0;
  auto fail = [&](size_t i, const char* what) {
    if (++bad <= 5) ADD_FAILURE() << "message " << i << ": " << what;
  };
  std::map<uint32_t, int> roots;
  std::vector<int64_t> ret_of(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (!c.truth_path[i].valid()) {
      fail(i, "no path");
      continue;
    }
    const MessageId p = c.truth_parent[i];
    if (!p.valid()) {
      ++roots[c.truth_path[i].value()];
      if (c.kind[i] == MessageKind::kReturn) fail(i, "a RET without parent");
      continue;
    }
    roots.try_emplace(c.truth_path[i].value(), 0);
    const size_t j = p.value();
    if (j >= i) fail(i, "parent not earlier");
    if (c.truth_path[j] != c.truth_path[i]) fail(i, "parent in another path");
    if (c.send_time[j] > c.send_time[i]) fail(i, "parent later in time");
    switch (c.kind[i]) {
      case MessageKind::kReturn:
        if (c.kind[j] != MessageKind::kCall) fail(i, "RET's parent is not a CALL");
        if (c.sender[i] != c.receiver[j] || c.receiver[i] != c.sender[j])
          fail(i, "RET reverses no CALL");
        if (!c.call_id[i].valid() || c.call_id[i] != c.call_id[j]) fail(i, "call ids differ");
        if (ret_of[j] >= 0) fail(i, "CALL answered twice");
        ret_of[j] = int64_t(i);
        break;
      case MessageKind::kCall:
        if (c.kind[j] != MessageKind::kCall) fail(i, "CALL's parent is not a CALL");
        if (c.receiver[j] != c.sender[i]) fail(i, "CALL's parent is not a call into its sender");
        break;
      case MessageKind::kMessage:
        if (msg_hops && c.receiver[j] != c.sender[i])
          fail(i, "MSG's parent did not reach its sender");
        break;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (c.kind[i] != MessageKind::kCall) continue;
    if (ret_of[i] < 0) {
      fail(i, "CALL never answered");
      continue;
    }
    const MessageId p = c.truth_parent[i];
    // The enclosing call's return comes after this call's return.
    if (p.valid() && (ret_of[p.value()] < 0 ||
                      c.send_time[size_t(ret_of[p.value()])] < c.send_time[size_t(ret_of[i])])) {
      fail(i, "parent CALL does not enclose it in time");
    }
  }
  for (const auto& [path, count] : roots) {
    if (count != 1) fail(path, "path without exactly one root");
  }
  return bad;
}

// Per path, its messages' (kind, sender, receiver) in time order: the pattern of a path
// whose steps are ordered in time (every built-in scenario's are).
inline std::map<uint32_t, std::string> PathSignatures(const Trace& trace) {
  const TraceColumns& c = trace.columns();
  std::map<uint32_t, std::string> sig;
  for (size_t i = 0; i < trace.size(); ++i) {
    if (!c.truth_path[i].valid()) continue;
    std::string& s = sig[c.truth_path[i].value()];
    s += MessageKindOp(c.kind[i]).substr(0, 1);
    s += ' ';
    s += trace.NodeName(c.sender[i]);
    s += '>';
    s += trace.NodeName(c.receiver[i]);
    s += ';';
  }
  return sig;
}

// Pattern -> count, and the counts in decreasing order.
inline std::map<std::string, int> PatternCounts(const Trace& trace) {
  std::map<std::string, int> counts;
  for (const auto& [path, s] : PathSignatures(trace)) ++counts[s];
  return counts;
}
inline std::vector<int> SortedCounts(const std::map<std::string, int>& counts) {
  std::vector<int> v;
  for (const auto& [s, k] : counts) v.push_back(k);
  std::sort(v.rbegin(), v.rend());
  return v;
}

}  // namespace weft
