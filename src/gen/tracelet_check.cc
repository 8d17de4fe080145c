// The structural check of a tracelet (see tracelet_check.h).
#include "gen/tracelet_check.h"

#include <fmt/format.h>

#include <algorithm>

namespace weft {

// Messages are one line: control characters from the input (a quoted key may hold a
// newline; toml++ quotes the character it choked on) are written as \xNN.
std::string OneLine(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (uint8_t(c) < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", uint8_t(c));
    } else {
      out += c;
    }
  }
  return out;
}

// Computes each step's ground-truth parent and rejects tracelets whose instances would not
// be one tree under the convention of paths/path_set.h (Project 5 §5.1: the call tree):
//   - a CALL's parent is the closest call into its sender among its `after` ancestors not
//     yet answered by a ret that is itself an ancestor; only step 0 may have none;
//   - a RET answers a call that is its ancestor, once, after every call nested in that
//     call was answered (synchronous RPC), so a nested call lies within its parent in time;
//   - a MSG's parent is its latest `after` step;
//   - every call is answered within the tracelet.
Status CheckTraceletStructure(Tracelet& t, const std::vector<std::string>& nodes,
                              std::string_view source) {
  auto error = [&](int line, std::string message) {
    return Status::InvalidArgument("{}:{}: {}", source, line, OneLine(message));
  };
  const size_t n = t.steps.size();
  // ancestors[i][j]: step j precedes step i through `after` (steps are few: a dense matrix).
  std::vector<std::vector<char>> ancestors(n, std::vector<char>(n, 0));
  std::vector<int32_t> answered_by(n, -1);
  auto label = [&](size_t i) {
    return t.steps[i].id.empty() ? fmt::format("step {}", i + 1)
                                 : fmt::format("step {} ('{}')", i + 1, t.steps[i].id);
  };
  auto node_name = [&](const NodeRef& r) {
    return r.variable >= 0 ? "$" + t.variables[r.variable].name : nodes[r.node];
  };
  for (size_t i = 0; i < n; ++i) {
    StepTemplate& s = t.steps[i];
    for (uint32_t a : s.after) {
      ancestors[i][a] = 1;
      for (size_t j = 0; j < n; ++j) ancestors[i][j] |= ancestors[a][j];
    }
    if (s.kind == MessageKind::kMessage) {
      if (!s.after.empty()) s.parent = int32_t(*std::max_element(s.after.begin(), s.after.end()));
      continue;
    }
    if (s.kind == MessageKind::kCall) {
      for (size_t j = i; j-- > 0;) {
        const StepTemplate& c = t.steps[j];
        if (!ancestors[i][j] || c.kind != MessageKind::kCall || !(c.to == s.from)) continue;
        if (answered_by[j] >= 0 && ancestors[i][answered_by[j]]) continue;
        s.parent = int32_t(j);
        break;
      }
      if (s.parent < 0 && i > 0) {
        return error(
            s.line,
            fmt::format("tracelet '{}': {}: call from '{}' is nested in no open call into '{}' "
                        "among the steps it comes after; only the first step may start the path",
                        t.name, label(i), node_name(s.from), node_name(s.from)));
      }
      continue;
    }
    // A ret.
    const size_t call = size_t(s.answers);
    if (!ancestors[i][call]) {
      return error(s.line,
                   fmt::format("tracelet '{}': {} answers call '{}' but does not come after it "
                               "(through 'after')",
                               t.name, label(i), t.steps[call].id));
    }
    if (answered_by[call] >= 0) {
      return error(s.line,
                   fmt::format("tracelet '{}': {}: call '{}' is already answered by {}", t.name,
                               label(i), t.steps[call].id, label(size_t(answered_by[call]))));
    }
    for (size_t j = call + 1; j < i; ++j) {
      const StepTemplate& child = t.steps[j];
      if (child.kind != MessageKind::kCall || child.parent != int32_t(call)) continue;
      if (answered_by[j] < 0 || !ancestors[i][answered_by[j]]) {
        return error(
            s.line, fmt::format("tracelet '{}': {} returns from call '{}' before its nested {} "
                                "is answered (a ret must come after the rets of the calls it made)",
                                t.name, label(i), t.steps[call].id, label(j)));
      }
    }
    answered_by[call] = int32_t(i);
    s.parent = int32_t(call);
  }
  for (size_t i = 0; i < n; ++i) {
    if (t.steps[i].kind == MessageKind::kCall && answered_by[i] < 0) {
      return error(
          t.steps[i].line,
          fmt::format("tracelet '{}': {} ({} -> {}) is never answered: every call "
                      "needs a ret step (ret = \"<its id>\") in its tracelet",
                      t.name, label(i), node_name(t.steps[i].from), node_name(t.steps[i].to)));
    }
  }
  // A loop whose instances take no time and that never thinks would never advance.
  bool advances = t.think_hi > 0;
  for (const StepTemplate& s : t.steps) {
    for (const DelayComponent& c : s.delay) advances |= c.mean > 0 || c.sd > 0;
  }
  if (!advances && t.instances > 0) {
    return error(t.steps[0].line,
                 fmt::format("tracelet '{}': every delay and its think time are zero, so "
                             "its loop would never advance in time",
                             t.name));
  }
  return Status::Ok();
}

}  // namespace weft
