// The convolution algorithm (Project 5 §5.2): a causal graph of a free-form message system
// from (timestamp, sender, receiver) alone, by cross-correlating per-edge signals.
//
//   FindPathsFromRoot   Figure 6  a root vertex and one edge per destination of the root
//   ProcessNode         Figure 6  continues depth-first from a vertex with its messages
//   FindCausedMessages  Figure 6  spikes of the correlation -> messages caused, per node
//   FindCorrelation     §5.2.1    square-root-of-count signals at quantum mu, FFT (FFTW)
//
// weft's designs for what §5.2.3 only names (low-frequency paths, accidentally short paths
// and cycles, negative delays) are described at each option and in docs/convolution.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "paths/causal_graph.h"
#include "paths/inference.h"
#include "trace/trace.h"

namespace weft {

struct ConvolutionOptions {
  // mu (§5.2.1): the width of one signal sample. Delays are found to about this precision.
  TimeNs quantum = 10 * kMillisecond;
  // Spike detection (§5.2): a spike is a local maximum at least spike_sigmas standard
  // deviations above the mean of the correlation; two spikes need a point below
  // separation_sigmas between them. separation_sigmas < spike_sigmas.
  double spike_sigmas = 4.0;
  double separation_sigmas = 3.0;
  // v (§5.2.2): a message counts as caused at spike delay d if it was sent within
  // d +/- (quantum + tolerance) of an arrival. Raise it for nodes with variable delays.
  TimeNs tolerance = 0;
  // Only delays in [0, max_delay] are searched; 0 means half the trace. Shorter makes
  // the FFTs shorter (size about S + max_delay / mu instead of 1.5 S) and the spike
  // statistics more local.
  TimeNs max_delay = 0;
  // Low-frequency paths (§5.2.3): an edge, and each of its delays, needs this many
  // messages; and the messages a spike matches to one node must beat what chance alone
  // would match (a binomial test at spike_sigmas; docs/convolution.md).
  uint64_t min_messages = 10;
  // Depth limit of a path from its root (cycles are also cut by never using one message
  // twice on one path; see docs/convolution.md).
  int max_depth = 32;
  // Accidentally short paths (§5.2.3): a message reached both by a direct edge x -> y and
  // deeper below x through a longer path is kept only on the longer path.
  bool suppress_short_paths = true;
  // Root nodes by name; empty: chosen automatically (nodes that send but receive nothing,
  // else nodes that send calls but receive none; then, in rounds, nodes whose sends the
  // graph so far leaves unexplained).
  std::vector<std::string> roots;
  // The signals and spectra of one correlation must fit in this many bytes; a larger
  // S = duration / quantum is an OutOfRange error that says how much it would need.
  uint64_t max_signal_bytes = uint64_t(4) << 30;
  // Threads of each FFT (FFTW's threads), used only for transforms of at least
  // kThreadedFftSize points; 0: one per hardware thread. Default 1: on the 2-core
  // machine of docs/convolution.md a second thread did not pay (the transforms of
  // 10^6-10^7 points are memory-bound there).
  int fft_threads = 1;
};

inline constexpr uint64_t kThreadedFftSize = uint64_t(1) << 18;

// The FFT size FFTW transforms fastest at or above n: the least 2^a 3^b 5^c 7^d >= n.
uint64_t FastFftSize(uint64_t n);

// Bytes the correlations of a trace of `duration` at these options would take (the
// figure in the OutOfRange error); saturates instead of overflowing.
uint64_t ConvolutionSignalBytes(TimeNs duration, const ConvolutionOptions& options);

// Spikes of a correlation (§5.2): positions of local maxima >= mean + high * sd separated
// by a point below mean + low * sd, highest first. Empty for a flat (sd = 0) input.
std::vector<uint32_t> FindSpikes(const std::vector<double>& correlation, double high, double low);

// What convolution counted: roots, vertices and edges of the graph, correlations
// computed, fft_size, messages_explained, short_paths_suppressed,
// low_frequency_suppressed, cycles_cut (docs/convolution.md).
struct ConvolutionCounters {
  int64_t roots = 0;
  int64_t vertices = 0;
  int64_t edges = 0;
  int64_t correlations = 0;
  int64_t fft_size = 0;
  int64_t messages_explained = 0;
  int64_t short_paths_suppressed = 0;
  int64_t low_frequency_suppressed = 0;
  int64_t cycles_cut = 0;
  // Name and value of each, in the order paths files and `weft paths` list them.
  CounterList List() const {
    return {{"roots", roots},
            {"vertices", vertices},
            {"edges", edges},
            {"correlations", correlations},
            {"fft_size", fft_size},
            {"messages_explained", messages_explained},
            {"short_paths_suppressed", short_paths_suppressed},
            {"low_frequency_suppressed", low_frequency_suppressed},
            {"cycles_cut", cycles_cut}};
  }
};

// Convolution gives a causal graph, not path instances: `paths` has no instances or
// patterns, only the trace's identity and nodes, which the graph's node ids index.
struct ConvolutionInference {
  PathSet paths;
  CausalGraph graph;
  ConvolutionCounters counters;
};

// Runs the algorithm over every message of `trace` (kinds are ignored, except to pick
// roots among CALL senders when no node is receive-only).
Result<ConvolutionInference> InferConvolution(const Trace& trace,
                                              const ConvolutionOptions& options);

}  // namespace weft
