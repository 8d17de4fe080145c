// The black-box tracepoints on hand-made traces and path sets: the exact script of
// firings, branches and joins each instance replays as, and the values each event exports.
#include "query/blackbox.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "query/parser.h"
#include "query/query.h"

namespace weft::query {
namespace {

constexpr MessageKind C = MessageKind::kCall;
constexpr MessageKind R = MessageKind::kReturn;
constexpr MessageKind M = MessageKind::kMessage;

struct Msg {
  MessageKind kind;
  const char* from;
  const char* to;
  TimeNs send, recv;
  int64_t bytes = 100;
};

// A trace of `messages`, given in time order so that message ids are their positions.
Trace MakeTrace(
    const std::vector<Msg>& messages,
    const std::vector<std::tuple<uint32_t, const char*, const char*>>& attributes = {}) {
  TraceBuilder b;
  for (const Msg& m : messages) {
    MessageRecord r;
    r.kind = m.kind;
    r.sender = b.Node(m.from);
    r.receiver = b.Node(m.to);
    r.send_time = m.send;
    r.recv_time = m.recv;
    r.bytes = m.bytes;
    r.sender_thread = ThreadId(7);
    b.Add(r);
  }
  for (auto [row, key, value] : attributes) b.AddAttribute(row, b.String(key), b.String(value));
  Result<Trace> trace = std::move(b).Finish();
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  for (size_t m = 0; m + 1 < messages.size(); ++m) {
    EXPECT_LE(trace->SortTime(MessageId(uint32_t(m))), trace->SortTime(MessageId(uint32_t(m + 1))));
  }
  return std::move(*trace);
}

struct Instance {
  std::vector<uint32_t> messages;  // pre-order
  std::vector<int32_t> parents;    // indices within the instance
  double probability = 1;
};

PathSet MakePaths(const Trace& trace, const std::vector<Instance>& instances, bool shared = false) {
  PathSet paths;
  paths.algorithm = "hand";
  paths.trace_messages = trace.size();
  paths.trace_fingerprint = TraceFingerprint(trace);
  paths.nodes = trace.nodes();
  paths.shared_messages = shared;
  for (const Instance& instance : instances) {
    for (uint32_t m : instance.messages) paths.messages.push_back(MessageId(m));
    paths.parent.insert(paths.parent.end(), instance.parents.begin(), instance.parents.end());
    paths.instance_begin.push_back(uint32_t(paths.messages.size()));
    paths.probability.push_back(instance.probability);
    paths.pattern.push_back(0);
  }
  return paths;
}

// A step as text: "fire 1 Request m0", "branch 0>1", "join 0<6".
std::vector<std::string> Script(const BlackBoxEvents& events, const Execution& e) {
  std::vector<std::string> out;
  for (const ExecutionStep& s : e.steps) {
    switch (s.op) {
      case StepOp::kFire:
        out.push_back("fire " + std::to_string(s.segment) + " " +
                      events.tracepoints()[s.tracepoint].name + " m" + std::to_string(s.event / 2));
        break;
      case StepOp::kBranch:
        out.push_back("branch " + std::to_string(s.segment) + ">" + std::to_string(s.other));
        break;
      case StepOp::kJoin:
        out.push_back("join " + std::to_string(s.segment) + "<" + std::to_string(s.other));
        break;
    }
  }
  return out;
}

// Every branch starts a new segment from one that exists, every join takes one that was
// branched and is joined once, every firing is in a segment that exists.
void ExpectWellFormed(const Execution& e) {
  std::vector<int> state(e.segments, 0);  // 0 unborn, 1 live, 2 joined
  state[0] = 1;
  for (const ExecutionStep& s : e.steps) {
    ASSERT_LT(s.segment, e.segments);
    EXPECT_EQ(state[s.segment], 1);
    if (s.op == StepOp::kBranch) {
      ASSERT_LT(s.other, e.segments);
      EXPECT_EQ(state[s.other], 0);
      state[s.other] = 1;
    } else if (s.op == StepOp::kJoin) {
      ASSERT_LT(s.other, e.segments);
      EXPECT_EQ(state[s.other], 1);
      state[s.other] = 2;
    }
  }
}

uint32_t Find(const std::vector<Tracepoint>& tracepoints, const std::string& name) {
  for (uint32_t t = 0; t < tracepoints.size(); ++t) {
    if (tracepoints[t].name == name) return t;
  }
  ADD_FAILURE() << "no tracepoint " << name;
  return 0;
}

uint32_t ExportId(const Tracepoint& tracepoint, const std::string& name) {
  for (uint32_t e = 0; e < tracepoint.exports.size(); ++e) {
    if (tracepoint.exports[e] == name) return e;
  }
  ADD_FAILURE() << "no export " << name;
  return 0;
}

// The value `tracepoint` exports as `name` for the event it fired for message `m`.
Value Get(const BlackBoxEvents& events, const std::string& tracepoint, const std::string& name,
          uint32_t m) {
  uint32_t t = Find(events.tracepoints(), tracepoint);
  bool received = tracepoint == "Request" || tracepoint == "Receive";
  return events.Export(t, ExportId(events.tracepoints()[t], name), m * 2 + (received ? 1 : 0));
}

// client -> web -> db twice in sequence, web's second call after the first's reply.
Trace SequentialTrace() {
  return MakeTrace(
      {
          {C, "client", "h1:nginx[42]", 100, 110, 300},  // m0
          {C, "h1:nginx[42]", "db", 200, 210},           // m1
          {R, "db", "h1:nginx[42]", 300, 310},           // m2
          {C, "h1:nginx[42]", "db", 400, 410},           // m3
          {R, "db", "h1:nginx[42]", 500, 510},           // m4
          {R, "h1:nginx[42]", "client", 600, 610, 4096}  // m5
      },
      {{0, "http.url", "/home"},
       {0, "http.method", "GET"},
       {5, "http.status", "200"},
       {5, "payload.prefix", "48545450"}});
}

TEST(BlackBoxTest, TracepointsExportTheFixedVariablesAndTheTracesAttributeKeys) {
  Trace trace = SequentialTrace();
  std::vector<Tracepoint> tracepoints = BlackBoxTracepoints(trace);
  ASSERT_EQ(tracepoints.size(), 5u);
  EXPECT_EQ(tracepoints[0].name, "Request");
  EXPECT_EQ(tracepoints[1].name, "Call");
  EXPECT_EQ(tracepoints[2].name, "Reply");
  EXPECT_EQ(tracepoints[3].name, "Send");
  EXPECT_EQ(tracepoints[4].name, "Receive");
  std::vector<std::string> exports = {
      "host", "procname", "procid", "tracepoint", "timestamp",   "node",        "thread",
      "peer", "kind",     "bytes",  "latency",    "http.method", "http.status", "http.url"};
  for (const Tracepoint& t : tracepoints) {
    EXPECT_EQ(t.exports, exports) << t.name;
    EXPECT_FALSE(t.description.empty());
  }
}

TEST(BlackBoxTest, SequentialCallsSeeEachOthersReplies) {
  Trace trace = SequentialTrace();
  PathSet paths = MakePaths(trace, {{{0, 1, 2, 3, 4, 5}, {-1, 0, 1, 0, 3, 0}}});
  Result<BlackBoxEvents> events = BlackBoxEvents::Make(trace, paths);
  ASSERT_TRUE(events.ok()) << events.status().message();
  ASSERT_EQ(events->executions(), 1u);
  Execution e;
  events->BuildExecution(0, e);
  ExpectWellFormed(e);
  EXPECT_EQ(e.segments, 7u);
  EXPECT_EQ(e.weight, 1);
  std::vector<std::string> want = {
      "fire 0 Call m0",  "fire 0 Send m0", "branch 0>1", "fire 1 Receive m0", "fire 1 Request m0",
      "fire 1 Call m1",  "fire 1 Send m1", "branch 1>2", "fire 2 Receive m1", "fire 2 Request m1",
      "fire 2 Reply m2", "fire 2 Send m2", "branch 2>3", "join 1<3",          "fire 1 Receive m2",
      "fire 1 Call m3",  "fire 1 Send m3", "branch 1>4", "fire 4 Receive m3", "fire 4 Request m3",
      "fire 4 Reply m4", "fire 4 Send m4", "branch 4>5", "join 1<5",          "fire 1 Receive m4",
      "fire 1 Reply m5", "fire 1 Send m5", "branch 1>6", "join 0<6",          "fire 0 Receive m5",
  };
  EXPECT_EQ(Script(*events, e), want);

  // Reusing the execution gives the same script, not one appended to the last.
  events->BuildExecution(0, e);
  EXPECT_EQ(Script(*events, e), want);

  // A query with advice at Request alone: the rest of the script stays.
  ReplayNeeds needs;
  needs.tracepoints.assign(5, false);
  needs.tracepoints[Find(events->tracepoints(), "Request")] = true;
  events->BuildExecution(0, e, needs);
  ExpectWellFormed(e);
  EXPECT_EQ(Script(*events, e),
            (std::vector<std::string>{"branch 0>1", "fire 1 Request m0", "branch 1>2",
                                      "fire 2 Request m1", "branch 2>3", "join 1<3", "branch 1>4",
                                      "fire 4 Request m3", "branch 4>5", "join 1<5", "branch 1>6",
                                      "join 0<6"}));
  // One that joins nothing: every wanted firing, in message order, in segment 0.
  needs.tracepoints[Find(events->tracepoints(), "Reply")] = true;
  needs.causality = false;
  events->BuildExecution(0, e, needs);
  ExpectWellFormed(e);
  EXPECT_EQ(e.segments, 1u);
  EXPECT_EQ(Script(*events, e),
            (std::vector<std::string>{"fire 0 Request m0", "fire 0 Request m1", "fire 0 Reply m2",
                                      "fire 0 Request m3", "fire 0 Reply m4", "fire 0 Reply m5"}));
}

TEST(BlackBoxTest, ParallelCallsDoNotSeeEachOthersReplies) {
  Trace trace = MakeTrace({
      {C, "client", "web", 100, 110},  // m0
      {C, "web", "db", 200, 210},      // m1
      {C, "web", "db", 205, 215},      // m2
      {R, "db", "web", 300, 320},      // m3 answers m1
      {R, "db", "web", 310, 315},      // m4 answers m2, arrives first
      {R, "web", "client", 600, 610},  // m5
  });
  PathSet paths = MakePaths(trace, {{{0, 1, 3, 2, 4, 5}, {-1, 0, 1, 0, 3, 0}}});
  Result<BlackBoxEvents> events = BlackBoxEvents::Make(trace, paths);
  ASSERT_TRUE(events.ok());
  Execution e;
  events->BuildExecution(0, e);
  ExpectWellFormed(e);
  std::vector<std::string> want = {
      "fire 0 Call m0",    "fire 0 Send m0",    "branch 0>1",        "fire 1 Receive m0",
      "fire 1 Request m0", "fire 1 Call m1",    "fire 1 Send m1",    "branch 1>2",
      "fire 2 Receive m1", "fire 2 Request m1", "fire 2 Reply m3",   "fire 2 Send m3",
      "branch 2>3",        "fire 1 Call m2",    "fire 1 Send m2",    "branch 1>4",
      "fire 4 Receive m2", "fire 4 Request m2", "fire 4 Reply m4",   "fire 4 Send m4",
      "branch 4>5",        "join 1<5",          "fire 1 Receive m4", "join 1<3",
      "fire 1 Receive m3", "fire 1 Reply m5",   "fire 1 Send m5",    "branch 1>6",
      "join 0<6",          "fire 0 Receive m5",
  };
  EXPECT_EQ(Script(*events, e), want);
  EXPECT_EQ(Get(*events, "Call", "latency", 1).i, 120);  // 320 - 200
  EXPECT_EQ(Get(*events, "Call", "latency", 2).i, 110);  // 315 - 205
}

TEST(BlackBoxTest, MessageChainsGoOnAsEachReceiversWork) {
  Trace trace = MakeTrace({
      {M, "A", "B", 10, 20},  // m0
      {M, "B", "C", 30, 40},  // m1
      {M, "C", "D", 50, 60},  // m2
      {M, "B", "E", 70, 80},  // m3: B's second message, after it sent m1
  });
  PathSet paths = MakePaths(trace, {{{0, 1, 2, 3}, {-1, 0, 1, 0}}});
  Result<BlackBoxEvents> events = BlackBoxEvents::Make(trace, paths);
  ASSERT_TRUE(events.ok());
  Execution e;
  events->BuildExecution(0, e);
  ExpectWellFormed(e);
  EXPECT_EQ(e.segments, 5u);
  std::vector<std::string> want = {
      "fire 0 Send m0",    "branch 0>1",        "fire 1 Receive m0", "fire 1 Send m1",
      "branch 1>2",        "fire 2 Receive m1", "fire 2 Send m2",    "branch 2>3",
      "fire 3 Receive m2", "fire 1 Send m3",    "branch 1>4",        "fire 4 Receive m3",
  };
  EXPECT_EQ(Script(*events, e), want);
  EXPECT_TRUE(Get(*events, "Send", "latency", 0).is_null());
  EXPECT_EQ(Get(*events, "Send", "kind", 0).s, "MSG");
}

// The client is untraced: its call has no send time and the reply no receive time. The
// ends not observed fire nothing; the branch and the join remain.
TEST(BlackBoxTest, UntracedClientFiresNothingButKeepsTheStructure) {
  Trace trace = MakeTrace({
      {C, "10.0.0.9:5555", "h1:nginx[42]", kNoTime, 110},  // m0
      {C, "h1:nginx[42]", "db", 200, 210},                 // m1
      {R, "db", "h1:nginx[42]", 300, 310},                 // m2
      {R, "h1:nginx[42]", "10.0.0.9:5555", 600, kNoTime},  // m3
  });
  PathSet paths = MakePaths(trace, {{{0, 1, 2, 3}, {-1, 0, 1, 0}}});
  Result<BlackBoxEvents> events = BlackBoxEvents::Make(trace, paths);
  ASSERT_TRUE(events.ok());
  Execution e;
  events->BuildExecution(0, e);
  ExpectWellFormed(e);
  std::vector<std::string> want = {
      "branch 0>1", "fire 1 Receive m0", "fire 1 Request m0", "fire 1 Call m1",  "fire 1 Send m1",
      "branch 1>2", "fire 2 Receive m1", "fire 2 Request m1", "fire 2 Reply m2", "fire 2 Send m2",
      "branch 2>3", "join 1<3",          "fire 1 Receive m2", "fire 1 Reply m3", "fire 1 Send m3",
      "branch 1>4", "join 0<4",
  };
  EXPECT_EQ(Script(*events, e), want);
  // The untraced client's endpoint is its own host and program.
  EXPECT_EQ(Get(*events, "Request", "peer", 0).s, "10.0.0.9:5555");
  EXPECT_EQ(Get(*events, "Receive", "host", 3).s, "10.0.0.9:5555");
  EXPECT_EQ(Get(*events, "Receive", "procname", 3).s, "10.0.0.9:5555");
  EXPECT_TRUE(Get(*events, "Receive", "procid", 3).is_null());
  EXPECT_TRUE(Get(*events, "Receive", "timestamp", 3).is_null());
  EXPECT_EQ(Get(*events, "Request", "latency", 0).i, 490);  // 600 - 110, web's clock
  EXPECT_EQ(Get(*events, "Reply", "latency", 3).i, 490);
}

TEST(BlackBoxTest, EventsExportTheirEndsValues) {
  Trace trace = SequentialTrace();
  PathSet paths = MakePaths(trace, {{{0, 1, 2, 3, 4, 5}, {-1, 0, 1, 0, 3, 0}}});
  Result<BlackBoxEvents> events = BlackBoxEvents::Make(trace, paths);
  ASSERT_TRUE(events.ok());
  const BlackBoxEvents& ev = *events;

  // Request m0 fires at web, "h1:nginx[42]".
  EXPECT_EQ(Get(ev, "Request", "host", 0).s, "h1");
  EXPECT_EQ(Get(ev, "Request", "procname", 0).s, "nginx");
  EXPECT_EQ(Get(ev, "Request", "procid", 0).type, ValueType::kInt);
  EXPECT_EQ(Get(ev, "Request", "procid", 0).i, 42);
  EXPECT_EQ(Get(ev, "Request", "node", 0).s, "h1:nginx[42]");
  EXPECT_EQ(Get(ev, "Request", "peer", 0).s, "client");
  EXPECT_EQ(Get(ev, "Request", "tracepoint", 0).s, "Request");
  EXPECT_EQ(Get(ev, "Request", "timestamp", 0).i, 110);
  EXPECT_EQ(Get(ev, "Request", "kind", 0).s, "CALL");
  EXPECT_EQ(Get(ev, "Request", "bytes", 0).i, 300);
  EXPECT_EQ(Get(ev, "Request", "latency", 0).i, 490);  // 600 - 110
  EXPECT_EQ(Get(ev, "Request", "http.url", 0).s, "/home");
  EXPECT_EQ(Get(ev, "Request", "http.method", 0).s, "GET");
  EXPECT_TRUE(Get(ev, "Request", "http.status", 0).is_null());
  EXPECT_TRUE(Get(ev, "Request", "thread", 0).is_null());  // the receiver's is unknown
  // The same message's Receive has no latency; its send end is the client's.
  EXPECT_TRUE(Get(ev, "Receive", "latency", 0).is_null());
  EXPECT_EQ(Get(ev, "Receive", "tracepoint", 0).s, "Receive");
  EXPECT_EQ(Get(ev, "Call", "host", 0).s, "client");
  EXPECT_EQ(Get(ev, "Call", "procname", 0).s, "client");
  EXPECT_TRUE(Get(ev, "Call", "procid", 0).is_null());
  EXPECT_EQ(Get(ev, "Call", "thread", 0).i, 7);
  EXPECT_EQ(Get(ev, "Call", "timestamp", 0).i, 100);
  EXPECT_EQ(Get(ev, "Call", "latency", 0).i, 510);  // 610 - 100, the client's round trip
  EXPECT_TRUE(Get(ev, "Send", "latency", 0).is_null());

  // Web's calls: the caller's round trip, the callee's work.
  EXPECT_EQ(Get(ev, "Call", "latency", 1).i, 110);    // 310 - 200
  EXPECT_EQ(Get(ev, "Request", "latency", 1).i, 90);  // 300 - 210
  EXPECT_EQ(Get(ev, "Reply", "latency", 2).i, 90);
  EXPECT_EQ(Get(ev, "Reply", "peer", 2).s, "h1:nginx[42]");
  EXPECT_EQ(Get(ev, "Reply", "kind", 2).s, "RETURN");
  EXPECT_TRUE(Get(ev, "Reply", "http.url", 2).is_null());

  // Web's reply, with its status; payload bytes are no export.
  EXPECT_EQ(Get(ev, "Reply", "latency", 5).i, 490);
  EXPECT_EQ(Get(ev, "Reply", "bytes", 5).i, 4096);
  EXPECT_EQ(Get(ev, "Reply", "http.status", 5).s, "200");
  EXPECT_EQ(Get(ev, "Reply", "host", 5).s, "h1");

  EXPECT_EQ(ev.Time(0 * 2), 100);
  EXPECT_EQ(ev.Time(0 * 2 + 1), 110);
  EXPECT_EQ(ev.Time(5 * 2 + 1), 610);
}

// Linking's alternatives: the same call answered by one reply or by another, each with
// probability 0.5. Latency follows the instance built last.
TEST(BlackBoxTest, AlternativesWeighTheirTuplesAndPairTheirOwnReplies) {
  Trace trace = MakeTrace({
      {C, "client", "web", 100, 110},  // m0
      {C, "web", "db", 200, 210},      // m1
      {R, "db", "web", 300, 310},      // m2
      {R, "web", "client", 500, 510},  // m3
      {R, "web", "client", 700, 710},  // m4
  });
  PathSet paths = MakePaths(
      trace, {{{0, 1, 2, 3}, {-1, 0, 1, 0}, 0.5}, {{0, 1, 2, 4}, {-1, 0, 1, 0}, 0.5}}, true);
  Result<BlackBoxEvents> events = BlackBoxEvents::Make(trace, paths);
  ASSERT_TRUE(events.ok());
  Execution e;
  events->BuildExecution(0, e);
  ExpectWellFormed(e);
  EXPECT_EQ(e.weight, 0.5);
  EXPECT_EQ(Script(*events, e).back(), "fire 0 Receive m3");
  EXPECT_EQ(Get(*events, "Request", "latency", 0).i, 390);
  EXPECT_EQ(Get(*events, "Call", "latency", 0).i, 410);
  events->BuildExecution(1, e);
  ExpectWellFormed(e);
  EXPECT_EQ(e.weight, 0.5);
  EXPECT_EQ(Script(*events, e).back(), "fire 0 Receive m4");
  EXPECT_EQ(Get(*events, "Request", "latency", 0).i, 590);
  EXPECT_EQ(Get(*events, "Call", "latency", 0).i, 610);
  EXPECT_EQ(Get(*events, "Reply", "latency", 4).i, 590);
}

// A statistical algorithm's mistake: a child whose sender is not its parent's receiver
// still branches from the parent's segment; a reply whose clock says it arrived before its
// call was sent still joins after the call.
TEST(BlackBoxTest, MisalignedParentsStillBranchFromTheParentsSegment) {
  Trace trace = MakeTrace({
      {C, "client", "web", 100, 110},  // m0
      {C, "other", "db", 200, 210},    // m1: not web's
      {R, "db", "other", 300, 150},    // m2: "arrives" before m1 was sent
      {R, "web", "client", 600, 610},  // m3
  });
  PathSet paths = MakePaths(trace, {{{0, 1, 2, 3}, {-1, 0, 1, 0}}});
  Result<BlackBoxEvents> events = BlackBoxEvents::Make(trace, paths);
  ASSERT_TRUE(events.ok());
  Execution e;
  events->BuildExecution(0, e);
  ExpectWellFormed(e);
  std::vector<std::string> want = {
      "fire 0 Call m0",  "fire 0 Send m0", "branch 0>1", "fire 1 Receive m0", "fire 1 Request m0",
      "fire 1 Call m1",  "fire 1 Send m1", "branch 1>2", "fire 2 Receive m1", "fire 2 Request m1",
      "fire 2 Reply m2", "fire 2 Send m2", "branch 2>3", "join 1<3",          "fire 1 Receive m2",
      "fire 1 Reply m3", "fire 1 Send m3", "branch 1>4", "join 0<4",          "fire 0 Receive m3",
  };
  EXPECT_EQ(Script(*events, e), want);
  EXPECT_EQ(Get(*events, "Call", "node", 1).s, "other");
}

TEST(BlackBoxTest, PathsOfAnotherTraceAreRefused) {
  Trace trace = SequentialTrace();
  Trace other = MakeTrace({{C, "a", "b", 1, 2}});
  PathSet paths = MakePaths(other, {{{0}, {-1}}});
  EXPECT_FALSE(BlackBoxEvents::Make(trace, paths).ok());
  PathSet right = MakePaths(trace, {{{0, 5}, {-1, 0}}});
  EXPECT_TRUE(BlackBoxEvents::Make(trace, right).ok());
  // Not in pre-order: a child before its parent, or two roots.
  EXPECT_FALSE(BlackBoxEvents::Make(trace, MakePaths(trace, {{{0, 5}, {1, -1}}})).ok());
  EXPECT_FALSE(BlackBoxEvents::Make(trace, MakePaths(trace, {{{0, 5}, {-1, -1}}})).ok());
}

// `text` over every instance, as rows of "value value ... xWEIGHT".
std::vector<std::string> Query(BlackBoxEvents& events, const std::string& text,
                               QueryResult* result = nullptr) {
  Result<Program> program = ParseProgram(text);
  EXPECT_TRUE(program.ok()) << program.status().message();
  if (!program.ok()) return {};
  auto compiled = Compile(*program, events.tracepoints(), {.text = text});
  EXPECT_TRUE(compiled.ok()) << compiled.status().message();
  if (!compiled.ok()) return {};
  QueryResult r = RunOffline(*compiled, events, {});
  std::vector<std::string> rows;
  for (const ResultRow& row : r.rows) {
    std::string line;
    for (const Value& v : row.values) line += FormatValue(v) + " ";
    rows.push_back(line + "x" + FormatValue(Value::Float(row.weight)));
  }
  if (result != nullptr) *result = std::move(r);
  return rows;
}

// Baggage as it would travel live: a call sent after another's reply carries it, one sent
// in parallel does not.
TEST(BlackBoxTest, RepliesReachOnlyTheCallsSentAfterThem) {
  const std::string text =
      "From r In Request Join p In Reply On p -> r Select r.node, r.timestamp, p.timestamp";
  {
    Trace trace = SequentialTrace();
    PathSet paths = MakePaths(trace, {{{0, 1, 2, 3, 4, 5}, {-1, 0, 1, 0, 3, 0}}});
    Result<BlackBoxEvents> events = BlackBoxEvents::Make(trace, paths);
    ASSERT_TRUE(events.ok());
    EXPECT_EQ(Query(*events, text), std::vector<std::string>{"db 410 300 x1"});
  }
  {
    Trace trace = MakeTrace({
        {C, "client", "web", 100, 110},  // m0
        {C, "web", "db", 200, 210},      // m1
        {C, "web", "db", 205, 215},      // m2
        {R, "db", "web", 300, 320},      // m3
        {R, "db", "web", 310, 315},      // m4
        {R, "web", "client", 600, 610},  // m5
    });
    PathSet paths = MakePaths(trace, {{{0, 1, 3, 2, 4, 5}, {-1, 0, 1, 0, 3, 0}}});
    Result<BlackBoxEvents> events = BlackBoxEvents::Make(trace, paths);
    ASSERT_TRUE(events.ok());
    EXPECT_EQ(Query(*events, text), std::vector<std::string>{});
    // The entry's Request reaches both calls; each db call is its own.
    EXPECT_EQ(Query(*events,
                    "From c In Request Join q In First(Request) On q -> c "
                    "GroupBy q.node, c.node Select q.node, c.node, COUNT"),
              std::vector<std::string>{"web db 2 x2"});
  }
}

TEST(BlackBoxTest, AlternativesCountByTheirProbability) {
  Trace trace = MakeTrace({
      {C, "client", "h1:nginx[42]", 100, 110},  // m0
      {C, "h1:nginx[42]", "db", 200, 210},      // m1
      {R, "db", "h1:nginx[42]", 300, 310},      // m2
      {R, "h1:nginx[42]", "client", 500, 510},  // m3
      {R, "h1:nginx[42]", "client", 700, 710},  // m4
  });
  PathSet paths = MakePaths(
      trace, {{{0, 1, 2, 3}, {-1, 0, 1, 0}, 0.5}, {{0, 1, 2, 4}, {-1, 0, 1, 0}, 0.5}}, true);
  Result<BlackBoxEvents> events = BlackBoxEvents::Make(trace, paths);
  ASSERT_TRUE(events.ok());
  QueryResult result;
  EXPECT_EQ(Query(*events,
                  "From q In Request Where q.peer == \"client\" "
                  "Select q.host, q.procname, q.procid, q.latency",
                  &result),
            (std::vector<std::string>{"h1 nginx 42 390 x0.5", "h1 nginx 42 590 x0.5"}));
  EXPECT_TRUE(result.counters.weighted);
  EXPECT_EQ(result.counters.requests, 2u);
  EXPECT_EQ(Query(*events, "From c In Call Where c.peer == \"db\" Select COUNT"),
            std::vector<std::string>{"1 x1"});
}

}  // namespace
}  // namespace weft::query
