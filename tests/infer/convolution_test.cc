// The convolution algorithm (Project 5 §5.2): its pieces on hand-made signals, its
// accuracy on generated traces (the added-delay experiment of §7.2 and the email
// experiment of §7.5.7), and its edge cases.
#include "infer/convolution/convolution.h"

#include <gtest/gtest.h>

#include "eval/eval.h"
#include "gen/gen.h"
#include "infer/convolution/correlator.h"
#include "infer/truth/truth.h"
#include "paths/paths_file.h"
#include "report/describe.h"
#include "report/dot.h"

namespace weft {
namespace {

Trace Generate(const std::string& scenario, uint64_t messages) {
  Result<GenConfig> config = LoadGenConfig(scenario);
  EXPECT_TRUE(config.ok()) << config.status().message();
  config->messages = messages;
  Result<Trace> trace = MakeTrace(*config);
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  return std::move(trace).value();
}

ConvolutionInference Convolve(const Trace& trace, const ConvolutionOptions& options) {
  Result<ConvolutionInference> set = InferConvolution(trace, options);
  EXPECT_TRUE(set.ok()) << set.status().message();
  return set.ok() ? std::move(set).value() : ConvolutionInference();
}

std::string Table(const ConvolutionInference& c) {
  return FormatCausalGraph(c.graph, c.paths.nodes);
}

// What `weft infer --algo convolution` writes.
PathsFile File(const ConvolutionInference& c) { return {c.paths, c.counters.List(), c.graph}; }

// A trace of MSG messages (sender, receiver, time in ms).
Trace MakeMessages(const std::vector<std::tuple<std::string, std::string, double>>& messages) {
  TraceBuilder b;
  for (const auto& [from, to, ms] : messages) {
    MessageRecord r;
    r.sender = b.Node(from);
    r.receiver = b.Node(to);
    r.send_time = r.recv_time = TimeNs(ms * double(kMillisecond));
    b.Add(r);
  }
  Result<Trace> trace = std::move(b).Finish();
  EXPECT_TRUE(trace.ok());
  return std::move(trace).value();
}

// The vertex whose key (CausalVertexKey) is `key`, or -1.
int FindVertex(const ConvolutionInference& set, const std::string& key) {
  for (uint32_t v = 0; v < set.graph.vertices.size(); ++v) {
    if (CausalVertexKey(set.graph, set.paths.nodes, v) == key) return int(v);
  }
  return -1;
}

TEST(ConvolutionTest, FastFftSizes) {
  EXPECT_EQ(FastFftSize(1), 1u);
  EXPECT_EQ(FastFftSize(1000), 1000u);
  EXPECT_EQ(FastFftSize(1001), 1008u);  // 2^4 3^2 7
  EXPECT_EQ(FastFftSize(97), 98u);      // 2 7^2
  EXPECT_EQ(FastFftSize(1u << 20), 1u << 20);
  EXPECT_EQ(FastFftSize((1u << 20) + 1), 1049760u);  // 2^5 3^8 5
}

// §5.2.1: samples are square roots of counts, so four messages in one quantum matched by
// four messages three quanta later correlate to 4 (the messages), not 16.
TEST(ConvolutionTest, SquareRootSignalsCountMessages) {
  using convolution_internal::Correlator;
  Result<std::unique_ptr<Correlator>> c =
      Correlator::Create(0, 99 * kMillisecond, kMillisecond, 0, 1 << 20);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ((*c)->samples(), 100u);
  EXPECT_EQ((*c)->max_lag(), 50u);
  EXPECT_EQ((*c)->fft_size(), 150u);  // S + max lag: no wrap-around; 2 3 5^2
  std::vector<TimeNs> first = {10 * kMillisecond, 10 * kMillisecond + 1, 10 * kMillisecond + 2,
                               10 * kMillisecond + 3, 50 * kMillisecond};
  std::vector<TimeNs> second = {13 * kMillisecond, 13 * kMillisecond + 5, 13 * kMillisecond + 7,
                                13 * kMillisecond + 9};
  auto a = (*c)->NewSpectrum();
  auto b = (*c)->NewSpectrum();
  (*c)->Spectrum(first, a.get());
  (*c)->Spectrum(second, b.get());
  std::vector<double> correlation;
  (*c)->Correlate(a.get(), b.get(), correlation);
  ASSERT_EQ(correlation.size(), 51u);
  // Scaled by S / (S - d) = 100 / 97 at lag 3.
  EXPECT_NEAR(correlation[3], 4.0 * 100 / 97, 1e-9);
  EXPECT_NEAR(correlation[0], 0.0, 1e-9);
  EXPECT_NEAR(correlation[4], 0.0, 1e-9);
}

TEST(ConvolutionTest, SpikesNeedADipBetweenThem) {
  std::vector<double> c(200, 1.0);
  c[10] = 50;
  c[11] = 40;  // same spike: no dip between 10 and 11
  c[30] = 30;
  c[100] = 45;
  EXPECT_EQ(FindSpikes(c, 4, 3), (std::vector<uint32_t>{10, 100, 30}));  // highest first
  EXPECT_TRUE(FindSpikes(std::vector<double>(50, 2.0), 4, 3).empty());   // flat
  EXPECT_TRUE(FindSpikes({}, 4, 3).empty());
}

// A forwards every message from ROOT to C 30 ms later and to D 120 ms later; E sends at
// random: the graph is ROOT -> A -> {C at 30 ms, D at 120 ms}, and nothing of E's.
TEST(ConvolutionTest, FindsDelaysOfAForwardingChain) {
  std::vector<std::tuple<std::string, std::string, double>> m;
  uint64_t x = 12345;
  auto next = [&x] {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return double(x >> 33) / double(1ull << 31);
  };
  double t = 0;
  for (int i = 0; i < 400; ++i) {
    t += 200 + 800 * next();
    m.emplace_back("ROOT", "A", t);
    m.emplace_back("A", "C", t + 30);
    m.emplace_back("A", "D", t + 120 + 4 * next());
    m.emplace_back("E", "A", 400 * 1000 * next());
  }
  Trace trace = MakeMessages(m);
  ConvolutionOptions options;
  options.quantum = 5 * kMillisecond;
  options.roots = {"ROOT"};
  ConvolutionInference set = Convolve(trace, options);
  int c = FindVertex(set, "ROOT>A>C");
  int d = FindVertex(set, "ROOT>A>D");
  ASSERT_GE(c, 0) << Table(set);
  ASSERT_GE(d, 0) << Table(set);
  const CausalVertex& vc = set.graph.vertices[size_t(c)];
  const CausalVertex& vd = set.graph.vertices[size_t(d)];
  EXPECT_EQ(vc.messages, 400u);
  EXPECT_EQ(vd.messages, 400u);
  ASSERT_EQ(vc.delays.size(), 1u);
  EXPECT_EQ(vc.delays[0].delay, 30 * kMillisecond);
  EXPECT_NEAR(double(vd.delays[0].delay), double(122 * kMillisecond), double(options.quantum));
  EXPECT_EQ(set.graph.vertices.size(), 4u) << Table(set);  // ROOT, A, C, D
  EXPECT_EQ(set.counters.roots, 1);
  // With memory for the FFT buffers only, no spectrum is cached: the same graph.
  options.max_signal_bytes = ConvolutionSignalBytes(trace.EndTime() - trace.StartTime(), options);
  EXPECT_EQ(Table(Convolve(trace, options)), Table(set));
  options.max_signal_bytes -= 1;
  EXPECT_EQ(InferConvolution(trace, options).status().code(), StatusCode::kOutOfRange);
}

// The delays of WS2 -> AP after the AUTH return: the edge of the path
// CLIENT>WS2>AUTH>DB>AUTH>WS2>APn (after the session check of "browse" and the others).
std::vector<TimeNs> Ws2ToApDelays(const ConvolutionInference& set) {
  std::vector<TimeNs> delays;
  for (uint32_t v = 0; v < set.graph.vertices.size(); ++v) {
    const CausalVertex& vertex = set.graph.vertices[v];
    if (vertex.parent < 0 || vertex.delays.empty()) continue;
    const CausalVertex& ws = set.graph.vertices[size_t(vertex.parent)];
    if (ws.parent < 0) continue;
    std::string_view node = set.paths.nodes.Get(vertex.node);
    if (set.paths.nodes.Get(ws.node) != "WS2" || (node != "AP1" && node != "AP2")) continue;
    if (set.paths.nodes.Get(set.graph.vertices[size_t(ws.parent)].node) != "AUTH") continue;
    delays.push_back(vertex.delays.front().delay);  // the most frequent
  }
  return delays;
}

// §7.2: 200 ms added at WS2 between the AUTH return and the AP call shows as a delay of
// 250 ms instead of 50 ms on that edge, within one quantum; multitier has no such spike.
TEST(ConvolutionTest, AddedDelayShowsAtWs2ToAp) {
  ConvolutionOptions options;  // mu = 10 ms
  options.roots = {"CLIENT"};
  ConvolutionInference normal = Convolve(Generate("multitier", 60'000), options);
  ConvolutionInference added = Convolve(Generate("multitier-added-delay", 60'000), options);
  std::vector<TimeNs> before = Ws2ToApDelays(normal);
  std::vector<TimeNs> after = Ws2ToApDelays(added);
  ASSERT_FALSE(before.empty()) << Table(normal);
  ASSERT_FALSE(after.empty()) << Table(added);
  for (TimeNs d : before)
    EXPECT_NEAR(double(d), double(50 * kMillisecond), double(options.quantum));
  for (TimeNs d : after)
    EXPECT_NEAR(double(d), double(250 * kMillisecond), double(options.quantum));
  // No WS2 -> AP delay anywhere in multitier's graph near 250 ms.
  for (uint32_t v = 0; v < normal.graph.vertices.size(); ++v) {
    const CausalVertex& vertex = normal.graph.vertices[v];
    if (vertex.parent < 0 ||
        normal.paths.nodes.Get(normal.graph.vertices[size_t(vertex.parent)].node) != "WS2")
      continue;
    if (!normal.paths.nodes.Get(vertex.node).starts_with("AP")) continue;
    for (const CausalDelay& d : vertex.delays) {
      EXPECT_FALSE(d.delay > 240 * kMillisecond && d.delay < 260 * kMillisecond)
          << CausalVertexKey(normal.graph, normal.paths.nodes, v);
    }
  }
}

// §7.5.7: every truth edge with >= 100 messages is found, and no edge the graph reports
// with >= 100 messages is false.
TEST(ConvolutionTest, EmailFrequentPathsExactly) {
  Trace trace = Generate("email", 0);
  ConvolutionOptions options;
  options.quantum = kSecond;
  options.tolerance = 500 * kMillisecond;  // §5.2.2: forwarding delays vary by ~0.5 s
  ConvolutionInference graph = Convolve(trace, options);
  Result<TruthInference> truth = InferFromTruth(trace);
  ASSERT_TRUE(truth.ok());
  Result<GraphEvalReport> report = EvaluateGraph(truth->paths, graph.paths, graph.graph, 100);
  ASSERT_TRUE(report.ok()) << report.status().message();
  SCOPED_TRACE(FormatGraphEvalReport(*report) + Table(graph));
  EXPECT_EQ(report->truth_edges, 9u);  // the newsletter, partner and outbound routes
  EXPECT_TRUE(report->false_negatives.empty());
  EXPECT_TRUE(report->false_positives.empty());
  // Most frequent delays within a second of the truth's medians (1 s forwarding hops).
  EXPECT_LE(report->max_delay_error, kSecond);
}

// The graph travels in the paths file beside instances and patterns, and draws as
// Figure 9: count and delays on each edge.
TEST(ConvolutionTest, GraphRoundTripsAndDraws) {
  std::vector<std::tuple<std::string, std::string, double>> m;
  for (int i = 0; i < 50; ++i) {
    double t = i * 1000.0 + (i * i * 37) % 500;  // not periodic: no spikes at multiples of a period
    m.emplace_back("A", "B", t);
    m.emplace_back("B", "C", t + 20);
  }
  Trace trace = MakeMessages(m);
  ConvolutionOptions options;
  options.quantum = 5 * kMillisecond;
  ConvolutionInference set = Convolve(trace, options);
  ASSERT_EQ(set.graph.vertices.size(), 3u) << Table(set);
  Result<PathsFile> back = ParsePaths(FormatPaths(File(set)), "test");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->graph.vertices.size(), 3u);
  EXPECT_EQ(back->graph.quantum, options.quantum);
  EXPECT_EQ(FormatPaths(*back), FormatPaths(File(set)));
  EXPECT_EQ(FormatCausalGraph(back->graph, back->paths.nodes),
            "causal graph: 3 vertices, quantum 5ms\n"
            "A  (root, 50 msgs sent)\n"
            "  B  <- A  50 msgs  delays\n"
            "    C  <- B  50 msgs  delays 20ms (50)\n");
  EXPECT_EQ(CausalGraphToDot(back->graph, back->paths.nodes),
            "digraph causal_graph {\n  rankdir=TB;\n  node [shape=ellipse];\n"
            "  v0 [label=\"A\", shape=box];\n"
            "  v1 [label=\"B\"];\n  v0 -> v1 [label=\"50\"];\n"
            "  v2 [label=\"C\"];\n  v1 -> v2 [label=\"50: 20ms\"];\n}\n");
  // A vertex whose parent is not before it is corrupt, with the field named.
  std::string text = FormatPaths(File(set));
  size_t at = text.find("[2,1,");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 5, "[2,7,");
  Result<PathsFile> bad = ParsePaths(text, "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("causal_graph.vertices[2]"), std::string::npos)
      << bad.status().message();
}

TEST(ConvolutionTest, EdgeCasesGiveGraphsNotCrashes) {
  ConvolutionOptions options;
  // An empty trace.
  ConvolutionInference empty = Convolve(Trace(), options);
  EXPECT_TRUE(empty.graph.empty());
  // A single message: one root with one edge (under min_messages, so no edge).
  ConvolutionInference one = Convolve(MakeMessages({{"A", "B", 1}}), options);
  ASSERT_EQ(one.graph.vertices.size(), 1u);
  EXPECT_EQ(one.graph.vertices[0].messages, 1u);
  // A trace shorter than one quantum, and a quantum longer than the trace: one sample.
  std::vector<std::tuple<std::string, std::string, double>> m;
  for (int i = 0; i < 20; ++i) {
    m.emplace_back("A", "B", i * 0.1);
    m.emplace_back("B", "C", i * 0.1 + 0.05);
  }
  Trace short_trace = MakeMessages(m);
  options.min_messages = 5;
  ConvolutionInference tiny = Convolve(short_trace, options);
  EXPECT_EQ(tiny.counters.fft_size, 1);
  ASSERT_GE(FindVertex(tiny, "A>B"), 0) << Table(tiny);
  options.quantum = 3600 * kSecond;
  ConvolutionInference huge = Convolve(short_trace, options);
  ASSERT_GE(FindVertex(huge, "A>B"), 0);
  // C sends nothing: its vertex has no children, and the search ends there.
  options.quantum = kMillisecond;
  ConvolutionInference chain = Convolve(short_trace, options);
  for (const CausalVertex& v : chain.graph.vertices) {
    if (v.parent >= 0) {
      EXPECT_NE(chain.paths.nodes.Get(chain.graph.vertices[size_t(v.parent)].node), "C");
    }
  }
}

TEST(ConvolutionTest, TooSmallAQuantumSaysHowMuchMemory) {
  Trace trace = MakeMessages({{"A", "B", 0}, {"B", "C", 3600.0 * 1000}});  // an hour
  ConvolutionOptions options;
  options.quantum = 1;  // 3.6e12 samples
  Result<ConvolutionInference> set = InferConvolution(trace, options);
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(set.status().message().find("MiB"), std::string::npos) << set.status().message();
  EXPECT_NE(set.status().message().find("3600000000001 quanta"), std::string::npos)
      << set.status().message();
  EXPECT_GT(ConvolutionSignalBytes(3600 * kSecond, options), uint64_t(1) << 40);
}

TEST(ConvolutionTest, BadOptionsAreErrors) {
  Trace trace = MakeMessages({{"A", "B", 0}});
  ConvolutionOptions options;
  options.quantum = 0;
  EXPECT_EQ(InferConvolution(trace, options).status().code(), StatusCode::kInvalidArgument);
  options = {};
  options.separation_sigmas = 5;
  EXPECT_EQ(InferConvolution(trace, options).status().code(), StatusCode::kInvalidArgument);
  options = {};
  options.roots = {"NOPE"};
  EXPECT_EQ(InferConvolution(trace, options).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace weft
