#include "eval/align.h"

#include <absl/container/flat_hash_map.h>
#include <fmt/format.h>

#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace weft {
namespace {

// Where a message lies in its direction of its connection: (sender endpoint, receiver
// endpoint, kind, first byte's offset), endpoints numbered in a table both traces share.
using Place = std::tuple<uint32_t, uint32_t, uint8_t, int64_t>;

class Endpoints {
 public:
  // Per endpoint string id of `trace`, its number in the shared table.
  std::vector<uint32_t> Number(const Trace& trace) {
    std::vector<uint32_t> number(trace.strings().size(), UINT32_MAX);
    const TraceColumns& c = trace.columns();
    for (const auto* column : {&c.sender_endpoint, &c.receiver_endpoint}) {
      for (StringId id : *column) {
        if (!id.valid() || number[id.value()] != UINT32_MAX) continue;
        auto [it, inserted] =
            table_.try_emplace(std::string(trace.strings().Get(id)), uint32_t(table_.size()));
        number[id.value()] = it->second;
      }
    }
    return number;
  }

 private:
  absl::flat_hash_map<std::string, uint32_t> table_;
};

// Each message's place and size, in time order. Messages of unknown size end the count of
// their direction: later ones get no place.
absl::flat_hash_map<Place, std::pair<uint32_t, int64_t>> Places(const Trace& trace,
                                                                Endpoints& endpoints) {
  const TraceColumns& c = trace.columns();
  const std::vector<uint32_t> number = endpoints.Number(trace);
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, int64_t> offset;  // bytes so far per direction
  absl::flat_hash_map<Place, std::pair<uint32_t, int64_t>> places;
  places.reserve(trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    if (!c.sender_endpoint[i].valid() || !c.receiver_endpoint[i].valid()) continue;
    const uint32_t from = number[c.sender_endpoint[i].value()],
                   to = number[c.receiver_endpoint[i].value()];
    int64_t& at = offset[{from, to}];
    if (at < 0) continue;
    if (c.bytes[i] < 0) {
      at = -1;
      continue;
    }
    places[{from, to, uint8_t(c.kind[i]), at}] = {uint32_t(i), c.bytes[i]};
    at += c.bytes[i];
  }
  return places;
}

}  // namespace

std::string AlignSummary::OneLine() const {
  return fmt::format(
      "{} of {} truth messages found among {} reconciled ones; {} of {} requests labelled", matched,
      truth_messages, run_messages, labelled, requests);
}

Result<Trace> CopyTruth(const Trace& truth, const Trace& run, AlignSummary* summary) {
  if (!truth.HasTruth())
    return Status::InvalidArgument("the truth trace has no ground truth (no path ids)");
  AlignSummary s;
  s.truth_messages = truth.size();
  s.run_messages = run.size();
  // Truth message -> run message.
  std::vector<uint32_t> counterpart(truth.size(), UINT32_MAX);
  {
    Endpoints endpoints;
    auto run_places = Places(run, endpoints);
    for (const auto& [place, where] : Places(truth, endpoints)) {
      auto it = run_places.find(place);
      if (it == run_places.end() || it->second.second != where.second) continue;
      counterpart[where.first] = it->second.first;
      ++s.matched;
    }
  }
  if (s.matched == 0 && !truth.empty()) {
    return Status::InvalidArgument(
        "no truth message has a counterpart in the run (are they of the same run? does the run "
        "name endpoints?)");
  }
  // A request is labelled when all its messages have counterparts.
  const TraceColumns& t = truth.columns();
  absl::flat_hash_map<PathId, bool> complete;
  for (size_t i = 0; i < truth.size(); ++i) {
    if (!t.truth_path[i].valid()) continue;
    auto [it, inserted] = complete.try_emplace(t.truth_path[i], true);
    it->second = it->second && counterpart[i] != UINT32_MAX;
  }
  TraceColumns columns = run.columns();
  std::fill(columns.truth_path.begin(), columns.truth_path.end(), PathId());
  std::fill(columns.truth_parent.begin(), columns.truth_parent.end(), MessageId());
  for (size_t i = 0; i < truth.size(); ++i) {
    if (!t.truth_path[i].valid() || !complete[t.truth_path[i]]) continue;
    columns.truth_path[counterpart[i]] = t.truth_path[i];
    MessageId parent = t.truth_parent[i];
    if (parent.valid())
      columns.truth_parent[counterpart[i]] = MessageId(counterpart[parent.value()]);
  }
  s.requests = complete.size();
  for (const auto& [path, all] : complete) s.labelled += all;
  if (summary) *summary = s;
  std::vector<Attribute> attributes(run.attributes().begin(), run.attributes().end());
  std::vector<ProcessLink> links(run.process_links().begin(), run.process_links().end());
  return Trace::FromParts(run.nodes(), run.strings(), std::move(columns), std::move(attributes),
                          std::move(links));
}

}  // namespace weft
