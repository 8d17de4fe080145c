// Message boundaries of one direction of a connection; see message_splitter.h.
#include "reconcile/message_splitter.h"

#include <algorithm>

namespace weft::reconcile {
namespace {

// `end`'s boundaries in its sending (`send`) or receiving direction, sorted, one per offset.
std::vector<const StreamBoundary*> BoundariesOf(const ConnectionEnd& end, bool send) {
  std::vector<const StreamBoundary*> out;
  for (const StreamBoundary& b : end.boundaries) {
    if (b.send == send && b.offset > 0) out.push_back(&b);
  }
  std::stable_sort(out.begin(), out.end(), [](const StreamBoundary* a, const StreamBoundary* b) {
    return a->offset < b->offset;
  });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const StreamBoundary* a, const StreamBoundary* b) {
                          return a->offset == b->offset;
                        }),
            out.end());
  return out;
}

}  // namespace

std::vector<const StreamBoundary*> DirectionBoundaries(const ConnectionEnd* sender,
                                                       const ConnectionEnd* receiver) {
  if (sender != nullptr) {
    std::vector<const StreamBoundary*> sent = BoundariesOf(*sender, true);
    if (!sent.empty()) return sent;
  }
  if (receiver != nullptr) return BoundariesOf(*receiver, false);
  return {};
}

std::vector<MessageSpan> SplitMessages(const ConnectionEnd& definer, bool sends,
                                       std::span<const StreamBoundary* const> boundaries) {
  // The direction's calls with the offset each starts at, and the cut points: every
  // boundary inside the bytes moved, then the ends of runs after the last boundary.
  struct Call {
    size_t index;
    int64_t begin;
    size_t run;
  };
  std::vector<Call> calls;
  std::vector<int64_t> run_ends;
  int64_t offset = 0;
  bool in_run = false;
  for (size_t i = 0; i < definer.io.size(); ++i) {
    const StreamIo& io = definer.io[i];
    if (io.send != sends) {
      if (in_run) run_ends.push_back(offset);
      in_run = false;
      continue;
    }
    calls.push_back({i, offset, run_ends.size()});
    offset += io.bytes;
    in_run = true;
  }
  if (in_run) run_ends.push_back(offset);
  const int64_t total = offset;

  struct Cut {
    int64_t offset;
    const StreamBoundary* boundary;
  };
  std::vector<Cut> cuts;
  int64_t last_boundary = 0;
  for (const StreamBoundary* b : boundaries) {
    if (b->offset <= last_boundary || b->offset > total) continue;
    cuts.push_back({b->offset, b});
    last_boundary = b->offset;
  }
  for (int64_t run_end : run_ends) {
    if (run_end > last_boundary) cuts.push_back({run_end, nullptr});
  }

  std::vector<MessageSpan> spans;
  spans.reserve(cuts.size());
  size_t call = 0;  // the call holding the byte looked for; offsets only rise
  auto holding = [&](int64_t byte) {
    while (call + 1 < calls.size() && calls[call + 1].begin <= byte) ++call;
    return call;
  };
  int64_t begin = 0;
  for (const Cut& cut : cuts) {
    MessageSpan span;
    size_t first = holding(begin);
    span.first = calls[first].index;
    span.first_begin = calls[first].begin;
    span.run = calls[first].run;
    span.last = calls[holding(cut.offset - 1)].index;
    span.begin = begin;
    span.end = cut.offset;
    span.boundary = cut.boundary;
    spans.push_back(span);
    begin = cut.offset;
  }
  return spans;
}

const StreamIo* ReadCursor::ReadHolding(int64_t offset) {
  if (end_ == nullptr) return nullptr;
  while (index_ < end_->io.size()) {
    const StreamIo& io = end_->io[index_];
    if (!io.send) {
      if (offset < read_ + io.bytes) return &io;
      read_ += io.bytes;
    }
    ++index_;
  }
  return nullptr;
}

}  // namespace weft::reconcile
