// Node names and clocks (node_namer.h).
#include "reconcile/node_namer.h"

#include <fmt/format.h>

#include "capture/program_name.h"

namespace weft::reconcile {

NodeId NodeNamer::Traced(uint32_t log_index, int32_t tid) {
  if (naming_ != NodeNaming::kThread) tid = 0;
  uint64_t key = uint64_t(log_index) << 32 | uint32_t(tid);
  auto [it, inserted] = cache_.try_emplace(key);
  if (inserted) {
    it->second = Name(log_index, tid);
    // A node name shared by two boots (a host that rebooted) keeps the first clock.
    if (!ClockSlot(it->second).valid()) ClockSlot(it->second) = clock_of_log_[log_index];
  }
  return it->second;
}

std::vector<ClockId> NodeNamer::ClockOfNode() {
  clock_of_node_.resize(builder_.nodes().size(), ClockId());
  return clock_of_node_;
}

NodeId NodeNamer::Name(uint32_t log_index, int32_t tid) {
  const capture::EventLog& log = logs_[log_index];
  std::string process = naming_ == NodeNaming::kName ? capture::ProcessName(log) : "";
  std::string name = log.header.host + ":" + (process.empty() ? Program(log_index) : process);
  if (naming_ == NodeNaming::kProcess) name += fmt::format("[{}]", log.header.pid);
  if (naming_ == NodeNaming::kThread) name += fmt::format("[{}/{}]", log.header.pid, tid);
  return builder_.Node(name);
}

const std::string& NodeNamer::Program(uint32_t log_index, int depth) {
  if (program_.empty()) program_.resize(logs_.size());
  std::string& program = program_[log_index];
  if (!program.empty()) return program;
  const capture::EventLogHeader& child = logs_[log_index].header;
  program = capture::ProgramName(logs_[log_index]);
  const bool plain = !child.arguments.empty() &&
                     capture::IsPlainCommand(child.arguments[0].data(), child.arguments[0].size());
  if (child.exec_index != 0 || plain || depth == 16) return program;
  // The parent's image that forked this one: the same executable, on the same clock, the
  // last to start before it.
  const capture::EventLogHeader* parent = nullptr;
  uint32_t parent_index = 0;
  for (uint32_t i = 0; i < logs_.size(); ++i) {
    const capture::EventLogHeader& h = logs_[i].header;
    if (h.pid != child.parent_pid || clock_of_log_[i] != clock_of_log_[log_index] ||
        h.executable != child.executable || h.clock_monotonic_ns > child.clock_monotonic_ns)
      continue;
    if (parent == nullptr || h.clock_monotonic_ns > parent->clock_monotonic_ns) {
      parent = &h;
      parent_index = i;
    }
  }
  if (parent != nullptr) program = Program(parent_index, depth + 1);
  return program;
}

ClockId& NodeNamer::ClockSlot(NodeId node) {
  if (clock_of_node_.size() <= node.value()) clock_of_node_.resize(node.value() + 1, ClockId());
  return clock_of_node_[node.value()];
}

}  // namespace weft::reconcile
