// The convolution algorithm, Project 5 §5.2 and Figure 6. The search makes a vertex per
// (node, spike), as Figure 6 does; a last pass merges sibling vertices of one node into
// one vertex whose edge carries the set of delays, as Figure 9 draws it.
#include "infer/convolution/convolution.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>

#include "infer/convolution/correlator.h"
#include "paths/path_set_builder.h"

namespace weft {
namespace {

using convolution_internal::ComplexBuffer;
using convolution_internal::Correlator;

struct EdgeMessage {
  MessageId message;
  TimeNs delay = 0;  // its send time minus the arrival it was matched with
};

// One O_n of Figure 6: messages to `node` caused at one spike.
struct CausedSet {
  NodeId node;
  TimeNs spike_delay = 0;  // lag x mu
  std::vector<EdgeMessage> messages;
};

TimeNs Median(std::vector<TimeNs>& v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + ptrdiff_t(v.size() / 2), v.end());
  return v[v.size() / 2];
}

class ConvolutionSearch {
 public:
  ConvolutionSearch(const Trace& trace, const ConvolutionOptions& options, Correlator& correlator,
                    uint64_t cache_budget)
      : trace_(trace), o_(options), correlator_(correlator), cache_budget_(cache_budget) {
    const TraceColumns& c = trace.columns();
    size_t nodes = trace.nodes().size();
    sent_.resize(nodes);
    received_.assign(nodes, 0);
    for (uint32_t i = 0; i < trace.size(); ++i) {
      if (c.sender[i].valid()) sent_[c.sender[i].value()].push_back(MessageId(i));
      if (c.receiver[i].valid()) ++received_[c.receiver[i].value()];
    }
    // Trace order is SortTime, the send time when there is one; keep each list in send
    // time order for the matching in FindCausedMessages.
    for (auto& list : sent_) {
      std::stable_sort(list.begin(), list.end(),
                       [&](MessageId a, MessageId b) { return SendTime(a) < SendTime(b); });
    }
    sent_times_.resize(nodes);
    for (size_t n = 0; n < nodes; ++n) {
      for (MessageId m : sent_[n]) sent_times_[n].push_back(SendTime(m));
    }
    match_stamp_of_.assign(trace.size(), 0);
    best_delay_.assign(trace.size(), 0);
    spectrum_.resize(nodes);
    on_path_.assign(trace.size(), 0);
    reached_.assign(trace.size(), -1);
    claimed_.assign(trace.size(), 0);
    duration_ = std::max<TimeNs>(trace.EndTime() - trace.StartTime(), 0) + correlator.quantum();
    graph_.quantum = correlator.quantum();
  }

  TimeNs SendTime(MessageId m) const {
    TimeNs s = trace_.columns().send_time[m.value()];
    return s != kNoTime ? s : trace_.columns().recv_time[m.value()];
  }
  TimeNs ArrivalTime(MessageId m) const {
    TimeNs r = trace_.columns().recv_time[m.value()];
    return r != kNoTime ? r : trace_.columns().send_time[m.value()];
  }
  size_t SentCount(NodeId n) const { return sent_[n.value()].size(); }
  size_t ReceivedCount(NodeId n) const { return received_[n.value()]; }

  // Figure 6 FindPathsFromRoot(i), over the messages of `i` not yet explained when
  // `only_unexplained` (a root found in a later round).
  Status FindPathsFromRoot(NodeId i, bool only_unexplained) {
    std::vector<MessageId> messages;
    for (MessageId m : sent_[i.value()]) {
      if (!only_unexplained || reached_[m.value()] < 0) messages.push_back(m);
    }
    if (messages.empty()) return Status::Ok();
    int32_t root = AddVertex(i, -1, messages.size(), {});
    ++roots_;
    // Line 4: one edge per destination j, each followed by ProcessNode.
    std::vector<NodeId> destinations;
    for (MessageId m : messages) destinations.push_back(trace_.columns().receiver[m.value()]);
    std::sort(destinations.begin(), destinations.end());
    destinations.erase(std::unique(destinations.begin(), destinations.end()), destinations.end());
    for (NodeId j : destinations) {
      std::vector<EdgeMessage> v;
      for (MessageId m : messages) {
        if (trace_.columns().receiver[m.value()] == j) v.push_back({m, 0});
      }
      if (v.size() < o_.min_messages) {
        ++low_frequency_;
        continue;
      }
      int32_t x = AddVertex(j, root, v.size(), {});
      WEFT_RETURN_IF_ERROR(ProcessNode(j, x, v, 1));
    }
    return Status::Ok();
  }

  CausalGraph TakeGraph() { return std::move(graph_); }
  int64_t roots() const { return roots_; }
  int64_t correlations() const { return correlations_; }
  int64_t short_paths() const { return short_paths_; }
  int64_t low_frequency() const { return low_frequency_; }
  int64_t cycles_cut() const { return cycles_cut_; }
  int64_t Explained() const {
    int64_t n = 0;
    for (int32_t r : reached_) n += r >= 0;
    return n;
  }
  bool Reached(MessageId m) const { return reached_[m.value()] >= 0; }

 private:
  int32_t AddVertex(NodeId node, int32_t parent, uint64_t messages,
                    std::vector<CausalDelay> delays) {
    graph_.vertices.push_back({node, parent, messages, std::move(delays)});
    return int32_t(graph_.vertices.size() - 1);
  }

  // Figure 6 ProcessNode(j, x_j, V). `v` holds the messages of the edge into x_j.
  Status ProcessNode(NodeId j, int32_t xj, const std::vector<EdgeMessage>& v, int depth) {
    for (const EdgeMessage& e : v) {
      reached_[e.message.value()] = xj;
      ++on_path_[e.message.value()];
    }
    Status status = Status::Ok();
    if (depth >= o_.max_depth) {
      ++cycles_cut_;
    } else {
      status = ProcessCaused(j, xj, v, depth);
    }
    for (const EdgeMessage& e : v) --on_path_[e.message.value()];
    return status;
  }

  Status ProcessCaused(NodeId j, int32_t xj, const std::vector<EdgeMessage>& v, int depth) {
    std::vector<CausedSet> caused = FindCausedMessages(j, v);
    // Shortest delay first: the first hop of a long path precedes any shortcut to its
    // later hops, so by the time a shortcut x_j -> y is considered the longer path below
    // x_j has claimed its messages (§5.2.3, accidentally short paths).
    std::stable_sort(caused.begin(), caused.end(), [](const CausedSet& a, const CausedSet& b) {
      return a.spike_delay < b.spike_delay;
    });
    for (CausedSet& set : caused) {
      if (o_.suppress_short_paths) {
        size_t before = set.messages.size();
        std::erase_if(set.messages,
                      [&](const EdgeMessage& e) { return reached_[e.message.value()] > xj; });
        if (set.messages.size() < before && set.messages.size() < o_.min_messages) {
          ++short_paths_;
          continue;
        }
      }
      if (set.messages.size() < o_.min_messages) continue;
      std::vector<TimeNs> delays;
      for (const EdgeMessage& e : set.messages) delays.push_back(e.delay);
      CausalDelay delay{Median(delays), set.messages.size()};
      int32_t xk = AddVertex(set.node, xj, set.messages.size(), {delay});
      WEFT_RETURN_IF_ERROR(ProcessNode(set.node, xk, set.messages, depth + 1));
    }
    return Status::Ok();
  }

  // Figure 6 FindCausedMessages(V, Z) with Z the messages sent by j.
  std::vector<CausedSet> FindCausedMessages(NodeId j, const std::vector<EdgeMessage>& v) {
    std::vector<CausedSet> out;
    const std::vector<MessageId>& z = sent_[j.value()];
    if (z.empty() || v.empty()) return out;
    std::vector<TimeNs> arrivals;
    arrivals.reserve(v.size());
    for (const EdgeMessage& e : v) arrivals.push_back(ArrivalTime(e.message));
    std::sort(arrivals.begin(), arrivals.end());
    // FindCorrelation (lines 28-31).
    if (!first_) first_ = correlator_.NewSpectrum();
    correlator_.Spectrum(arrivals, first_.get());
    // The spectrum of s2 is kept per sending node while the memory limit allows (every
    // vertex of that node reuses it); past the limit it is recomputed into scratch.
    const fftw_complex* second = spectrum_[j.value()].get();
    if (!second) {
      uint64_t bytes = sizeof(fftw_complex) * correlator_.spectrum_size();
      ComplexBuffer* slot = &second_;
      if (cache_budget_ >= bytes) {
        cache_budget_ -= bytes;
        slot = &spectrum_[j.value()];
      }
      if (!*slot) *slot = correlator_.NewSpectrum();
      correlator_.Spectrum(sent_times_[j.value()], slot->get());
      second = slot->get();
    }
    correlator_.Correlate(first_.get(), second, correlation_);
    ++correlations_;
    std::vector<uint32_t> spikes = FindSpikes(correlation_, o_.spike_sigmas, o_.separation_sigmas);
    if (spikes.empty()) return out;

    // How many of j's messages go to each node: the chance level of a spike's window.
    const TraceColumns& c = trace_.columns();
    absl::flat_hash_map<NodeId, uint64_t> to_node;
    for (MessageId m : z) ++to_node[c.receiver[m.value()]];

    ++stamp_;
    TimeNs mu = correlator_.quantum();
    for (uint32_t lag : spikes) {
      // Lines 22-23: messages of Z sent d +/- v after some arrival in V; the bin of a
      // spike at lag d holds delays in ((d-1) mu, (d+1) mu), hence the extra quantum.
      // Negative delays are never matched: a message sent before the arrival cannot be
      // caused by it (§5.2.3).
      TimeNs d = TimeNs(lag) * mu;
      TimeNs lo = std::max<TimeNs>(0, d - mu - o_.tolerance);
      TimeNs hi = d + mu + o_.tolerance;
      absl::flat_hash_map<NodeId, size_t> index;  // node -> position in `sets`
      std::vector<CausedSet> sets;
      // From each arrival, the sends of j in its window (binary search in j's send
      // times): O(|V| log |Z|) plus the matches, since V is mostly far smaller than Z.
      // Each send keeps the arrival whose delay is closest to d.
      const std::vector<TimeNs>& times = sent_times_[j.value()];
      ++match_stamp_;
      touched_.clear();
      for (TimeNs a : arrivals) {
        size_t first = size_t(std::lower_bound(times.begin(), times.end(), a + lo) - times.begin());
        for (size_t i = first; i < times.size() && times[i] <= a + hi; ++i) {
          uint32_t m = z[i].value();
          if (claimed_[m] == stamp_ || on_path_[m] > 0) continue;  // on_path_: cycles
          TimeNs delay = times[i] - a;
          if (match_stamp_of_[m] != match_stamp_) {
            match_stamp_of_[m] = match_stamp_;
            best_delay_[m] = delay;
            touched_.push_back(uint32_t(i));
          } else if (std::abs(delay - d) < std::abs(best_delay_[m] - d)) {
            best_delay_[m] = delay;
          }
        }
      }
      std::sort(touched_.begin(), touched_.end());  // send order: deterministic output
      for (uint32_t i : touched_) {
        MessageId m = z[i];
        NodeId k = c.receiver[m.value()];
        auto [pos, fresh] = index.try_emplace(k, sets.size());
        if (fresh) sets.push_back({k, d, {}});
        sets[pos->second].messages.push_back({m, best_delay_[m.value()]});
      }
      for (CausedSet& set : sets) {
        // Low-frequency paths (§5.2.3): as many messages as chance alone would put in a
        // window of this width are no evidence of causality.
        // Low-frequency and chance paths (§5.2.3): a message of j to k falls in some
        // arrival's window by chance with probability p = 1 - exp(-|V| window / duration)
        // (arrivals spread uniformly, Poisson). Keep the set only if it beats that
        // binomial expectation by spike_sigmas of its standard deviation.
        double window = double(hi - lo + 1);
        double p = -std::expm1(-double(v.size()) * window / double(duration_));
        double expected = double(to_node[set.node]) * p;
        double excess = double(set.messages.size()) - expected;
        if (set.messages.size() < o_.min_messages ||
            excess < o_.spike_sigmas * std::sqrt(expected * (1 - p))) {
          ++low_frequency_;
          continue;
        }
        for (const EdgeMessage& e : set.messages) claimed_[e.message.value()] = stamp_;
        out.push_back(std::move(set));
      }
    }
    return out;
  }

  const Trace& trace_;
  const ConvolutionOptions& o_;
  Correlator& correlator_;
  TimeNs duration_ = 1;
  std::vector<std::vector<MessageId>> sent_;  // per node, by send time
  std::vector<uint64_t> received_;            // per node
  std::vector<ComplexBuffer> spectrum_;       // per node: spectrum of all it sent (s2)
  ComplexBuffer first_;                       // scratch: spectrum of V (s1)
  ComplexBuffer second_;                      // scratch: s2's spectrum when not cached
  uint64_t cache_budget_ = 0;                 // bytes left for spectrum_
  std::vector<double> correlation_;
  std::vector<uint32_t> on_path_;  // per message: ancestors of the current vertex using it
  std::vector<int32_t> reached_;   // per message: the latest vertex whose edge holds it
  std::vector<uint32_t> claimed_;  // per message: stamp of the FindCausedMessages using it
  uint32_t stamp_ = 0;
  std::vector<std::vector<TimeNs>> sent_times_;  // per node: send times of sent_
  // Scratch of the matching in FindCausedMessages, per message, valid where
  // match_stamp_of_ equals match_stamp_.
  std::vector<uint32_t> match_stamp_of_;
  std::vector<TimeNs> best_delay_;
  std::vector<uint32_t> touched_;
  uint32_t match_stamp_ = 0;
  CausalGraph graph_;
  int64_t roots_ = 0, correlations_ = 0, short_paths_ = 0, low_frequency_ = 0, cycles_cut_ = 0;
};

// Figure 9: sibling vertices of one node become one vertex whose edge has the set of
// delays, most frequent first; their children are merged the same way, recursively.
CausalGraph MergeSiblings(const CausalGraph& in) {
  size_t n = in.vertices.size();
  std::vector<std::vector<int32_t>> children(n);
  std::vector<int32_t> roots;
  for (size_t i = 0; i < n; ++i) {
    int32_t p = in.vertices[i].parent;
    (p < 0 ? roots : children[size_t(p)]).push_back(int32_t(i));
  }
  CausalGraph out;
  out.quantum = in.quantum;
  // Merges the group `group` (vertices of one node under one merged parent) into one.
  auto merge = [&](auto& self, const std::vector<int32_t>& group, int32_t parent) -> void {
    CausalVertex v;
    v.node = in.vertices[size_t(group[0])].node;
    v.parent = parent;
    for (int32_t g : group) {
      const CausalVertex& src = in.vertices[size_t(g)];
      v.messages += src.messages;
      for (const CausalDelay& d : src.delays) {
        auto same = std::find_if(v.delays.begin(), v.delays.end(), [&](const CausalDelay& e) {
          return std::abs(e.delay - d.delay) < in.quantum;
        });
        if (same == v.delays.end()) {
          v.delays.push_back(d);
        } else {
          if (d.count > same->count) same->delay = d.delay;
          same->count += d.count;
        }
      }
    }
    std::stable_sort(v.delays.begin(), v.delays.end(),
                     [](const CausalDelay& a, const CausalDelay& b) { return a.count > b.count; });
    int32_t index = int32_t(out.vertices.size());
    out.vertices.push_back(std::move(v));
    std::vector<std::vector<int32_t>> groups;
    for (int32_t g : group) {
      for (int32_t c : children[size_t(g)]) {
        auto it = std::find_if(groups.begin(), groups.end(), [&](const std::vector<int32_t>& x) {
          return in.vertices[size_t(x[0])].node == in.vertices[size_t(c)].node;
        });
        if (it == groups.end()) {
          groups.push_back({c});
        } else {
          it->push_back(c);
        }
      }
    }
    for (const auto& child_group : groups) self(self, child_group, index);
  };
  for (int32_t r : roots) merge(merge, {r}, -1);
  return out;
}

std::vector<NodeId> AutomaticRoots(const Trace& trace, const ConvolutionSearch& search) {
  std::vector<NodeId> roots;
  size_t nodes = trace.nodes().size();
  for (uint32_t n = 0; n < nodes; ++n) {
    if (search.SentCount(NodeId(n)) > 0 && search.ReceivedCount(NodeId(n)) == 0)
      roots.push_back(NodeId(n));
  }
  if (!roots.empty()) return roots;
  // Every node receives (an RPC system: clients get replies): the nodes that send calls
  // but receive none.
  const TraceColumns& c = trace.columns();
  std::vector<bool> sends_call(nodes), receives_call(nodes);
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] != MessageKind::kCall) continue;
    if (c.sender[i].valid()) sends_call[c.sender[i].value()] = true;
    if (c.receiver[i].valid()) receives_call[c.receiver[i].value()] = true;
  }
  for (uint32_t n = 0; n < nodes; ++n) {
    if (sends_call[n] && !receives_call[n]) roots.push_back(NodeId(n));
  }
  if (roots.empty() && !trace.empty()) roots.push_back(c.sender[0]);  // the first sender
  return roots;
}

int FftThreads(const ConvolutionOptions& options) {
  if (options.fft_threads > 0) return options.fft_threads;
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

uint64_t ConvolutionSignalBytes(TimeNs duration, const ConvolutionOptions& options) {
  if (options.quantum <= 0) return 0;
  return Correlator::BytesNeeded(0, std::max<TimeNs>(duration, 0), options.quantum,
                                 options.max_delay);
}

Result<ConvolutionInference> InferConvolution(const Trace& trace,
                                              const ConvolutionOptions& options) {
  if (options.quantum <= 0)
    return Status::InvalidArgument("convolution: the quantum must be positive");
  if (!(options.separation_sigmas < options.spike_sigmas)) {
    return Status::InvalidArgument(
        "convolution: the separation ({}) must be below the spike threshold ({})",
        options.separation_sigmas, options.spike_sigmas);
  }
  if (options.tolerance < 0 || options.max_delay < 0) {
    return Status::InvalidArgument("convolution: tolerance and max delay must not be negative");
  }
  if (options.max_depth < 1)
    return Status::InvalidArgument("convolution: max depth must be at least 1");
  if (options.fft_threads < 0)
    return Status::InvalidArgument("convolution: FFT threads must not be negative");
  PathSetBuilder builder(trace, "convolution");
  ConvolutionInference result{std::move(builder).Finish(), {}, {}};
  result.graph.quantum = options.quantum;
  if (trace.empty()) return result;
  WEFT_ASSIGN_OR_RETURN(
      std::unique_ptr<Correlator> correlator,
      Correlator::Create(trace.StartTime(), trace.EndTime(), options.quantum, options.max_delay,
                         options.max_signal_bytes, FftThreads(options)));
  // Correlator::Create checked its own buffers against the limit; what is left caches
  // the spectra of sending nodes.
  uint64_t base = Correlator::BytesNeeded(trace.StartTime(), trace.EndTime(), options.quantum,
                                          options.max_delay);
  ConvolutionSearch search(trace, options, *correlator,
                           options.max_signal_bytes > base ? options.max_signal_bytes - base : 0);

  std::vector<NodeId> roots;
  bool automatic = options.roots.empty();
  for (const std::string& name : options.roots) {
    NodeId id = trace.nodes().Find(name);
    if (!id.valid())
      return Status::NotFound("convolution: root node '{}' is not in the trace", name);
    roots.push_back(id);
  }
  if (automatic) roots = AutomaticRoots(trace, search);
  std::vector<bool> is_root(trace.nodes().size());
  for (NodeId r : roots) {
    is_root[r.value()] = true;
    WEFT_RETURN_IF_ERROR(search.FindPathsFromRoot(r, false));
  }
  // "Nodes that send but are not caused": with automatic roots, a node most of whose
  // messages the graph so far does not explain becomes a root for those messages.
  while (automatic) {
    std::vector<NodeId> more;
    std::vector<size_t> unexplained(trace.nodes().size());
    for (uint32_t i = 0; i < trace.size(); ++i) {
      NodeId sender = trace.columns().sender[i];
      if (sender.valid() && !search.Reached(MessageId(i))) ++unexplained[sender.value()];
    }
    for (uint32_t n = 0; n < trace.nodes().size(); ++n) {
      if (is_root[n] || search.SentCount(NodeId(n)) == 0) continue;
      if (unexplained[n] >= options.min_messages &&
          2 * unexplained[n] > search.SentCount(NodeId(n))) {
        more.push_back(NodeId(n));
      }
    }
    if (more.empty()) break;
    for (NodeId r : more) {
      is_root[r.value()] = true;
      WEFT_RETURN_IF_ERROR(search.FindPathsFromRoot(r, true));
    }
  }

  int64_t explained = search.Explained();
  result.graph = MergeSiblings(search.TakeGraph());
  result.graph.quantum = options.quantum;
  int64_t edges = 0;
  for (const CausalVertex& v : result.graph.vertices) edges += v.parent >= 0;
  result.counters = {.roots = search.roots(),
                     .vertices = int64_t(result.graph.vertices.size()),
                     .edges = edges,
                     .correlations = search.correlations(),
                     .fft_size = int64_t(correlator->fft_size()),
                     .messages_explained = explained,
                     .short_paths_suppressed = search.short_paths(),
                     .low_frequency_suppressed = search.low_frequency(),
                     .cycles_cut = search.cycles_cut()};
  return result;
}

}  // namespace weft
