// The path data model's keys and the trace fingerprint (paths/path_set.h).
#include "paths/path_set.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <utility>

namespace weft {

namespace {

char KindLetter(MessageKind kind) {
  switch (kind) {
    case MessageKind::kCall:
      return 'C';
    case MessageKind::kReturn:
      return 'R';
    case MessageKind::kMessage:
      return 'M';
  }
  return '?';
}

}  // namespace

// Escapes the characters that structure a key, so that different names give different keys.
std::string EscapeKeyName(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (unsigned char c : name) {
    if (c == '%' || c == '(' || c == ')' || c == '>' || c == ' ' || c < 0x20 || c == 0x7f) {
      out += fmt::format("%{:02X}", c);
    } else {
      out += char(c);
    }
  }
  return out;
}

std::string KeyLabel(MessageKind kind, std::string_view escaped_sender,
                     std::string_view escaped_receiver) {
  std::string s;
  s.reserve(escaped_sender.size() + escaped_receiver.size() + 3);
  s += KindLetter(kind);
  s += ':';
  s += escaped_sender;
  s += '>';
  s += escaped_receiver;
  return s;
}

uint64_t TraceFingerprint(const Trace& trace) {
  // Node names are hashed rather than node ids, so that a trace converted between formats
  // (which may intern names in another order) keeps its fingerprint. Ground truth, call
  // ids and threads are left out: a trace stripped of its truth is still the same trace.
  const TraceColumns& c = trace.columns();
  std::vector<uint64_t> name_hash(trace.nodes().size());
  for (size_t i = 0; i < name_hash.size(); ++i) {
    std::string_view name = trace.nodes().Get(NodeId(uint32_t(i)));
    name_hash[i] = XXH3_64bits(name.data(), name.size());
  }
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  uint64_t n = trace.size();
  XXH3_64bits_update(state, &n, sizeof n);
  for (size_t i = 0; i < trace.size(); ++i) {
    uint64_t row[5] = {uint64_t(c.send_time[i]), uint64_t(c.recv_time[i]),
                       name_hash[c.sender[i].value()], name_hash[c.receiver[i].value()],
                       uint64_t(c.kind[i])};
    XXH3_64bits_update(state, row, sizeof row);
  }
  uint64_t h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return h;
}

std::string ElementLabel(const PathSet& set, const PatternElement& element) {
  return KeyLabel(element.kind, EscapeKeyName(set.nodes.Get(element.sender)),
                  EscapeKeyName(set.nodes.Get(element.receiver)));
}

Result<std::string> PatternKey(std::span<const std::string> labels,
                               std::span<const int32_t> parents) {
  if (labels.empty() || labels.size() != parents.size()) {
    return Status::InvalidArgument("a pattern needs as many parents as elements, at least one");
  }
  if (parents[0] != -1) return Status::InvalidArgument("element 0 is not the root");
  // Walk the pre-order with the stack of open elements (the path from the root to the
  // element before); an element's parent must be on that stack.
  std::string key;
  std::vector<std::pair<int32_t, bool>> open;  // element, has had a child written
  key += labels[0];
  open.push_back({0, false});
  for (size_t k = 1; k < labels.size(); ++k) {
    int32_t p = parents[k];
    while (!open.empty() && open.back().first != p) {
      if (open.back().second) key += ')';
      open.pop_back();
    }
    if (open.empty()) {
      return Status::InvalidArgument(
          "element {} has parent {}, which is not an ancestor of element {} (not a pre-order tree)",
          k, p, k - 1);
    }
    key += open.back().second ? ' ' : '(';
    open.back().second = true;
    key += labels[k];
    open.push_back({int32_t(k), false});
  }
  while (!open.empty()) {
    if (open.back().second) key += ')';
    open.pop_back();
  }
  return key;
}

}  // namespace weft
