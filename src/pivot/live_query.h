// One query installed in this process (Pivot Tracing §5, "Materializing Advice"): its
// compiled advice, woven into this process's tracepoints, and the partial aggregates its
// EMIT produced, collected per interval.
//
// The firing thread runs the advice itself (query/runner.h) on its current baggage
// (pivot/current_baggage.h) and aggregates what the root emits into a buffer of its own for this
// query. The agent harvests the buffers at each interval's end: it swaps each buffer's
// groups out under the buffer's mutex, and a firing thread that finds that mutex taken
// (a harvest in progress) drops its tuple and counts it rather than wait. A buffer holds
// at most kMaxGroupsPerThread groups; tuples of further groups are dropped and counted.
// A thread's first firing of the query makes its buffer and pushes it on the query's
// list with a compare-and-swap, so registering never waits either. Strings the advice
// packs or emits are interned (interner.h), since the tracepoint's arguments are views.
//
// Every process compiles a query against the same catalog (InstallMessage::catalog), so
// its units, and baggage slots slot_base() .. slot_base() + slots(), are the same in
// every process; the firing tracepoint's arguments are matched to the catalog's exports
// by name, so a process whose tracepoint exports fewer variables observes nulls.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "pivot/partials.h"
#include "pivot/protocol.h"
#include "query/query.h"

namespace weft::pivot {

inline constexpr size_t kMaxGroupsPerThread = 10'000;

class LiveQuery : public std::enable_shared_from_this<LiveQuery> {
 public:
  // Compiles `install.text` against install.catalog, with this process's registered
  // tracepoints that the catalog lacks appended. Does not weave.
  static Result<std::shared_ptr<LiveQuery>> Make(const InstallMessage& install);
  ~LiveQuery();

  const std::string& id() const { return id_; }
  const std::string& text() const { return text_; }
  uint32_t slot_base() const { return slot_base_; }
  uint32_t slots() const;
  int64_t interval_ns() const { return interval_ns_; }
  const query::CompiledQuery& compiled() const { return *compiled_; }
  // The result columns, as PartialResults carries them.
  const std::vector<ResultColumn>& columns() const { return columns_; }

  // Weaves the advice into every tracepoint of this process that it names (now and
  // constructed later); whether any of them is registered now.
  bool Weave();
  // Removes the advice; when it returns, no thread runs it any more.
  void Unweave();
  bool woven() const { return !weaves_.empty(); }

  struct Harvest {
    PartialGroups groups;
    uint64_t events = 0;  // firings that ran the advice
    uint64_t drops = 0;   // tuples lost
  };
  // What the advice emitted since the last harvest, merged over threads.
  Harvest TakeHarvest();

  // One thread's buffer (internal to live_query.cc; public for its hook).
  struct ThreadBuffer {
    std::mutex mu;
    PartialGroups groups;
    std::atomic<uint64_t> events{0};
    std::atomic<uint64_t> drops{0};
    explicit ThreadBuffer(size_t aggregates) : groups(aggregates, kMaxGroupsPerThread) {}
  };
  // A new buffer for the calling thread, pushed on the query's list without a lock.
  // Buffers stay on the list until the query is destroyed (a thread that exited leaves
  // an empty one behind), so the list is as long as the threads that ever fired it.
  ThreadBuffer* RegisterThread();

  // In a forked child (the agent's pthread_atfork handler, with the child's one thread):
  // forgets what the buffers held at the fork (the parent harvests it), and from now on
  // hands what each firing emits to the parent agent through `pipe` (a non-blocking
  // pipe's write end), one record per firing; a record that does not fit is counted in
  // `*refused` (shared with the parent). The child never waits: it dies with _exit, by a
  // signal, or lives for milliseconds, and has no agent thread.
  void EnterForkChild(int pipe, std::atomic<uint64_t>* refused);
  // In the parent agent: a record a child wrote (see agent.cc), added to this interval.
  void AddFromChild(const PartialResults& record);

 private:
  void SendToParent(ThreadBuffer& buffer);

  LiveQuery() = default;

  std::string id_, text_;
  uint32_t slot_base_ = 0;
  int64_t interval_ns_ = 0;
  std::shared_ptr<const query::CompiledQuery> compiled_;
  std::vector<ResultColumn> columns_;
  std::vector<uint64_t> weaves_;

  struct BufferNode {
    ThreadBuffer buffer;
    BufferNode* next = nullptr;
    explicit BufferNode(size_t aggregates) : buffer(aggregates) {}
  };
  std::atomic<BufferNode*> buffers_{nullptr};
  std::atomic<bool> unwoven_{false};
  int fork_pipe_ = -1;  // set in a forked child only
  std::atomic<uint64_t>* fork_refused_ = nullptr;
  std::mutex children_mu_;  // the parent's buffer for its children's records
  ThreadBuffer* children_ = nullptr;
  friend class LiveHook;
};

}  // namespace weft::pivot
