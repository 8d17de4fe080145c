// The messages between `weft pivot` front ends and agents (Pivot Tracing §2.2 Figure 2,
// §5 "Pivot Tracing Agent"), all in one place. Each is one JSON object with "type" and
// "v" (the protocol version, kProtocolVersion); a decoder refuses another version.
//
//   subject                      type        from        payload
//   weft.pivot.control.install   install     front end   InstallMessage
//   weft.pivot.control.uninstall uninstall   front end   UninstallMessage
//   weft.pivot.control.list      list        front end   ListRequest
//   ListRequest::reply_to        agent       agent       AgentDescription
//   weft.pivot.results.<id>      partials    agent       PartialResults
//
// Values travel typed: null, a JSON integer (int), a JSON number with a fraction or
// exponent (float; a non-finite one as {"f":"nan"|"inf"|"-inf"}), a JSON string.
//
// Agents read messages from anyone on the bus: a decoder never trusts its input. It
// returns an error for anything malformed, out of bounds or of another version, and the
// agent counts it and goes on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "pivot/partials.h"
#include "query/execution.h"

namespace weft::pivot {

inline constexpr int kProtocolVersion = 1;

inline constexpr std::string_view kInstallSubject = "weft.pivot.control.install";
inline constexpr std::string_view kUninstallSubject = "weft.pivot.control.uninstall";
inline constexpr std::string_view kListSubject = "weft.pivot.control.list";
inline constexpr std::string_view kControlPattern = "weft.pivot.control.>";
inline constexpr std::string_view kReplyPrefix = "weft.pivot.reply.";  // ListRequest::reply_to
// "weft.pivot.results.<id>"
std::string ResultsSubject(std::string_view query_id);

// Bounds a decoder enforces.
inline constexpr size_t kMaxQueryText = 1 << 20;
inline constexpr uint32_t kMaxSlotBase = 1 << 20;
inline constexpr int64_t kMinInterval = 1'000'000;          // 1 ms
inline constexpr int64_t kMaxInterval = 3'600'000'000'000;  // 1 h
inline constexpr size_t kMaxCatalog = 100'000;              // tracepoints in a message

// A query id: 1 to 64 of [A-Za-z0-9_-], so that it is one subject token.
bool ValidQueryId(std::string_view id);

struct InstallMessage {
  std::string id;
  std::string text;        // the query, as the user wrote it
  uint32_t slot_base = 0;  // the query's first baggage slot, the same in every process
  int64_t interval_ns = 1'000'000'000;
  bool optimize = true;
  // The tracepoints the front end compiled against (every live process's, by name);
  // agents compile against the same list so that every process has the same units.
  std::vector<query::Tracepoint> catalog;
};

struct UninstallMessage {
  std::string id;
};

struct ListRequest {
  std::string reply_to;  // starts with kReplyPrefix
};

struct InstalledQueryInfo {
  std::string id;
  std::string text;
  uint32_t slot_base = 0;
  uint32_t slots = 0;  // baggage slots it uses
  bool woven = false;  // has advice in this process
  std::string error;   // why it could not be compiled here
};

// Losses an agent counts besides the tuples of one interval (PartialResults::drops).
struct AgentDrops {
  // Partial results not published because the bus was not connected (they would have
  // arrived after their interval was shown): a whole interval of this process's tuples.
  uint64_t partials = 0;
  // Messages the agent's bus dropped (queue full, lost with a connection).
  uint64_t bus = 0;
  // Strings live advice kept that became null because the interner was full (interner.h).
  uint64_t interned = 0;
  // Groups a forked child emitted and could not hand to this agent (its pipe was full).
  uint64_t children = 0;

  bool any() const { return partials + bus + interned + children > 0; }
};

struct AgentDescription {
  int64_t pid = 0;
  std::string host;
  std::vector<query::Tracepoint> tracepoints;
  std::vector<InstalledQueryInfo> queries;
  AgentDrops lost;  // since the agent started
};

// How a front end turns merged partials into result columns (query/advice.h EmitSpec).
struct ResultColumn {
  std::string name;
  int32_t key = -1;        // shows group key `key` (or, not aggregated, the plain value)
  int32_t aggregate = -1;  // shows aggregate `aggregate` of `op`
  query::AggregateOp op = query::AggregateOp::kCount;
};

struct PartialResults {
  std::string id;
  int64_t pid = 0;
  std::string host;
  int64_t interval_start_ns = 0;  // wall clock; intervals are aligned to multiples of
  int64_t interval_ns = 0;        // interval_ns since the Unix epoch
  bool final = false;             // the last, sent as the query is uninstalled
  bool aggregated = false;
  std::vector<ResultColumn> columns;
  uint64_t events = 0;  // firings that ran this query's advice in the interval
  uint64_t drops = 0;   // tuples lost (busy buffer, too many groups) in the interval
  PartialGroups groups;
  // What this agent lost since the query was installed, counted up to now (so the latest
  // message of an agent has its whole count, and a lost message loses no count). Absent
  // in a message: 0.
  AgentDrops lost;
  // Why the agent refused the query (it did not compile there, or its baggage slots
  // overlap a query installed there first); sent once, final, with no groups. Absent in a
  // message: "".
  std::string refused;
};

std::string EncodeInstall(const InstallMessage& m);
std::string EncodeUninstall(const UninstallMessage& m);
std::string EncodeList(const ListRequest& m);
std::string EncodeAgent(const AgentDescription& m);
std::string EncodePartials(const PartialResults& m);

Result<InstallMessage> DecodeInstall(std::string_view payload);
Result<UninstallMessage> DecodeUninstall(std::string_view payload);
Result<ListRequest> DecodeList(std::string_view payload);
Result<AgentDescription> DecodeAgent(std::string_view payload);
Result<PartialResults> DecodePartials(std::string_view payload);

}  // namespace weft::pivot
