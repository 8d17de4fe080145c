// The precise algorithms (thread: vPath; fragment: BorderPatrol's forward scan) on small
// traces with threads, each a threading model in miniature, scored per request by eval.
#include <gtest/gtest.h>

#include <initializer_list>

#include "eval/eval.h"
#include "infer/choose.h"
#include "infer/fragment/fragment.h"
#include "infer/thread/thread.h"
#include "infer/truth/truth.h"
#include "trace/text_format.h"

namespace weft {
namespace {

// Two requests from a client C through server A to server B. Times are microseconds;
// who sends and receives on which thread is the threading model under test.
class TwoRequests {
 public:
  // One message with its ground truth (`parent_row` -1 for a root).
  uint32_t Add(MessageKind kind, const char* from, uint32_t from_thread, const char* to,
               uint32_t to_thread, int send_us, int recv_us, const char* call, uint32_t path,
               int parent_row) {
    MessageRecord r;
    r.kind = kind;
    r.sender = b_.Node(from);
    r.receiver = b_.Node(to);
    r.sender_thread = ThreadId(from_thread);
    r.receiver_thread = ThreadId(to_thread);
    r.send_time = TimeNs(send_us) * 1000;
    r.recv_time = TimeNs(recv_us) * 1000;
    r.call_id = b_.String(call);
    r.truth_path = PathId(path);
    uint32_t row = b_.Add(r);
    if (parent_row >= 0) b_.SetParent(row, uint32_t(parent_row));
    return row;
  }
  // A request of path `path`: C calls A, A calls B once, B replies, A replies. `a_in` is the
  // thread of A that reads the request, `a_work` the one that calls B and replies; `t` the
  // times of the eight events (send, receive of each message).
  // Returns the row of A's call to B.
  uint32_t Request(uint32_t path, uint32_t client_thread, uint32_t a_in, uint32_t a_work,
                   uint32_t a_reply_in, const int (&t)[8]) {
    std::string c = "c" + std::to_string(path), b = "b" + std::to_string(path);
    uint32_t call =
        Add(MessageKind::kCall, "C", client_thread, "A", a_in, t[0], t[1], c.c_str(), path, -1);
    uint32_t down = Add(MessageKind::kCall, "A", a_work, "B", 20 + path, t[2], t[3], b.c_str(),
                        path, int(call));
    Add(MessageKind::kReturn, "B", 20 + path, "A", a_reply_in, t[4], t[5], b.c_str(), path,
        int(down));
    Add(MessageKind::kReturn, "A", a_work, "C", client_thread, t[6], t[7], c.c_str(), path,
        int(call));
    return down;
  }
  // The call in `row` is the first message on a connection its sender opened at `us`.
  void Connected(uint32_t row, int us) { b_.SetConnectTime(row, TimeNs(us) * 1000); }
  // The call in `row` is the first message read on a connection its receiver accepted at
  // `us`.
  void Accepted(uint32_t row, int us) { b_.SetAcceptTime(row, TimeNs(us) * 1000); }
  // The message in `row` carries `key`=`value` (what a protocol processor logs).
  void Attribute(uint32_t row, const char* key, const char* value) {
    b_.AddAttribute(row, b_.String(key), b_.String(value));
  }
  // The calls in `rows` (requests and forwards) are GETs of `url`.
  void Get(std::initializer_list<uint32_t> rows, const char* url) {
    for (uint32_t row : rows) {
      Attribute(row, "http.method", "GET");
      Attribute(row, "http.url", url);
    }
  }
  // The call in `row` was read in several calls, the first of which ended at `us`.
  void FirstRead(uint32_t row, int us) { b_.SetFirstReadTime(row, TimeNs(us) * 1000); }
  Trace Build() {
    Result<Trace> trace = TraceBuilder(b_).Finish();
    EXPECT_TRUE(trace.ok()) << trace.status().message();
    return std::move(trace).value();
  }
  // `infer` is InferThread or InferFragment.
  template <typename Infer>
  RequestOutcomes Score(Infer infer, size_t requests = 2) {
    Result<Trace> trace = TraceBuilder(b_).Finish();
    EXPECT_TRUE(trace.ok()) << trace.status().message();
    auto inferred = infer(*trace);
    EXPECT_TRUE(inferred.ok()) << inferred.status().message();
    Result<TruthInference> truth = InferFromTruth(*trace);
    Result<EvalReport> report = Evaluate(truth->paths, inferred->paths);
    EXPECT_TRUE(report.ok()) << report.status().message();
    EXPECT_EQ(report->requests.requests, requests);
    return report->requests;
  }

 private:
  TraceBuilder b_;
};

// Thread per connection: each request read, worked on and answered by one thread of A.
TEST(PreciseAlgorithms, ThreadPerConnection) {
  TwoRequests r;
  r.Request(1, 1, 11, 11, 11, {0, 10, 20, 30, 40, 50, 60, 70});
  r.Request(2, 2, 12, 12, 12, {15, 25, 35, 45, 55, 65, 75, 85});
  EXPECT_EQ(r.Score(InferThread).exact, 2u);
  EXPECT_EQ(r.Score(InferFragment).exact, 2u);
}

// A call its server read and never answered (a broker's publish, sent with no reply
// coming): counted, and auto says what its tree lacks whichever algorithm it chose.
TEST(PreciseAlgorithms, CallsNeverAnsweredAreCountedAndSaid) {
  TwoRequests r;
  r.Request(1, 1, 11, 11, 11, {0, 10, 20, 30, 40, 50, 60, 70});
  r.Add(MessageKind::kCall, "P", 3, "A", 11, 80, 90, "p1", 3, -1);
  Trace trace = r.Build();
  Result<ThreadInference> thread = InferThread(trace);
  ASSERT_TRUE(thread.ok()) << thread.status().message();
  EXPECT_EQ(thread->counters.calls_never_answered, 1);
  Result<AutoInference> chosen = ChooseAlgorithm(trace, LinkingOptions{}, NestingOptions{});
  ASSERT_TRUE(chosen.ok()) << chosen.status().message();
  EXPECT_EQ(chosen->choice.algorithm, AutoAlgorithm::kThread);
  EXPECT_TRUE(chosen->choice.Describe().ends_with(
      "; but 1 calls read by a traced thread were never answered (one-way messages such as a "
      "broker's publishes, or calls still open when the trace ended): what their servers did "
      "for them is in no tree"))
      << chosen->choice.Describe();
}

// A dispatcher thread (10) reads both requests and hands each to a worker, which calls
// B and replies: vPath's dispatcher-worker model. The hand-off is a hidden work queue:
// the forward scan sees the workers send calls before any input started a fragment.
TEST(PreciseAlgorithms, DispatcherAndWorkers) {
  TwoRequests r;
  r.Request(1, 1, 10, 11, 11, {0, 10, 20, 30, 40, 50, 60, 70});
  r.Request(2, 2, 10, 12, 12, {15, 25, 35, 45, 55, 65, 75, 85});
  EXPECT_EQ(r.Score(InferThread).exact, 2u);
  RequestOutcomes fragment = r.Score(InferFragment);
  EXPECT_EQ(fragment.orphaned, 2u);
}

// A single-threaded event loop (thread 10) with both requests in flight at once, each
// handled immediately on its input: the forward scan is exact, vPath puts the second
// request's call under the first (the thread's next reply answers the first request).
TEST(PreciseAlgorithms, EventLoop) {
  TwoRequests r;
  r.Request(1, 1, 10, 10, 10, {0, 10, 11, 20, 40, 50, 51, 60});
  r.Request(2, 2, 10, 10, 10, {12, 15, 16, 25, 60, 70, 71, 80});
  EXPECT_EQ(r.Score(InferFragment).exact, 2u);
  RequestOutcomes thread = r.Score(InferThread);
  EXPECT_EQ(thread.exact, 0u);
  EXPECT_EQ(thread.mis_stitched, 2u);
}

// An event loop that connects to B without blocking while handling each request, and
// writes the call when the connection is writable, after it took the next request:
// fragment follows the connection to the request that opened it (BorderPatrol §3,
// connection creation is an output), and without the connect times (connect_time)
// gives both calls to the later request.
TEST(PreciseAlgorithms, EventLoopWithNonBlockingConnects) {
  for (bool connects : {false, true}) {
    SCOPED_TRACE(connects ? "with connect times" : "without");
    TwoRequests r;
    uint32_t first = r.Request(1, 1, 10, 10, 10, {0, 10, 20, 30, 40, 50, 51, 60});
    uint32_t second = r.Request(2, 2, 10, 10, 10, {12, 15, 22, 32, 60, 70, 71, 80});
    if (connects) {
      r.Connected(first, 11);
      r.Connected(second, 16);
    }
    EXPECT_EQ(r.Score(InferFragment).exact, connects ? 2u : 0u);
  }
}

// A layer-4 proxy's loop (pen): it connects to B as soon as it accepts a client, before
// the client's request comes, then relays the request on that connection. The second
// client's connect comes after the loop read (and forwarded) the first request: by the
// connect alone, that connection and the call on it were the first request's. With the
// accept times (accept_time) the connection is the accepted client's.
TEST(PreciseAlgorithms, LayerFourProxyConnectsWhenItAccepts) {
  for (bool accepts : {false, true}) {
    SCOPED_TRACE(accepts ? "with accept times" : "without");
    TwoRequests r;
    uint32_t first = r.Request(1, 1, 10, 10, 10, {0, 10, 11, 20, 40, 50, 51, 60});
    uint32_t second = r.Request(2, 2, 10, 10, 10, {14, 15, 16, 25, 60, 70, 71, 80});
    r.Connected(first, 2);
    r.Connected(second, 13);
    if (accepts) {
      r.Accepted(first - 1, 1);
      r.Accepted(second - 1, 12);
    }
    EXPECT_EQ(r.Score(InferFragment).exact, accepts ? 2u : 0u);
  }
}

// A loop that accepts a client while it has a request it read and has not acted on, then
// connects: the connect may be that request's (a task the loop runs after the accept), and
// it stays the request read last.
TEST(PreciseAlgorithms, AConnectAfterAnAcceptGoesToARequestNotActedOn) {
  TwoRequests r;
  uint32_t first = r.Request(1, 1, 10, 10, 10, {0, 10, 13, 20, 40, 50, 51, 60});
  uint32_t second = r.Request(2, 2, 10, 10, 10, {14, 15, 16, 25, 60, 70, 71, 80});
  r.Connected(first, 12);
  r.Accepted(second - 1, 11);
  EXPECT_EQ(r.Score(InferFragment).exact, 2u);
}

// A loop (haproxy in http mode) reads request 2 on a kept connection, accepts a third
// client, writes request 1's call on the connection it opened for 1 before, then connects
// for 2. Request 2 has nothing yet, neither an output nor a connect: the connect is its,
// not the accepted client's, though the thread sent since.
TEST(PreciseAlgorithms, AConnectGoesToARequestThatHasNothingYetBeforeAnAcceptedOne) {
  TwoRequests r;
  uint32_t first = r.Request(1, 1, 10, 10, 10, {0, 10, 30, 35, 50, 55, 56, 60});
  uint32_t second = r.Request(2, 2, 10, 10, 10, {15, 20, 32, 36, 52, 57, 58, 62});
  uint32_t third = r.Request(3, 3, 10, 10, 10, {38, 40, 42, 44, 53, 59, 61, 65});
  r.Connected(first, 11);
  r.Connected(second, 31);
  r.Connected(third, 41);
  r.Accepted(third - 1, 21);
  EXPECT_EQ(r.Score(InferFragment, 3).exact, 3u);
}

// A loop that accepted a client, then read the reply to request 1's first call, resumes 1
// and connects for its second call: an input since the accept makes the connect the
// input's work, not the waiting client's (the testbed's event loop accepts its clients
// while it serves the first ones).
TEST(PreciseAlgorithms, AnInputEndsTheWaitOfAcceptedClients) {
  TwoRequests r;
  uint32_t call = r.Add(MessageKind::kCall, "C", 1, "A", 10, 0, 10, "c1", 1, -1);
  uint32_t down = r.Add(MessageKind::kCall, "A", 10, "B", 21, 11, 12, "b1", 1, int(call));
  r.Add(MessageKind::kReturn, "B", 21, "A", 10, 19, 20, "b1", 1, int(down));
  uint32_t again = r.Add(MessageKind::kCall, "A", 10, "D", 31, 23, 24, "d1", 1, int(call));
  r.Add(MessageKind::kReturn, "D", 31, "A", 10, 30, 31, "d1", 1, int(again));
  r.Add(MessageKind::kReturn, "A", 10, "C", 1, 40, 41, "c1", 1, int(call));
  r.Connected(down, 11);
  r.Connected(again, 22);
  uint32_t second = r.Request(2, 2, 10, 10, 10, {13, 50, 51, 52, 55, 56, 60, 61});
  r.Accepted(second - 1, 14);
  r.Connected(second, 51);
  EXPECT_EQ(r.Score(InferFragment).exact, 2u);
}

// haproxy with a batch of clients: it accepted client 1, then tried to read client 2 and
// found nothing (reconcile dates 2's accept_time from that read), connects for 2, and only
// then reads 1's request and connects for it. The connect goes to the client taken up
// last; by the earliest it went to 1, and 1's own connect after its read too.
TEST(PreciseAlgorithms, AConnectGoesToTheClientTakenUpLast) {
  TwoRequests r;
  uint32_t first = r.Request(1, 1, 10, 10, 10, {0, 5, 7, 8, 20, 21, 22, 23});
  uint32_t second = r.Request(2, 2, 10, 10, 10, {8, 10, 11, 12, 24, 25, 26, 27});
  r.Accepted(first - 1, 1);
  r.Accepted(second - 1, 3);
  r.Connected(second, 4);
  r.Connected(first, 6);
  EXPECT_EQ(r.Score(InferFragment).exact, 2u);
}

// The loop above without the connects: it reads both requests before it acts on either
// (squid's loop without event isolation), and fragment gives both calls to the second.
// Times cannot tell, but the trace shows the first request followed by another input with
// nothing done between: counted, and auto, which still picks fragment (no other of its
// assumptions fails), says to recapture with isolation. A loop that acts on each input
// before the next (EventLoop above) counts none.
TEST(PreciseAlgorithms, InputsReadBeforeActingAreCounted) {
  for (bool acts : {false, true}) {
    SCOPED_TRACE(acts ? "acts on each input" : "reads both first");
    TwoRequests r;
    if (acts) {
      r.Request(1, 1, 10, 10, 10, {0, 10, 11, 20, 40, 50, 51, 60});
      r.Request(2, 2, 10, 10, 10, {12, 15, 16, 25, 60, 70, 71, 80});
    } else {
      r.Request(1, 1, 10, 10, 10, {0, 10, 20, 30, 40, 50, 51, 60});
      r.Request(2, 2, 10, 10, 10, {12, 15, 22, 32, 60, 70, 71, 80});
    }
    Trace trace = r.Build();
    Result<FragmentInference> fragment = InferFragment(trace);
    ASSERT_TRUE(fragment.ok());
    EXPECT_EQ(fragment->counters.inputs_before_acting, acts ? 0 : 1);
    Result<AutoInference> chosen = ChooseAlgorithm(trace);
    ASSERT_TRUE(chosen.ok());
    EXPECT_EQ(chosen->choice.algorithm, AutoAlgorithm::kFragment);
    EXPECT_EQ(chosen->choice.Describe().find("recapture with weft capture --isolate") !=
                  std::string::npos,
              !acts)
        << chosen->choice.Describe();
  }
}

// A proxy's loop that sets a request aside (pgbouncer's client waiting for a free server
// connection): it reads request 1, then request 2 before acting on 1, forwards 2, and
// forwards 1 only in the turn of 2's reply, after answering 2. By times alone 1's forward
// is 2's work. Where the forwards carry their requests' SQL, fragment follows 1 to its
// forward; where nothing tells them apart it cannot, and says so. Where both requests
// have the same SQL it takes the first read first, wrong for this loop (it served the
// later one first), and says that this was a guess; the order of the replies then gives
// each forward back to the request answered after its reply (ReorderByReplies), and both
// trees are whole. 2, whose forward first come gave to 1, counts as set aside too, and as
// answered before anything was followed to it, so auto still says those trees may not be
// exact.
TEST(PreciseAlgorithms, RequestSetAsideIsFollowedToItsForwardByContent) {
  struct Case {
    const char* second_sql;
    int64_t before_acting, found, guessed;
    size_t exact;
    bool says_set_aside;
  };
  for (const Case& c : {Case{"", 1, 0, 0, 0, true}, Case{"select 2", 1, 1, 0, 2, false},
                        Case{"select 1", 2, 1, 1, 2, true}}) {
    SCOPED_TRACE(c.second_sql);
    TwoRequests r;
    uint32_t one = r.Request(1, 1, 10, 10, 10, {0, 10, 52, 55, 60, 70, 71, 80});
    uint32_t two = r.Request(2, 2, 10, 10, 10, {12, 15, 20, 25, 40, 50, 51, 60});
    if (*c.second_sql != '\0') {
      r.Attribute(one - 1, "sql", "select 1");
      r.Attribute(one, "sql", "select 1");
      r.Attribute(two - 1, "sql", c.second_sql);
      r.Attribute(two, "sql", c.second_sql);
    }
    Trace trace = r.Build();
    Result<FragmentInference> fragment = InferFragment(trace);
    ASSERT_TRUE(fragment.ok());
    EXPECT_EQ(fragment->counters.inputs_before_acting, c.before_acting);
    EXPECT_EQ(fragment->counters.set_aside_forwards_found, c.found);
    EXPECT_EQ(fragment->counters.set_aside_forwards_guessed, c.guessed);
    EXPECT_EQ(r.Score(InferFragment).exact, c.exact);
    Result<AutoInference> chosen = ChooseAlgorithm(trace);
    ASSERT_TRUE(chosen.ok());
    const std::string says = chosen->choice.Describe();
    EXPECT_EQ(says.find("were followed to the call that forwarded them") != std::string::npos,
              c.found > 0)
        << says;
    EXPECT_EQ(says.find("chosen first-come") != std::string::npos, c.guessed > 0) << says;
    EXPECT_EQ(says.find("the program set them aside") != std::string::npos, c.says_set_aside)
        << says;
  }
}

// Two requests set aside with the same content (every transaction's BEGIN) while a third
// is served: each forward goes to the first set aside still waiting, a guess where two
// were waiting (counted), right for a queue served first come.
TEST(PreciseAlgorithms, RequestsSetAsideWithTheSameContentAreFollowedFirstCome) {
  TwoRequests r;
  std::vector<uint32_t> forwards = {r.Request(1, 1, 10, 10, 10, {0, 10, 32, 35, 40, 50, 51, 60}),
                                    r.Request(2, 2, 10, 10, 10, {5, 15, 52, 55, 60, 70, 71, 80}),
                                    r.Request(3, 3, 10, 10, 10, {0, 2, 3, 4, 20, 30, 31, 40})};
  for (uint32_t f : forwards) {
    r.Attribute(f - 1, "sql", "BEGIN;");
    r.Attribute(f, "sql", "BEGIN;");
  }
  Result<FragmentInference> fragment = InferFragment(r.Build());
  ASSERT_TRUE(fragment.ok());
  EXPECT_EQ(fragment->counters.inputs_before_acting, 2);
  EXPECT_EQ(fragment->counters.set_aside_forwards_found, 2);
  EXPECT_EQ(fragment->counters.set_aside_forwards_guessed, 1);
  EXPECT_EQ(r.Score(InferFragment, 3).exact, 3u);
}

// A loop that queues its work (Python's asyncio): it reads request 1, then request 2,
// forwards 1 (on a connection it opens for it first, or on one it had), reads 1's reply,
// and only then forwards 2, answering 1 after. Forwarding 1, and connecting for it while
// 1 waits, is not acting on 2, the request read last: 2 is set aside when 1's reply
// comes, and its forward followed to it (first come among the same URL: a guess,
// counted). Before, either counted as acting on 2, and 2's forward went to 1 with the
// reply's turn.
TEST(PreciseAlgorithms, ALoopThatQueuesItsWorkHasEachForwardFollowed) {
  for (bool connects : {false, true}) {
    SCOPED_TRACE(connects ? "connects for 1" : "a connection it had");
    TwoRequests r;
    uint32_t one = r.Request(1, 1, 10, 10, 10, {0, 10, 20, 25, 35, 40, 45, 50});
    uint32_t two = r.Request(2, 2, 10, 10, 10, {12, 15, 42, 47, 55, 60, 65, 70});
    r.Get({one - 1, one, two - 1, two}, "/r0");
    if (connects) r.Connected(one, 18);
    Result<FragmentInference> fragment = InferFragment(r.Build());
    ASSERT_TRUE(fragment.ok());
    EXPECT_EQ(fragment->counters.inputs_before_acting, 2);
    EXPECT_EQ(fragment->counters.set_aside_forwards_found, 2);
    EXPECT_EQ(r.Score(InferFragment).exact, 2u);
  }
}

// An event loop (one thread of A) reads 1, forwards it, and reads 2; it answers 1 and reads
// 3 before it forwards 2, then 3, all to the same URL. Answering 1 is not acting on 2, the
// request read last: 2 is set aside when 3 comes, and its forward followed to it. Before,
// the answer counted as acting on 2, and 2's forward and 3's both went to 3.
TEST(PreciseAlgorithms, ALoopAnsweringAnotherRequestHasNotActedOnTheLast) {
  TwoRequests r;
  uint32_t one = r.Request(1, 1, 10, 10, 10, {0, 10, 12, 13, 20, 22, 30, 31});
  uint32_t two = r.Request(2, 2, 10, 10, 10, {24, 25, 38, 39, 45, 47, 50, 51});
  uint32_t three = r.Request(3, 3, 10, 10, 10, {32, 33, 40, 41, 55, 57, 60, 61});
  r.Get({one - 1, one, two - 1, two, three - 1, three}, "/r0");
  Result<FragmentInference> fragment = InferFragment(r.Build());
  ASSERT_TRUE(fragment.ok());
  EXPECT_EQ(fragment->counters.set_aside_forwards_found, 1);
  EXPECT_EQ(r.Score(InferFragment, 3).exact, 3u);
}

// The loop reads 1 and 2 (the same URL) and forwards 2 before 1, as a task that waits for a
// pool's connection may; it answers each when its reply comes. First come gives 2's
// forward to 1 (a guess); the replies give each forward back to the request answered after
// its reply (ReorderByReplies, counted as reordered), and both trees are whole.
TEST(PreciseAlgorithms, ALoopsForwardsOutOfOrderAreGivenBackByTheirReplies) {
  TwoRequests r;
  uint32_t one = r.Request(1, 1, 10, 10, 10, {0, 10, 25, 27, 43, 45, 50, 51});
  uint32_t two = r.Request(2, 2, 10, 10, 10, {12, 15, 20, 22, 33, 35, 40, 41});
  r.Get({one - 1, one, two - 1, two}, "/r0");
  Result<FragmentInference> fragment = InferFragment(r.Build());
  ASSERT_TRUE(fragment.ok());
  EXPECT_EQ(fragment->counters.set_aside_forwards_guessed, 1);
  EXPECT_EQ(fragment->counters.set_aside_forwards_reordered, 2);
  EXPECT_EQ(r.Score(InferFragment).exact, 2u);
}

// The same where another thread of the node sends too (Traffic Server's event threads,
// haproxy's two): the replies each thread read give back the forwards it sent, a
// transaction staying on the thread that read it.
TEST(PreciseAlgorithms, ForwardsOutOfOrderAreGivenBackPerThreadWhereSeveralSend) {
  TwoRequests r;
  uint32_t one = r.Request(1, 1, 10, 10, 10, {0, 10, 25, 27, 43, 45, 50, 51});
  uint32_t two = r.Request(2, 2, 10, 10, 10, {12, 15, 20, 22, 33, 35, 40, 41});
  r.Request(3, 3, 11, 11, 11, {13, 16, 21, 23, 34, 36, 42, 44});
  r.Get({one - 1, one, two - 1, two}, "/r0");
  Result<FragmentInference> fragment = InferFragment(r.Build());
  ASSERT_TRUE(fragment.ok());
  EXPECT_EQ(fragment->counters.set_aside_forwards_guessed, 1);
  EXPECT_EQ(fragment->counters.set_aside_forwards_reordered, 2);
  EXPECT_EQ(r.Score(InferFragment, 3).exact, 3u);
}

// One read brings two requests (the HEADERS of two HTTP/2 streams) and the loop forwards
// both before its next input: by times both forwards are the read's last request's work.
// With their URLs on the forwards, each goes to its own request (the first read first
// where the URLs are the same, a guess, counted); without, fragment says to recapture
// with isolation.
TEST(PreciseAlgorithms, RequestsSharingAReadAreFollowedToTheirForwardsByContent) {
  for (const char* second_url : {"", "/1", "/2"}) {
    SCOPED_TRACE(second_url);
    TwoRequests r;
    uint32_t one = r.Request(1, 1, 10, 10, 10, {0, 10, 12, 15, 30, 40, 41, 50});
    uint32_t two = r.Request(2, 2, 10, 10, 10, {1, 10, 13, 16, 31, 42, 43, 52});
    const bool content = *second_url != '\0';
    if (content) {
      r.Get({one - 1, one}, "/1");
      r.Get({two - 1, two}, second_url);
    }
    Trace trace = r.Build();
    Result<FragmentInference> fragment = InferFragment(trace);
    ASSERT_TRUE(fragment.ok());
    EXPECT_EQ(fragment->counters.inputs_sharing_a_read, 1);
    EXPECT_EQ(fragment->counters.shared_read_forwards_found, content ? 1 : 0);
    EXPECT_EQ(fragment->counters.set_aside_forwards_guessed,
              std::string_view(second_url) == "/1" ? 1 : 0);
    EXPECT_EQ(r.Score(InferFragment).exact, content ? 2u : 0u);
    const SetAsideNotes notes = DescribeSetAside(fragment->counters);
    EXPECT_EQ(
        notes.sharing_a_read.find("recapture with weft capture --isolate") != std::string::npos,
        !content)
        << notes.sharing_a_read;
  }
}

// Thread per connection, each thread a proxy that streams its request on: it reads the
// head, sends the call to B, then reads the body (tinyproxy). The call goes out before the
// request's last byte is read; from the request's first read (first_read_time) it lies
// inside the request, and thread and fragment are exact. Without first reads the calls
// lie outside every request (thread) and fragment (fragment), and auto says so instead of
// choosing either.
TEST(PreciseAlgorithms, ThreadPerConnectionStreamingTheRequestOn) {
  for (bool first_reads : {false, true}) {
    SCOPED_TRACE(first_reads ? "with first reads" : "without");
    TwoRequests r;
    uint32_t one = r.Request(1, 1, 11, 11, 11, {0, 25, 20, 30, 40, 50, 60, 70});
    uint32_t two = r.Request(2, 2, 12, 12, 12, {15, 40, 35, 45, 55, 65, 75, 85});
    if (first_reads) {
      r.FirstRead(one - 1, 10);
      r.FirstRead(two - 1, 30);
    }
    EXPECT_EQ(r.Score(InferThread).exact, first_reads ? 2u : 0u);
    EXPECT_EQ(r.Score(InferFragment).exact, first_reads ? 2u : 0u);
    Result<AutoInference> chosen = ChooseAlgorithm(r.Build());
    ASSERT_TRUE(chosen.ok());
    EXPECT_EQ(chosen->choice.calls_outside_requests, first_reads ? 0 : 2);
    EXPECT_EQ(chosen->choice.overlapping_requests, 0);
    EXPECT_EQ(chosen->choice.server_calls_outside_fragments.value_or(0), first_reads ? 0 : 2);
    if (first_reads) {
      EXPECT_EQ(chosen->choice.algorithm, AutoAlgorithm::kThread);
    } else {
      EXPECT_NE(chosen->choice.algorithm, AutoAlgorithm::kThread);
      EXPECT_NE(chosen->choice.algorithm, AutoAlgorithm::kFragment);
    }
  }
}

// One thread (10) begins reading request 1, reads all of request 2 meanwhile, and streams
// request 1 on (its call to B at 20) before it answers request 2. vPath gives that call to
// request 2, whose reply comes next; fragment too, the last input begun. Counted from
// request 1's first read, request 2 was taken in while request 1 was owed its reply (from
// the last read alone it was not: request 2 came before request 1's last byte), and both
// calls went to request 2 while request 1 was half read: auto picks neither.
TEST(PreciseAlgorithms, RequestReadWhileAnotherWasComingInIsNoPreciseAnswer) {
  TwoRequests r;
  uint32_t one = r.Request(1, 1, 10, 10, 10, {0, 30, 20, 22, 40, 45, 50, 55});
  r.Request(2, 2, 10, 10, 10, {12, 15, 16, 18, 24, 26, 28, 29});
  r.FirstRead(one - 1, 5);
  EXPECT_EQ(r.Score(InferThread).exact, 0u);
  EXPECT_EQ(r.Score(InferFragment).exact, 0u);
  Result<AutoInference> chosen = ChooseAlgorithm(r.Build());
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->choice.overlapping_requests, 1);
  EXPECT_EQ(chosen->choice.server_calls_outside_fragments, 0);
  EXPECT_EQ(chosen->choice.outputs_beside_partial_inputs, 2);
  EXPECT_NE(chosen->choice.algorithm, AutoAlgorithm::kThread);
  EXPECT_NE(chosen->choice.algorithm, AutoAlgorithm::kFragment);
}

// Traffic Server without isolation: a thread begins reading request 1 (a POST), streams its
// head on (the call to B at 8) before the body is in, and meanwhile reads request 2 whole
// and forwards it (at 20). That forward, sent while request 1 was half read, is not in
// doubt: request 1 has its own forward, with the same content (a proxy forwards a request
// once), or request 2's content where it differs from request 1's.
TEST(PreciseAlgorithms, AForwardBesideAHalfReadCallThatHasItsOwnIsNotInDoubt) {
  for (bool same_url : {true, false}) {
    SCOPED_TRACE(same_url ? "same URL" : "URLs of their own");
    TwoRequests r;
    const uint32_t one = r.Request(1, 1, 10, 10, 10, {0, 30, 8, 10, 40, 45, 50, 55});
    const uint32_t two = r.Request(2, 2, 10, 10, 10, {12, 15, 20, 22, 24, 26, 28, 29});
    r.FirstRead(one - 1, 5);
    r.Get({one - 1, one}, "/a");
    r.Get({two - 1, two}, same_url ? "/a" : "/b");
    EXPECT_EQ(r.Score(InferFragment).exact, 2u);
    Result<AutoInference> chosen = ChooseAlgorithm(r.Build());
    ASSERT_TRUE(chosen.ok());
    EXPECT_EQ(chosen->choice.outputs_beside_partial_inputs, 0);
    EXPECT_EQ(chosen->choice.algorithm, AutoAlgorithm::kFragment) << chosen->choice.Describe();
  }
}

TEST(PreciseAlgorithms, NeedThreads) {
  TraceBuilder b;
  MessageRecord m;
  m.sender = b.Node("a");
  m.receiver = b.Node("b");
  m.send_time = 1;
  b.Add(m);
  Result<Trace> trace = std::move(b).Finish();
  ASSERT_TRUE(trace.ok());
  Result<ThreadInference> thread = InferThread(*trace);
  ASSERT_FALSE(thread.ok());
  EXPECT_NE(thread.status().message().find("no message names its threads"), std::string::npos);
  EXPECT_FALSE(InferFragment(*trace).ok());
  // An empty trace is no error: no requests.
  Result<Trace> empty = TraceBuilder().Finish();
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(InferThread(*empty)->paths.instance_count(), 0u);
  EXPECT_EQ(InferFragment(*empty)->paths.instance_count(), 0u);
}

// BorderPatrol §5.5: a CGI-style server. A's thread reads each request and forks a child
// (thread 50, thread 60: same node, as --nodes host names them), which calls B. The first
// child hands its result back through a pipe (a MSG to the parent thread, which answers
// the client); the second execs a helper H first and answers the client itself on the
// connection it inherited. The children got their requests by
// the fork, through no message: with the process links both trees are exact, without them
// the calls to B start paths of their own.
TEST(PreciseAlgorithms, FragmentFollowsForkAndExec) {
  const std::string text =
      "10 CALL_SENT C A c1 recv=20 stid=11 rtid=1 path=1 msg=0\n"
      "15 CALL_SENT C A c2 recv=22 stid=12 rtid=2 path=2 msg=4\n"
      "21 FORK A A stid=1 rtid=50\n"
      "23 FORK A A stid=2 rtid=60\n"
      "25 EXEC A H stid=60 rtid=60\n"
      "30 CALL_SENT A B b1 recv=40 stid=50 rtid=20 path=1 msg=1 parent=0\n"
      "32 CALL_SENT H B b2 recv=42 stid=60 rtid=21 path=2 msg=5 parent=4\n"
      "50 RET_SENT B A b1 recv=60 stid=20 rtid=50 path=1 msg=2 parent=1\n"
      "52 RET_SENT B H b2 recv=62 stid=21 rtid=60 path=2 msg=6 parent=5\n"
      "65 MSG_SENT A A p1 recv=68 stid=50 rtid=1 path=1 msg=8 parent=0\n"
      "70 RET_SENT A C c1 recv=80 stid=1 rtid=11 path=1 msg=3 parent=0\n"
      "72 RET_SENT H C c2 recv=82 stid=60 rtid=12 path=2 msg=7 parent=4\n";
  for (bool links : {true, false}) {
    std::string input = text;
    if (!links) {
      for (size_t at; (at = input.find(" FORK ")) != std::string::npos ||
                      (at = input.find(" EXEC ")) != std::string::npos;) {
        size_t begin = input.rfind('\n', at) + 1;  // npos + 1 == 0 for the first line
        input.erase(begin, input.find('\n', at) + 1 - begin);
      }
    }
    Result<Trace> trace = ParseTextTrace(input, "cgi.trace");
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    EXPECT_EQ(trace->process_links().size(), links ? 3u : 0u);
    Result<FragmentInference> inferred = InferFragment(*trace);
    Result<TruthInference> truth = InferFromTruth(*trace);
    ASSERT_TRUE(inferred.ok() && truth.ok());
    EXPECT_EQ(inferred->counters.process_links_carrying_requests, links ? 3 : 0);
    Result<EvalReport> report = Evaluate(truth->paths, inferred->paths);
    ASSERT_TRUE(report.ok());
    EXPECT_EQ(report->requests.requests, 2u);
    EXPECT_EQ(report->requests.exact, links ? 2u : 0u) << (links ? "with" : "without") << " links";
    // vPath's rule needs no link for the child that answers the client itself. The one
    // that answers through its parent (its call, and its pipe message back, sent by a
    // thread that never replies) is followed to the request through the fork, and lost
    // without it.
    Result<ThreadInference> thread = InferThread(*trace);
    ASSERT_TRUE(thread.ok());
    Result<EvalReport> by_thread = Evaluate(truth->paths, thread->paths);
    ASSERT_TRUE(by_thread.ok());
    EXPECT_EQ(by_thread->requests.exact, links ? 2u : 1u)
        << (links ? "with" : "without") << " links";
  }
}

// A layer-4 proxy's loop (thread 10 of A) takes up two clients and connects onward for each
// before their first requests; later it reads both clients' next requests in one turn and
// forwards them in the next, the second client's first (hitch without isolation). Each
// connection onward carries its client's bytes, call for call and reply for reply, so each
// call forwards the request in the same place on the client's connection. Where the
// forwards' bytes differ (an HTTP proxy rewrites the head), the connections are not paired
// and the first client's second forward goes to the request read last.
TEST(PreciseAlgorithms, ALayerFourProxyForwardsEachClientOnTheConnectionOpenedForIt) {
  for (int forward_bytes : {100, 120}) {
    SCOPED_TRACE(forward_bytes);
    const std::string f = std::to_string(forward_bytes);
    const std::string x1 = " src=10.0.0.1:1001 dst=10.0.0.2:80",
                      x1r = " src=10.0.0.2:80 dst=10.0.0.1:1001",
                      x2 = " src=10.0.0.1:1002 dst=10.0.0.2:80",
                      x2r = " src=10.0.0.2:80 dst=10.0.0.1:1002",
                      y1 = " src=10.0.0.2:5001 dst=10.0.0.3:80",
                      y1r = " src=10.0.0.3:80 dst=10.0.0.2:5001",
                      y2 = " src=10.0.0.2:5002 dst=10.0.0.3:80",
                      y2r = " src=10.0.0.3:80 dst=10.0.0.2:5002";
    const std::string text =
        "10 CALL_SENT C A c1 recv=11 accept=5 bytes=100 stid=1 rtid=10 path=1 msg=0" + x1 + "\n" +
        "12 CALL_SENT A B b1 recv=13 connect=6 bytes=" + f +
        " stid=10 rtid=20 path=1 msg=1 parent=0" + y1 + "\n" +
        "14 RET_SENT B A b1 recv=15 bytes=200 stid=20 rtid=10 path=1 msg=2 parent=1" + y1r + "\n" +
        "16 RET_SENT A C c1 recv=17 bytes=200 stid=10 rtid=1 path=1 msg=3 parent=0" + x1r + "\n" +
        "18 CALL_SENT C A c2 recv=19 accept=7 bytes=100 stid=2 rtid=10 path=2 msg=4" + x2 + "\n" +
        "20 CALL_SENT A B b2 recv=21 connect=8 bytes=" + f +
        " stid=10 rtid=21 path=2 msg=5 parent=4" + y2 + "\n" +
        "22 RET_SENT B A b2 recv=23 bytes=200 stid=21 rtid=10 path=2 msg=6 parent=5" + y2r + "\n" +
        "24 RET_SENT A C c2 recv=25 bytes=200 stid=10 rtid=2 path=2 msg=7 parent=4" + x2r + "\n" +
        "30 CALL_SENT C A c3 recv=40 bytes=100 stid=1 rtid=10 path=3 msg=8" + x1 + "\n" +
        "31 CALL_SENT C A c4 recv=41 bytes=100 stid=2 rtid=10 path=4 msg=9" + x2 + "\n" +
        "42 CALL_SENT A B b4 recv=43 bytes=" + f + " stid=10 rtid=21 path=4 msg=10 parent=9" + y2 +
        "\n" + "43 CALL_SENT A B b3 recv=44 bytes=" + f +
        " stid=10 rtid=20 path=3 msg=11 parent=8" + y1 + "\n" +
        "44 RET_SENT B A b4 recv=45 bytes=200 stid=21 rtid=10 path=4 msg=12 parent=10" + y2r +
        "\n" + "46 RET_SENT A C c4 recv=47 bytes=200 stid=10 rtid=2 path=4 msg=13 parent=9" + x2r +
        "\n" + "48 RET_SENT B A b3 recv=49 bytes=200 stid=20 rtid=10 path=3 msg=14 parent=11" +
        y1r + "\n" + "50 RET_SENT A C c3 recv=51 bytes=200 stid=10 rtid=1 path=3 msg=15 parent=8" +
        x1r + "\n";
    Result<Trace> trace = ParseTextTrace(text, "layer4.trace");
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    Result<FragmentInference> inferred = InferFragment(*trace);
    Result<TruthInference> truth = InferFromTruth(*trace);
    ASSERT_TRUE(inferred.ok() && truth.ok());
    Result<EvalReport> report = Evaluate(truth->paths, inferred->paths);
    ASSERT_TRUE(report.ok());
    EXPECT_EQ(report->requests.requests, 4u);
    EXPECT_EQ(report->requests.exact, forward_bytes == 100 ? 4u : 2u);
  }
}

// Per message of the trace, the message fragment gave it as parent (-1: a root).
std::vector<int64_t> FragmentParents(const Trace& trace, const PathSet& paths) {
  std::vector<int64_t> parent(trace.size(), -2);
  for (size_t i = 0; i < paths.instance_count(); ++i) {
    std::span<const MessageId> messages = paths.InstanceMessages(i);
    std::span<const int32_t> parents = paths.InstanceParents(i);
    for (size_t j = 0; j < messages.size(); ++j) {
      parent[messages[j].value()] =
          parents[j] < 0 ? -1 : int64_t(messages[size_t(parents[j])].value());
    }
  }
  return parent;
}

struct FragmentRun {
  std::vector<int64_t> parents;
  EvalReport report;
  int64_t spawned = 0, ended_by_answer = 0, outputs_starting_requests = 0;
};

// `text` with its THREAD lines, or without them.
FragmentRun RunFragment(const std::string& text, bool links) {
  std::string input = text;
  for (size_t at; !links && (at = input.find(" THREAD ")) != std::string::npos;) {
    size_t begin = input.rfind('\n', at) + 1;
    input.erase(begin, input.find('\n', at) + 1 - begin);
  }
  Result<Trace> trace = ParseTextTrace(input, "spawn.trace");
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  Result<FragmentInference> inferred = InferFragment(*trace);
  Result<TruthInference> truth = InferFromTruth(*trace);
  EXPECT_TRUE(inferred.ok() && truth.ok());
  Result<EvalReport> report = Evaluate(truth->paths, inferred->paths);
  EXPECT_TRUE(report.ok());
  return {FragmentParents(*trace, inferred->paths), *report,
          inferred->counters.process_links_carrying_requests,
          inferred->counters.inherited_requests_ended_by_answer,
          inferred->counters.outputs_starting_requests};
}

// A handler thread (1) of A spawns a thread per downstream call (50 to B, 51 to D, in
// parallel), joins them and answers. The threads got the request through no message: with
// the THREAD links the tree is exact, without them each call starts a path of its own.
TEST(PreciseAlgorithms, FragmentFollowsThreadLinks) {
  const std::string text =
      "10 CALL_SENT C A c1 recv=20 stid=11 rtid=1 path=1 msg=0\n"
      "21 THREAD A A stid=1 rtid=50\n"
      "22 THREAD A A stid=1 rtid=51\n"
      "30 CALL_SENT A B b1 recv=40 stid=50 rtid=20 path=1 msg=1 parent=0\n"
      "31 CALL_SENT A D d1 recv=41 stid=51 rtid=30 path=1 msg=2 parent=0\n"
      "50 RET_SENT B A b1 recv=60 stid=20 rtid=50 path=1 msg=3 parent=1\n"
      "51 RET_SENT D A d1 recv=61 stid=30 rtid=51 path=1 msg=4 parent=2\n"
      "70 RET_SENT A C c1 recv=80 stid=1 rtid=11 path=1 msg=5 parent=0\n";
  FragmentRun with = RunFragment(text, true);
  EXPECT_EQ(with.parents, (std::vector<int64_t>{-1, 0, 0, 1, 2, 0}));
  EXPECT_EQ(with.report.requests.requests, 1u);
  EXPECT_EQ(with.report.requests.exact, 1u);
  EXPECT_EQ(with.spawned, 2);
  EXPECT_EQ(with.ended_by_answer, 2);            // both threads still held c1 when A answered it
  EXPECT_EQ(with.outputs_starting_requests, 1);  // the client's c1
  FragmentRun without = RunFragment(text, false);
  EXPECT_EQ(without.parents, (std::vector<int64_t>{-1, -1, -1, 1, 2, 0}));
  EXPECT_EQ(without.report.requests.exact, 0u);
  EXPECT_EQ(without.outputs_starting_requests, 3);  // c1, b1, d1
}

// A spawned thread that reads a request of its own works for that one from then on: its
// inheritance ended at its first input.
TEST(PreciseAlgorithms, InheritedRequestEndsAtTheThreadsOwnFirstInput) {
  const std::string text =
      "10 CALL_SENT C A c1 recv=20 stid=11 rtid=1 path=1 msg=0\n"
      "21 THREAD A A stid=1 rtid=50\n"
      "25 CALL_SENT C A c2 recv=26 stid=12 rtid=50 path=2 msg=1\n"
      "30 CALL_SENT A B b2 recv=40 stid=50 rtid=20 path=2 msg=2 parent=1\n"
      "50 RET_SENT B A b2 recv=60 stid=20 rtid=50 path=2 msg=3 parent=2\n"
      "65 RET_SENT A C c2 recv=75 stid=50 rtid=12 path=2 msg=4 parent=1\n"
      "70 RET_SENT A C c1 recv=80 stid=1 rtid=11 path=1 msg=5 parent=0\n";
  FragmentRun run = RunFragment(text, true);
  EXPECT_EQ(run.parents, (std::vector<int64_t>{-1, -1, 1, 2, 1, 0}));
  EXPECT_EQ(run.report.requests.exact, 2u);
  EXPECT_EQ(run.spawned, 1);
  EXPECT_EQ(run.ended_by_answer, 0);  // thread 50 held c2 by then, its own
}

// A pool thread (50) created lazily while A serves c1 makes c1's call to B, and later one
// for c2, handed to it through a queue capture cannot see. Its inheritance of c1 ends when
// A answers c1, so the later call is not put in c1's tree: it starts a request of its own
// (c1 stays exact; c2 loses its call, as it would with no link at all).
TEST(PreciseAlgorithms, InheritedRequestEndsWhenItIsAnswered) {
  const std::string text =
      "10 CALL_SENT C A c1 recv=20 stid=11 rtid=1 path=1 msg=0\n"
      "21 THREAD A A stid=1 rtid=50\n"
      "30 CALL_SENT A B b1 recv=40 stid=50 rtid=20 path=1 msg=1 parent=0\n"
      "50 RET_SENT B A b1 recv=60 stid=20 rtid=50 path=1 msg=2 parent=1\n"
      "70 RET_SENT A C c1 recv=80 stid=1 rtid=11 path=1 msg=3 parent=0\n"
      "90 CALL_SENT C A c2 recv=100 stid=12 rtid=1 path=2 msg=4\n"
      "110 CALL_SENT A B b2 recv=120 stid=50 rtid=20 path=2 msg=5 parent=4\n"
      "130 RET_SENT B A b2 recv=140 stid=20 rtid=50 path=2 msg=6 parent=5\n"
      "150 RET_SENT A C c2 recv=160 stid=1 rtid=12 path=2 msg=7 parent=4\n";
  FragmentRun run = RunFragment(text, true);
  // The reply b1 at 60 resumed c1 on thread 50, still by inheritance; c1's answer at 70
  // ended it, so b2 (row 5) has no parent.
  EXPECT_EQ(run.parents, (std::vector<int64_t>{-1, 0, 1, 0, -1, -1, 5, 4}));
  EXPECT_EQ(run.spawned, 1);
  EXPECT_EQ(run.ended_by_answer, 1);
  EXPECT_EQ(run.outputs_starting_requests, 3);  // c1, c2 (the client's) and b2
  EXPECT_EQ(run.report.requests.requests, 2u);
  EXPECT_EQ(run.report.requests.exact, 1u);
}

// gRPC in miniature: a poller thread (5) of A reads c1 and c2, handlers 1 and 2 take one
// each, and each starts its call to B, which a writer thread (9) writes in one write. The
// HANDOFF links name their messages (reconcile ties gRPC's API records to the streams):
// each call goes with the request its handler took. Without the names, both calls go with
// the request last handed to the writer.
TEST(PreciseAlgorithms, FragmentFollowsLinksThatNameTheirMessages) {
  const std::string text =
      "10 CALL_SENT C A c1 recv=20 stid=11 rtid=5 path=1 msg=0\n"
      "11 CALL_SENT C A c2 recv=21 stid=12 rtid=5 path=2 msg=1\n"
      "20 HANDOFF A A stid=5 rtid=1 recv=25 from_msg=0\n"
      "21 HANDOFF A A stid=5 rtid=2 recv=26 from_msg=1\n"
      "30 HANDOFF A A stid=1 rtid=9 recv=40 to_msg=2\n"
      "31 HANDOFF A A stid=2 rtid=9 recv=40 to_msg=3\n"
      "40 CALL_SENT A B b1 recv=45 stid=9 rtid=20 path=1 msg=2 parent=0\n"
      "40 CALL_SENT A B b2 recv=46 stid=9 rtid=20 path=2 msg=3 parent=1\n"
      "50 RET_SENT B A b1 recv=60 stid=20 rtid=5 path=1 msg=4 parent=2\n"
      "51 RET_SENT B A b2 recv=61 stid=20 rtid=5 path=2 msg=5 parent=3\n"
      "70 RET_SENT A C c1 recv=80 stid=9 rtid=11 path=1 msg=6 parent=0\n"
      "70 RET_SENT A C c2 recv=80 stid=9 rtid=12 path=2 msg=7 parent=1\n";
  FragmentRun named = RunFragment(text, true);
  EXPECT_EQ(named.parents, (std::vector<int64_t>{-1, -1, 0, 1, 2, 3, 0, 1}));
  EXPECT_EQ(named.report.requests.exact, 2u);
  std::string unnamed = text;
  for (const char* key : {" from_msg=", " to_msg="}) {
    for (size_t at; (at = unnamed.find(key)) != std::string::npos;)
      unnamed.erase(at, unnamed.find('\n', at) - at);
  }
  FragmentRun run = RunFragment(unnamed, true);
  EXPECT_EQ(run.parents, (std::vector<int64_t>{-1, -1, 1, 1, 2, 3, 0, 1}));
  EXPECT_EQ(run.report.requests.exact, 0u);
}

// A hand-off from a thread that serves no request yet (CPython's interpreter lock, passed
// on by a thread of uWSGI that had not read its request) hands nothing over: thread 1, on
// c1 which it read itself, stays on it, and its call to B is c1's. Before, the hand-off
// took c1 from thread 1, b1 went outside every request and auto refused fragment.
TEST(PreciseAlgorithms, FragmentKeepsItsRequestThroughAHandOffThatCarriesNone) {
  const std::string text =
      "10 CALL_SENT C A c1 recv=20 stid=11 rtid=1 path=1 msg=0\n"
      "22 HANDOFF A A stid=2 rtid=1 recv=25\n"
      "30 CALL_SENT A B b1 recv=35 stid=1 rtid=20 path=1 msg=1 parent=0\n"
      "40 RET_SENT B A b1 recv=45 stid=20 rtid=1 path=1 msg=2 parent=1\n"
      "50 RET_SENT A C c1 recv=55 stid=1 rtid=11 path=1 msg=3 parent=0\n"
      "52 CALL_SENT C A c2 recv=60 stid=12 rtid=2 path=2 msg=4\n"
      "70 RET_SENT A C c2 recv=75 stid=2 rtid=12 path=2 msg=5 parent=4\n";
  FragmentRun run = RunFragment(text, true);
  EXPECT_EQ(run.parents, (std::vector<int64_t>{-1, 0, 1, 0, -1, 4}));
  EXPECT_EQ(run.report.requests.exact, 2u);
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// A lock handed between two threads that each serve a request they read themselves
// (CPython's interpreter lock, passed through a condition variable that capture records as
// a hand-off): thread 1 takes it from thread 2 while it owes c1's reply, and its call to B
// is c1's, not the request thread 2 was serving. Before, both algorithms followed the
// hand-off and gave b1 to c2.
TEST(PreciseAlgorithms, BothIgnoreWhatAThreadTakesWhileServingItsOwnRequest) {
  const std::string text =
      "10 CALL_SENT C A c1 recv=20 stid=11 rtid=1 path=1 msg=0\n"
      "12 CALL_SENT C A c2 recv=21 stid=12 rtid=2 path=2 msg=1\n"
      "22 HANDOFF A A stid=2 rtid=1 recv=25\n"
      "30 CALL_SENT A B b1 recv=35 stid=1 rtid=20 path=1 msg=2 parent=0\n"
      "40 RET_SENT B A b1 recv=45 stid=20 rtid=1 path=1 msg=3 parent=2\n"
      "50 RET_SENT A C c1 recv=55 stid=1 rtid=11 path=1 msg=4 parent=0\n"
      "60 RET_SENT A C c2 recv=65 stid=2 rtid=12 path=2 msg=5 parent=1\n";
  Result<Trace> trace = ParseTextTrace(text, "lock.trace");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  Result<ThreadInference> thread = InferThread(*trace);
  ASSERT_TRUE(thread.ok());
  EXPECT_EQ(FragmentParents(*trace, thread->paths), (std::vector<int64_t>{-1, -1, 0, 2, 0, 1}));
  EXPECT_EQ(thread->counters.calls_through_handoffs, 0);
  EXPECT_EQ(thread->counters.calls_outside_requests, 0);
  Result<FragmentInference> fragment = InferFragment(*trace);
  ASSERT_TRUE(fragment.ok());
  EXPECT_EQ(FragmentParents(*trace, fragment->paths), (std::vector<int64_t>{-1, -1, 0, 2, 0, 1}));
  EXPECT_EQ(fragment->counters.handoffs_carrying_requests, 0);
}

// An interpreter lock's passes, recorded as hand-offs, lead nowhere sensible (Puma,
// docs/precise.md): thread 3 of A accepts c2's connection and reads c2, but passed the
// lock on to thread 2 just before that read returned, having taken it from thread 1, which
// was about to answer c1. Followed by their times, thread 2's call b2 would be c1's, a
// request answered before b2 went out; thread 2 answers c2 next, which had arrived, so b2
// is c2's, counted as a call whose hand-offs led astray.
TEST(PreciseAlgorithms, ThreadDoesNotFollowHandOffsToARequestAnsweredBeforeTheCall) {
  const std::string text =
      "10 CALL_SENT C A c1 recv=20 stid=11 rtid=1 path=1 msg=0\n"
      "12 CALL_SENT C A c2 recv=31 stid=12 rtid=3 path=2 msg=1\n"
      "22 CALL_SENT A B b1 recv=23 stid=1 rtid=20 path=1 msg=2 parent=0\n"
      "24 RET_SENT B A b1 recv=25 stid=20 rtid=1 path=1 msg=3 parent=2\n"
      "25 HANDOFF A A stid=1 rtid=3 recv=29\n"
      "26 RET_SENT A C c1 recv=27 stid=1 rtid=11 path=1 msg=4 parent=0\n"
      "30 HANDOFF A A stid=3 rtid=2 recv=40\n"
      "45 CALL_SENT A B b2 recv=46 stid=2 rtid=21 path=2 msg=5 parent=1\n"
      "47 RET_SENT B A b2 recv=48 stid=21 rtid=2 path=2 msg=6 parent=5\n"
      "50 RET_SENT A C c2 recv=55 stid=2 rtid=12 path=2 msg=7 parent=1\n";
  Result<Trace> trace = ParseTextTrace(text, "lock-passes.trace");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  Result<ThreadInference> thread = InferThread(*trace);
  ASSERT_TRUE(thread.ok());
  EXPECT_EQ(FragmentParents(*trace, thread->paths),
            (std::vector<int64_t>{-1, -1, 0, 2, 0, 1, 5, 1}));
  EXPECT_EQ(thread->counters.calls_handoffs_led_astray, 1);
  EXPECT_EQ(thread->counters.calls_through_handoffs, 0);
  EXPECT_EQ(thread->counters.calls_outside_requests, 0);
}

// A hand-off that a reply then contradicts: thread 9 of A, an event loop serving c2 and
// c4 (it sends a message for c4), is handed c1 by thread 5 (which then takes c3 while it
// owes c1: not thread) and answers c2. Auto refuses fragment and, since hand-offs were
// followed, says that a runtime's own helper threads may be what capture took for
// hand-offs, and how to recapture without them (Node.js: docs/precise.md).
TEST(ChooseAlgorithm, AContradictedHandOffSaysHowToRecaptureWithoutSyncRecords) {
  const std::string text =
      "10 CALL_SENT C A c1 recv=20 stid=11 rtid=5 path=1 msg=0\n"
      "11 CALL_SENT C A c2 recv=21 stid=12 rtid=9 path=2 msg=1\n"
      "22 HANDOFF A A stid=5 rtid=9 recv=30\n"
      "24 CALL_SENT C A c3 recv=25 stid=13 rtid=5 path=3 msg=2\n"
      "26 CALL_SENT C A c4 recv=27 stid=14 rtid=9 path=4 msg=3\n"
      "28 MSG_SENT A B m4 recv=29 stid=9 rtid=20 path=4 msg=4 parent=3\n"
      "40 RET_SENT A C c2 recv=50 stid=9 rtid=12 path=2 msg=5 parent=1\n"
      "41 RET_SENT A C c1 recv=51 stid=5 rtid=11 path=1 msg=6 parent=0\n"
      "42 RET_SENT A C c3 recv=52 stid=5 rtid=13 path=3 msg=7 parent=2\n"
      "43 RET_SENT A C c4 recv=53 stid=9 rtid=14 path=4 msg=8 parent=3\n";
  Result<Trace> trace = ParseTextTrace(text, "contradicted.trace");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  Result<AutoInference> decided = ChooseAlgorithm(*trace);
  ASSERT_TRUE(decided.ok());
  EXPECT_EQ(decided->choice.handoffs_contradicted_by_replies, 1);
  EXPECT_NE(decided->choice.algorithm, AutoAlgorithm::kFragment);
  EXPECT_NE(decided->choice.Describe().find("recapture with weft capture --sync off"),
            std::string::npos)
      << decided->choice.Describe();
}

// A loop (thread 9) reads request 1, forwards it and wakes a helper (thread 5, a hand-off
// of 1); it reads request 2, then waits on the helper, whose signal hands 1 back, and
// forwards 2. A thread that read a request and waits before it did anything for it waits
// for something that request needs (V8's main thread joining its garbage collector's
// helpers), not for handed work: 2's forward stays 2's.
TEST(PreciseAlgorithms, AWaitBeforeActingOnARequestKeepsIt) {
  const std::string text =
      "1 CALL_SENT C A c1 recv=10 stid=11 rtid=9 path=1 msg=0\n"
      "11 CALL_SENT A B b1 recv=12 stid=9 rtid=20 path=1 msg=1 parent=0\n"
      "13 HANDOFF A A stid=9 rtid=5 recv=14\n"
      "15 CALL_SENT C A c2 recv=20 stid=12 rtid=9 path=2 msg=2\n"
      "22 HANDOFF A A stid=5 rtid=9 recv=23\n"
      "24 CALL_SENT A D d2 recv=25 stid=9 rtid=21 path=2 msg=3 parent=2\n"
      "30 RET_SENT B A b1 recv=31 stid=20 rtid=9 path=1 msg=4 parent=1\n"
      "35 RET_SENT A C c1 recv=36 stid=9 rtid=11 path=1 msg=5 parent=0\n"
      "40 RET_SENT D A d2 recv=41 stid=21 rtid=9 path=2 msg=6 parent=3\n"
      "45 RET_SENT A C c2 recv=46 stid=9 rtid=12 path=2 msg=7 parent=2\n";
  Result<Trace> trace = ParseTextTrace(text, "wait.trace");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  Result<FragmentInference> fragment = InferFragment(*trace);
  ASSERT_TRUE(fragment.ok());
  EXPECT_EQ(FragmentParents(*trace, fragment->paths),
            (std::vector<int64_t>{-1, 0, -1, 2, 1, 0, 3, 2}));
}

// A loop (thread 9) reads c1, wakes itself through its own pipe (w1: the wake-up stays in
// the request, and what the loop sends after reading it too), forwards c1 and answers it.
// Then it wakes itself again (w2) and writes a byte nobody traced reads (m1): a signal
// handler's at exit (dnsmasq's, gevent's worker's). Once its request is answered such a
// message hands nothing of it on: w2 goes to no request, and m1 with the wake-up it
// followed.
TEST(PreciseAlgorithms, AWakeUpAfterItsRequestWasAnsweredGoesToNoRequest) {
  const std::string text =
      "1 CALL_SENT C A c1 recv=2 stid=11 rtid=9\n"
      "3 MSG_SENT A A w1 recv=4 stid=9 rtid=9\n"
      "5 CALL_SENT A B b1 recv=6 stid=9 rtid=20\n"
      "7 RET_SENT B A b1 recv=8 stid=20 rtid=9\n"
      "9 RET_SENT A C c1 recv=10 stid=9 rtid=11\n"
      "20 MSG_SENT A A w2 recv=21 stid=9 rtid=9\n"
      "22 MSG_SENT A P m1 stid=9\n";
  Result<Trace> trace = ParseTextTrace(text, "wake.trace");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  Result<FragmentInference> fragment = InferFragment(*trace);
  ASSERT_TRUE(fragment.ok());
  EXPECT_EQ(FragmentParents(*trace, fragment->paths),
            (std::vector<int64_t>{-1, 0, 1, 2, 0, -1, 5}));
}

// A server that starts a thread per request (21 for c1, 22 for c2: the upstream DNS server
// of tests/capture/real_servers_dns_test.cc), whose threads pass an interpreter lock: 22's
// pass hands c2 to 21, which then answers c1. The contradiction misleads nothing at a node
// that sends nothing but replies, which go with their calls: fragment counts it apart, and
// auto does not fall back to the statistical algorithms (thread fits this trace too).
TEST(ChooseAlgorithm, AContradictedHandOffAtANodeThatOnlyRepliesMisleadsNothing) {
  const std::string text =
      "1 CALL_SENT C A c1 recv=2 stid=11 rtid=9\n"
      "3 THREAD A A stid=9 rtid=21\n"
      "4 CALL_SENT C A c2 recv=5 stid=12 rtid=9\n"
      "6 THREAD A A stid=9 rtid=22\n"
      "7 HANDOFF A A stid=22 rtid=21 recv=8\n"
      "9 RET_SENT A C c1 recv=10 stid=21 rtid=11\n"
      "11 RET_SENT A C c2 recv=12 stid=22 rtid=12\n";
  Result<Trace> trace = ParseTextTrace(text, "leaf.trace");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  Result<FragmentInference> fragment = InferFragment(*trace);
  ASSERT_TRUE(fragment.ok());
  EXPECT_EQ(fragment->counters.handoffs_contradicted_by_replies, 0);
  EXPECT_EQ(fragment->counters.contradicted_handoffs_mended_by_replies, 1);
  EXPECT_EQ(FragmentParents(*trace, fragment->paths), (std::vector<int64_t>{-1, -1, 0, 1}));
  Result<AutoInference> decided = ChooseAlgorithm(*trace);
  ASSERT_TRUE(decided.ok());
  EXPECT_NE(decided->choice.algorithm, AutoAlgorithm::kLinking) << decided->choice.Describe();
}

// A's loop (thread 9) reads c1 and c2 (one URL) and hands work to thread 5 and back, an
// interpreter lock's passes that leave it on c2; it forwards b1 (followed to c1, first
// come) and b2 (c2 by the hand-off). When b1's reply comes, thread 5 hands c2 over again,
// and the loop answers c1: a contradiction. `before_c1_answer` goes in after that hand-off.
std::string LoopPassingALock(std::string_view before_c1_answer = "") {
  return "1 CALL_SENT C A c1 recv=10 stid=11 rtid=9 http.method=GET http.url=/r0\n"
         "2 CALL_SENT C A c2 recv=12 stid=12 rtid=9 http.method=GET http.url=/r0\n"
         "14 HANDOFF A A stid=9 rtid=5 recv=15\n"
         "16 HANDOFF A A stid=5 rtid=9 recv=17\n"
         "20 CALL_SENT A B b1 recv=21 stid=9 rtid=20 http.method=GET http.url=/r0\n"
         "22 CALL_SENT A B b2 recv=23 stid=9 rtid=21 http.method=GET http.url=/r0\n"
         "30 RET_SENT B A b1 recv=31 stid=20 rtid=9\n"
         "32 HANDOFF A A stid=5 rtid=9 recv=33\n" +
         std::string(before_c1_answer) +
         "35 RET_SENT A C c1 recv=36 stid=9 rtid=11\n"
         "40 RET_SENT B A b2 recv=41 stid=21 rtid=9\n"
         "45 RET_SENT A C c2 recv=46 stid=9 rtid=12\n";
}

// The contradiction above misleads nothing: every output the hand-offs placed is a forward
// that the order of the replies gives again, so the hand-offs placed nothing that stands:
// auto keeps fragment, whose trees are whole.
TEST(ChooseAlgorithm, AContradictedHandOffWhoseForwardsTheRepliesGiveMisleadsNothing) {
  Result<Trace> trace = ParseTextTrace(LoopPassingALock(), "mended.trace");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  Result<FragmentInference> fragment = InferFragment(*trace);
  ASSERT_TRUE(fragment.ok());
  EXPECT_EQ(fragment->counters.handoffs_contradicted_by_replies, 0);
  EXPECT_EQ(fragment->counters.contradicted_handoffs_mended_by_replies, 1);
  EXPECT_EQ(FragmentParents(*trace, fragment->paths),
            (std::vector<int64_t>{-1, -1, 0, 1, 2, 0, 3, 1}));
  Result<AutoInference> decided = ChooseAlgorithm(*trace);
  ASSERT_TRUE(decided.ok());
  EXPECT_EQ(decided->choice.algorithm, AutoAlgorithm::kFragment) << decided->choice.Describe();
  EXPECT_NE(decided->choice.Describe().find("an interpreter lock's passes, not work"),
            std::string::npos)
      << decided->choice.Describe();
}

// The same, and the loop writes a byte that no traced process reads while the last
// hand-off has it on c2, before c2 is answered. Only that hand-off placed the byte, and the
// replies say the hand-offs were no work: whose the byte is, nothing tells, so the
// contradiction stands and auto does not keep fragment.
TEST(ChooseAlgorithm, AnUnreadMessageAContradictedHandOffPlacedInAnOpenRequestIsInDoubt) {
  Result<Trace> trace =
      ParseTextTrace(LoopPassingALock("34 MSG_SENT A P m1 stid=9\n"), "unread.trace");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  Result<FragmentInference> fragment = InferFragment(*trace);
  ASSERT_TRUE(fragment.ok());
  EXPECT_EQ(fragment->counters.handoffs_contradicted_by_replies, 1);
  EXPECT_EQ(fragment->counters.contradicted_handoffs_mended_by_replies, 0);
  Result<AutoInference> decided = ChooseAlgorithm(*trace);
  ASSERT_TRUE(decided.ok());
  EXPECT_NE(decided->choice.algorithm, AutoAlgorithm::kFragment) << decided->choice.Describe();
}

// --algo auto's three outcomes on the two-request traces above (the testbed's models are
// in precise_testbed_test.cc); a trace without threads goes to linking at once.
TEST(ChooseAlgorithm, ThreadThenFragmentThenLinking) {
  TwoRequests per_connection;
  per_connection.Request(1, 1, 11, 11, 11, {0, 10, 20, 30, 40, 50, 60, 70});
  per_connection.Request(2, 2, 12, 12, 12, {15, 25, 35, 45, 55, 65, 75, 85});
  Result<AutoInference> thread = ChooseAlgorithm(per_connection.Build());
  ASSERT_TRUE(thread.ok());
  EXPECT_EQ(thread->choice.algorithm, AutoAlgorithm::kThread);
  EXPECT_TRUE(thread->thread.has_value());
  EXPECT_FALSE(thread->fragment.has_value());

  TwoRequests loop;
  loop.Request(1, 1, 10, 10, 10, {0, 10, 11, 20, 40, 50, 51, 60});
  loop.Request(2, 2, 10, 10, 10, {12, 15, 16, 25, 60, 70, 71, 80});
  Result<AutoInference> fragment = ChooseAlgorithm(loop.Build());
  ASSERT_TRUE(fragment.ok());
  EXPECT_EQ(fragment->choice.algorithm, AutoAlgorithm::kFragment);
  EXPECT_EQ(fragment->choice.overlapping_requests, 1);
  EXPECT_EQ(fragment->choice.calls_outside_requests, 0);
  EXPECT_EQ(fragment->choice.server_calls_outside_fragments, 0);
  EXPECT_EQ(fragment->choice.Describe(),
            "fragment (BorderPatrol): not thread: 1 requests were taken in by a thread that "
            "still owed a reply, 0 calls lie outside the requests their thread answered, 0 calls "
            "came from a server's thread that never replies (a hand-off); every call a server "
            "sent follows an input");

  // A's thread 10 reads both requests and answers both, handing each to a thread (11, 12)
  // that calls B: thread 10 takes the second while it owes the first its reply, and the
  // calls come from threads that had no input (a hidden hand-off). Neither precise
  // algorithm fits.
  TwoRequests handoff;
  for (uint32_t path : {1u, 2u}) {
    const int at = path == 1 ? 0 : 15;
    const std::string c = "c" + std::to_string(path), down = "b" + std::to_string(path);
    uint32_t call =
        handoff.Add(MessageKind::kCall, "C", path, "A", 10, at, at + 10, c.c_str(), path, -1);
    uint32_t b = handoff.Add(MessageKind::kCall, "A", 10 + path, "B", 20 + path, at + 20, at + 30,
                             down.c_str(), path, int(call));
    handoff.Add(MessageKind::kReturn, "B", 20 + path, "A", 10 + path, at + 40, at + 50,
                down.c_str(), path, int(b));
    handoff.Add(MessageKind::kReturn, "A", 10, "C", path, at + 60, at + 70, c.c_str(), path,
                int(call));
  }
  Result<AutoInference> linking = ChooseAlgorithm(handoff.Build());
  ASSERT_TRUE(linking.ok());
  EXPECT_EQ(linking->choice.algorithm, AutoAlgorithm::kLinking);
  EXPECT_TRUE(linking->thread.has_value() && linking->fragment.has_value());
  EXPECT_EQ(linking->choice.Describe(),
            "linking (WAP5): not thread: 1 requests were taken in by a thread that still owed a "
            "reply, 0 calls lie outside the requests their thread answered, 2 calls came from a "
            "server's thread that never replies (a hand-off); not fragment: 2 calls were sent by "
            "servers before any input of theirs (a hidden hand-off); linking gives 75.00% of the "
            "messages a cause, nesting 75.00%: a tie, and with receive times linking (which "
            "weighs both timestamps) is preferred");
  EXPECT_EQ(linking->choice.root_calls_from_servers, 2);
  EXPECT_TRUE(linking->linking.has_value() && linking->nesting.has_value());

  TraceBuilder b;
  MessageRecord m;
  m.sender = b.Node("a");
  m.receiver = b.Node("b");
  m.send_time = 1;
  b.Add(m);
  Result<Trace> no_threads = std::move(b).Finish();
  ASSERT_TRUE(no_threads.ok());
  Result<AutoInference> none = ChooseAlgorithm(*no_threads);
  ASSERT_TRUE(none.ok());
  // One message with a send time only: linking and nesting explain nothing of it (a tie),
  // and with one timestamp per message nesting is preferred.
  EXPECT_EQ(none->choice.algorithm, AutoAlgorithm::kNesting);
  EXPECT_FALSE(none->choice.threads_named);
  EXPECT_FALSE(none->thread.has_value() || none->fragment.has_value());
  EXPECT_EQ(none->choice.Describe(),
            "the trace names no threads, so neither precise algorithm applies; linking gives "
            "0.00% of the messages a cause, nesting 0.00%: a tie, and with one timestamp per "
            "message nesting (made for such traces) is preferred: nesting (Project 5)");
}

}  // namespace
}  // namespace weft
