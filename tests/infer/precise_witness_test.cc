// The fragment algorithm through untraced modules (BorderPatrol §3.1, §4): a reply from an
// untraced server resumes the request that called it, and a CALL an untraced proxy
// forwards is linked to the CALL it received by a witness. Small traces with ground
// truth, scored per request by eval.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "eval/eval.h"
#include "infer/fragment/fragment.h"
#include "infer/truth/truth.h"

namespace weft {
namespace {

constexpr int kUntraced = -1;  // a time that was not logged (the untraced side)

class Scenario {
 public:
  // One message with its ground truth (`parent_row` -1 for a root). Thread 0 and time
  // kUntraced for a side capture did not see.
  uint32_t Add(MessageKind kind, const char* from, uint32_t from_thread, const char* to,
               uint32_t to_thread, int send_us, int recv_us, const std::string& call, uint32_t path,
               int parent_row, std::vector<std::pair<std::string, std::string>> attributes = {}) {
    MessageRecord r;
    r.kind = kind;
    r.sender = b_.Node(from);
    r.receiver = b_.Node(to);
    r.sender_thread = ThreadId(from_thread);
    r.receiver_thread = ThreadId(to_thread);
    r.send_time = send_us == kUntraced ? kNoTime : TimeNs(send_us) * 1000;
    r.recv_time = recv_us == kUntraced ? kNoTime : TimeNs(recv_us) * 1000;
    r.call_id = b_.String(call);
    r.truth_path = PathId(path);
    uint32_t row = b_.Add(r);
    for (const auto& [key, value] : attributes)
      b_.AddAttribute(row, b_.String(key), b_.String(value));
    if (parent_row >= 0) b_.SetParent(row, uint32_t(parent_row));
    return row;
  }

  // Path `path` through the untraced proxy "10.0.0.9:80": client thread `path` calls the
  // proxy (sent at t[0], answered at t[7]), the proxy calls B (received at t[1], a new
  // connection per request: its own endpoint), B calls D and replies (t[2..6]).
  void Proxied(uint32_t path, const int (&t)[8],
               std::vector<std::pair<std::string, std::string>> witness) {
    std::string p = std::to_string(path), proxy_out = "10.0.0.9:4000" + p;
    uint32_t call = Add(MessageKind::kCall, "C", path, "10.0.0.9:80", 0, t[0], kUntraced, "c" + p,
                        path, -1, witness);
    uint32_t forwarded = Add(MessageKind::kCall, proxy_out.c_str(), 0, "B", 20 + path, kUntraced,
                             t[1], "f" + p, path, int(call), witness);
    uint32_t down = Add(MessageKind::kCall, "B", 20 + path, "D", 30 + path, t[2], t[3], "d" + p,
                        path, int(forwarded));
    Add(MessageKind::kReturn, "D", 30 + path, "B", 20 + path, t[4], t[5], "d" + p, path, int(down));
    Add(MessageKind::kReturn, "B", 20 + path, proxy_out.c_str(), 0, t[6], kUntraced, "f" + p, path,
        int(forwarded));
    Add(MessageKind::kReturn, "10.0.0.9:80", 0, "C", path, kUntraced, t[7], "c" + p, path,
        int(call));
  }

  // Scores fragment against the truth; its counters are kept.
  RequestOutcomes Score(size_t requests) {
    Result<Trace> trace = TraceBuilder(b_).Finish();
    EXPECT_TRUE(trace.ok()) << trace.status().message();
    Result<FragmentInference> inferred = InferFragment(*trace);
    EXPECT_TRUE(inferred.ok()) << inferred.status().message();
    counters_ = inferred->counters;
    Result<TruthInference> truth = InferFromTruth(*trace);
    Result<EvalReport> report = Evaluate(truth->paths, inferred->paths);
    EXPECT_TRUE(report.ok()) << report.status().message();
    EXPECT_EQ(report->requests.requests, requests);
    return report->requests;
  }
  const FragmentCounters& counters() const { return counters_; }

 private:
  TraceBuilder b_;
  FragmentCounters counters_;
};

using Attrs = std::vector<std::pair<std::string, std::string>>;
const Attrs kPost = {{"http.method", "POST"}, {"http.url", "/r0"}};

// An event loop (A, thread 10) asks an untraced resolver for each request, then calls B
// with the answer; the two requests' lookups overlap and are answered in reverse order.
// The resolver is one black box: each answer resumes the request that asked.
TEST(PreciseWitnesses, ReplyFromUntracedServerResumesItsRequest) {
  Scenario s;
  for (uint32_t path : {1u, 2u}) {
    int o = path == 1 ? 0 : 5;  // request 2 arrives 5 us after request 1
    std::string p = std::to_string(path);
    Attrs query = {{"dns.id", p}, {"dns.name", "b.example"}};
    uint32_t call = s.Add(MessageKind::kCall, "C", path, "A", 10, o, o + 1, "c" + p, path, -1);
    uint32_t lookup = s.Add(MessageKind::kCall, "A", 10, "10.0.0.53:53", 0, o + 2, kUntraced,
                            "q" + p, path, int(call), query);
    // Request 2's answer comes first (20 us), request 1's after (30 us).
    int answer = path == 1 ? 30 : 20;
    s.Add(MessageKind::kReturn, "10.0.0.53:53", 0, "A", 10, kUntraced, answer, "q" + p, path,
          int(lookup), query);
    uint32_t down = s.Add(MessageKind::kCall, "A", 10, "B", 20 + path, answer + 1, answer + 2,
                          "b" + p, path, int(call));
    s.Add(MessageKind::kReturn, "B", 20 + path, "A", 10, answer + 3, answer + 10, "b" + p, path,
          int(down));
    s.Add(MessageKind::kReturn, "A", 10, "C", path, answer + 11, answer + 12, "c" + p, path,
          int(call));
  }
  RequestOutcomes r = s.Score(2);
  EXPECT_EQ(r.exact, 2u);
  EXPECT_EQ(s.counters().witness_links, 0);  // no CALL came out of the resolver
}

// Each request goes through the proxy on its own: the witness links B's CALL to the
// client's, so the request is one tree. Without the witness it would be two.
TEST(PreciseWitnesses, ProxyForwardsOneRequestAtATime) {
  Scenario s;
  s.Proxied(1, {0, 10, 11, 12, 13, 14, 15, 20}, kPost);
  s.Proxied(2, {30, 40, 41, 42, 43, 44, 45, 50}, kPost);
  RequestOutcomes r = s.Score(2);
  EXPECT_EQ(r.exact, 2u);
  EXPECT_EQ(s.counters().witness_links, 2);
  EXPECT_EQ(s.counters().witness_links_ambiguous, 0);
  EXPECT_EQ(s.counters().witnesses_unmatched, 0);
}

// Two requests with the same URL in flight at once: B's first CALL could continue either
// (a guess, counted); the earliest is taken, which is right when the proxy forwards in
// the order it received.
TEST(PreciseWitnesses, SameUrlInFlightTakesTheEarliestAndCountsTheGuess) {
  Scenario s;
  s.Proxied(1, {0, 10, 11, 12, 13, 14, 15, 30}, kPost);
  s.Proxied(2, {5, 16, 17, 18, 19, 20, 21, 35}, kPost);
  RequestOutcomes r = s.Score(2);
  EXPECT_EQ(r.exact, 2u);
  EXPECT_EQ(s.counters().witness_links, 2);
  EXPECT_EQ(s.counters().witness_links_ambiguous, 1);
}

// The proxy forwards the later request first: with the URL alone both are given to the
// wrong client request; an X-Request-Id the proxy passes on picks the right one.
TEST(PreciseWitnesses, RequestIdSettlesWhatTheUrlCannot) {
  {
    Scenario s;
    s.Proxied(1, {0, 16, 17, 18, 19, 20, 21, 30}, kPost);
    s.Proxied(2, {5, 10, 11, 12, 13, 14, 15, 35}, kPost);
    RequestOutcomes r = s.Score(2);
    EXPECT_EQ(r.exact, 0u);
    EXPECT_EQ(r.mis_stitched, 2u);
    EXPECT_EQ(s.counters().witness_links_ambiguous, 1);
  }
  Scenario s;
  Attrs one = kPost, two = kPost;
  one.push_back({"http.request_id", "a1"});
  two.push_back({"http.request_id", "b2"});
  s.Proxied(1, {0, 16, 17, 18, 19, 20, 21, 30}, one);
  s.Proxied(2, {5, 10, 11, 12, 13, 14, 15, 35}, two);
  RequestOutcomes r = s.Score(2);
  EXPECT_EQ(r.exact, 2u);
  EXPECT_EQ(s.counters().witness_links, 2);
  EXPECT_EQ(s.counters().witness_links_ambiguous, 0);
}

// A client CALL whose reply had already come back is no longer outstanding, a URL that
// differs is no witness, and a request the proxy received with no matching CALL (from an
// untraced client) stays a path of its own and is counted.
TEST(PreciseWitnesses, OnlyOutstandingCallsWithTheSameUrlAreContinued) {
  Scenario s;
  // Request 1 was answered by the proxy itself (a cache) at 8 us, before request 2's
  // forwarded CALL reached B: only request 2's CALL can be continued.
  uint32_t cached =
      s.Add(MessageKind::kCall, "C", 1, "10.0.0.9:80", 0, 0, kUntraced, "c1", 1, -1, kPost);
  s.Add(MessageKind::kReturn, "10.0.0.9:80", 0, "C", 1, kUntraced, 8, "c1", 1, int(cached));
  s.Proxied(2, {5, 10, 11, 12, 13, 14, 15, 30}, kPost);
  // Request 3 asks for another URL; request 4 reaches B from an untraced client.
  s.Proxied(3, {40, 50, 51, 52, 53, 54, 55, 60}, {{"http.method", "POST"}, {"http.url", "/r1"}});
  uint32_t stray =
      s.Add(MessageKind::kCall, "10.0.0.7:5000", 0, "B", 24, kUntraced, 70, "s4", 4, -1, kPost);
  s.Add(MessageKind::kReturn, "B", 24, "10.0.0.7:5000", 0, 71, kUntraced, "s4", 4, int(stray));
  RequestOutcomes r = s.Score(4);
  EXPECT_EQ(r.exact, 4u);
  EXPECT_EQ(s.counters().witness_links, 2);
  EXPECT_EQ(s.counters().witness_links_ambiguous, 0);
  EXPECT_EQ(s.counters().witnesses_unmatched, 1);
}

// A forwarding resolver that keeps the query's id: id and name link the query it sends
// on (to a traced name server) to the one it received.
TEST(PreciseWitnesses, ForwardingResolverLinksByDnsIdAndName) {
  Scenario s;
  s.Proxied(1, {0, 10, 11, 12, 13, 14, 15, 30}, {{"dns.id", "4660"}, {"dns.name", "a.example"}});
  s.Proxied(2, {5, 16, 17, 18, 19, 20, 21, 35}, {{"dns.id", "4661"}, {"dns.name", "a.example"}});
  RequestOutcomes r = s.Score(2);
  EXPECT_EQ(r.exact, 2u);
  EXPECT_EQ(s.counters().witness_links, 2);
  EXPECT_EQ(s.counters().witness_links_ambiguous, 0);
}

}  // namespace
}  // namespace weft
