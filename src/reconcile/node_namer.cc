// Node names and clocks (node_namer.h).
#include "reconcile/node_namer.h"

#include <fmt/format.h>

#include <string_view>

namespace weft::reconcile {
namespace {

// The basename of the log's executable.
std::string ProgramName(const capture::EventLog& log) {
  std::string_view exe = log.header.executable;
  size_t slash = exe.rfind('/');
  return std::string(slash == std::string_view::npos ? exe : exe.substr(slash + 1));
}

}  // namespace

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
  std::string name = log.header.host + ":" + (process.empty() ? ProgramName(log) : process);
  if (naming_ == NodeNaming::kProcess) name += fmt::format("[{}]", log.header.pid);
  if (naming_ == NodeNaming::kThread) name += fmt::format("[{}/{}]", log.header.pid, tid);
  return builder_.Node(name);
}

ClockId& NodeNamer::ClockSlot(NodeId node) {
  if (clock_of_node_.size() <= node.value()) clock_of_node_.resize(node.value() + 1, ClockId());
  return clock_of_node_[node.value()];
}

}  // namespace weft::reconcile
