// ParseGenConfig: exact one-line errors for bad configs, and the ground-truth parent of each
// step (the convention of paths/path_set.h).
#include "gen/config.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

std::string ErrorOf(std::string_view toml) {
  Result<GenConfig> c = ParseGenConfig(toml, "t.toml");
  return c.ok() ? "ok" : c.status().message();
}

TEST(ParseGenConfig, ReadsEveryField) {
  Result<GenConfig> c = ParseGenConfig(R"(seed = 3
start = 1000
messages = 500
parallelism = 1.5
deviation = 2
[[tracelet]]
name = "t"
instances = 2
think = ["0.5s", "1s"]
choose.WS = { WS1 = 3, WS2 = 2 }
steps = [
  { op = "call", from = "C", to = "$WS", id = "req" },
  { op = "call", from = "$WS", to = "DB", id = "q", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "q", delay = "10ms", id = "qr" },
  { op = "msg", from = "$WS", to = "LOG", id = "log", after = "req", delay = [{ mean = "1s", sd = "0.5s", weight = 0.85 }, { mean = "12s", weight = 0.15 }] },
  { op = "ret", ret = "req", after = ["log", "qr"], extra = { WS2 = "200ms" } },
]
)",
                                       "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->seed, 3u);
  EXPECT_EQ(c->start, 1000 * kSecond);
  EXPECT_EQ(c->messages, 500u);
  EXPECT_DOUBLE_EQ(c->parallelism, 1.5);
  EXPECT_DOUBLE_EQ(c->deviation, 2);
  EXPECT_EQ(c->nodes, (std::vector<std::string>{"C", "WS1", "WS2", "DB", "LOG"}));
  ASSERT_EQ(c->tracelets.size(), 1u);
  const Tracelet& t = c->tracelets[0];
  EXPECT_EQ(t.instances, 2u);
  EXPECT_EQ(t.think_lo, 500 * kMillisecond);
  EXPECT_EQ(t.think_hi, kSecond);
  ASSERT_EQ(t.variables.size(), 1u);
  EXPECT_DOUBLE_EQ(t.variables[0].cumulative[0], 0.6);
  ASSERT_EQ(t.steps.size(), 5u);
  // Parents: root call; nested call -> the call into WS; ret -> its call; msg -> its after
  // step; the final ret -> its call, waiting for both "log" and "qr" (a join).
  EXPECT_EQ(t.steps[0].parent, -1);
  EXPECT_EQ(t.steps[1].parent, 0);
  EXPECT_EQ(t.steps[2].parent, 1);
  EXPECT_EQ(t.steps[2].from, t.steps[1].to);  // a ret's endpoints reverse its call's
  EXPECT_EQ(t.steps[3].parent, 0);
  EXPECT_EQ(t.steps[4].parent, 0);
  EXPECT_EQ(t.steps[4].after, (std::vector<uint32_t>{3, 2}));
  EXPECT_EQ(t.steps[1].delay[0].mean, 50 * kMillisecond);
  EXPECT_EQ(t.steps[1].delay[0].sd, 10 * kMillisecond);
  ASSERT_EQ(t.steps[3].delay.size(), 2u);
  EXPECT_EQ(t.steps[3].delay[1].mean, 12 * kSecond);
  EXPECT_DOUBLE_EQ(t.steps[3].delay[1].weight, 0.15);
  ASSERT_EQ(t.steps[4].extra.size(), 1u);
  EXPECT_EQ(t.steps[4].extra[0].delay, 200 * kMillisecond);
  EXPECT_TRUE(t.has_extra);
}

TEST(ParseGenConfig, NestedCallParentIsClosestOpenCallIntoSender) {
  // C calls B; B calls D, which returns; B calls E: E's call nests in C->B (D's call was
  // answered by an ancestor ret), not in B->D.
  Result<GenConfig> c = ParseGenConfig(R"([[tracelet]]
name = "t"
think = "1s"
steps = [
  { op = "call", from = "C", to = "B", id = "b" },
  { op = "call", from = "B", to = "D", id = "d" },
  { op = "call", from = "D", to = "F", id = "f" },
  { op = "ret", ret = "f" },
  { op = "ret", ret = "d" },
  { op = "call", from = "B", to = "E", id = "e" },
  { op = "ret", ret = "e" },
  { op = "ret", ret = "b" },
]
)",
                                       "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  std::vector<int32_t> parents;
  for (const StepTemplate& s : c->tracelets[0].steps) parents.push_back(s.parent);
  EXPECT_EQ(parents, (std::vector<int32_t>{-1, 0, 1, 2, 1, 0, 5, 0}));
}

TEST(ParseGenConfig, UnknownKey) {
  EXPECT_EQ(ErrorOf("[[tracelet]]\nname = \"t\"\nthinktime = \"1s\"\n"),
            "t.toml:3: unknown key 'thinktime' in [[tracelet]] (known: name, instances, think, "
            "steps, choose)");
  EXPECT_EQ(ErrorOf("sede = 1\n"),
            "t.toml:1: unknown key 'sede' in the top level (known: seed, start, duration, "
            "messages, parallelism, deviation, tracelet, network, timestamps)");
  EXPECT_EQ(ErrorOf("[[tracelet]]\nname = \"t\"\nsteps = [\n"
                    "  { op = \"msg\", from = \"A\", to = \"B\", delai = \"1s\" },\n]\n"),
            "t.toml:4: unknown key 'delai' in a step (known: op, from, to, delay, sd, after, id, "
            "ret, extra)");
}

TEST(ParseGenConfig, BadDuration) {
  EXPECT_EQ(ErrorOf("duration = \"500\"\n"),
            "t.toml:1: duration: bad duration '500' (want a number and a unit: ns, us, ms, s, m, "
            "h)");
  EXPECT_EQ(ErrorOf("[[tracelet]]\nname = \"t\"\nsteps = [\n"
                    "  { op = \"msg\", from = \"A\", to = \"B\", delay = \"5 ms\" },\n]\n"),
            "t.toml:4: delay: bad duration '5 ms' (want a number and a unit: ns, us, ms, s, m, h)");
  EXPECT_EQ(ErrorOf("[[tracelet]]\nname = \"t\"\nthink = [\"2s\", \"1s\"]\n"),
            "t.toml:3: think = [lo, hi] needs lo <= hi");
  EXPECT_EQ(ErrorOf("[[tracelet]]\nname = \"t\"\nsteps = [\n"
                    "  { op = \"msg\", from = \"A\", to = \"B\", delay = \"48h\" },\n]\n"),
            "t.toml:4: delay: '48h' is longer than the limit of 24h00m");
  EXPECT_EQ(ErrorOf("duration = 500\n"),
            "t.toml:1: 'duration' must be a duration string such as \"50ms\"");
}

TEST(ParseGenConfig, UnknownVariable) {
  EXPECT_EQ(ErrorOf("[[tracelet]]\nname = \"t\"\nsteps = [\n"
                    "  { op = \"call\", from = \"C\", to = \"$WS\", id = \"r\" },\n]\n"),
            "t.toml:4: unknown variable '$WS' in 'to' (tracelet 't' has no choose table)");
  EXPECT_EQ(ErrorOf("[[tracelet]]\nname = \"t\"\nchoose.AP = { AP1 = 1 }\nsteps = [\n"
                    "  { op = \"msg\", from = \"$WS\", to = \"B\" },\n]\n"),
            "t.toml:5: unknown variable '$WS' in 'from' (choose defines: AP)");
}

TEST(ParseGenConfig, RetWithoutCall) {
  const std::string head = "[[tracelet]]\nname = \"t\"\nthink = \"1s\"\nsteps = [\n";
  EXPECT_EQ(ErrorOf(head + "  { op = \"call\", from = \"A\", to = \"B\", id = \"b\" },\n"
                           "  { op = \"ret\", ret = \"x\" },\n]\n"),
            "t.toml:6: step 2: ret = 'x' names no step of tracelet 't'");
  EXPECT_EQ(ErrorOf(head + "  { op = \"ret\", ret = \"b\" },\n"
                           "  { op = \"call\", from = \"A\", to = \"B\", id = \"b\" },\n]\n"),
            "t.toml:5: step 1: ret = 'b' names step 2, which does not come before it (a ret must "
            "come after the call it answers)");
  EXPECT_EQ(ErrorOf(head + "  { op = \"call\", from = \"A\", to = \"B\", id = \"b\" },\n"
                           "  { op = \"ret\" },\n]\n"),
            "t.toml:6: step 2: a ret step needs ret = \"<id of the call it answers>\"");
  EXPECT_EQ(ErrorOf(head + "  { op = \"call\", from = \"A\", to = \"B\", id = \"b\" },\n"
                           "  { op = \"msg\", from = \"B\", to = \"A\", id = \"m\" },\n"
                           "  { op = \"ret\", ret = \"m\" },\n]\n"),
            "t.toml:7: step 3: ret = 'm' names a msg step, not a call");
  EXPECT_EQ(ErrorOf(head + "  { op = \"call\", from = \"A\", to = \"B\", id = \"b\" },\n"
                           "  { op = \"ret\", ret = \"b\" },\n"
                           "  { op = \"ret\", ret = \"b\" },\n]\n"),
            "t.toml:7: tracelet 't': step 3: call 'b' is already answered by step 2");
  EXPECT_EQ(ErrorOf(head + "  { op = \"call\", from = \"A\", to = \"B\", id = \"b\" },\n"
                           "  { op = \"call\", from = \"B\", to = \"C\", id = \"c\" },\n"
                           "  { op = \"ret\", ret = \"c\" },\n]\n"),
            "t.toml:5: tracelet 't': step 1 ('b') (A -> B) is never answered: every call needs a "
            "ret step (ret = \"<its id>\") in its tracelet");
  EXPECT_EQ(ErrorOf(head + "  { op = \"call\", from = \"A\", to = \"B\", id = \"b\" },\n"
                           "  { op = \"call\", from = \"B\", to = \"C\", id = \"c\" },\n"
                           "  { op = \"ret\", ret = \"b\", after = \"c\" },\n"
                           "  { op = \"ret\", ret = \"c\" },\n]\n"),
            "t.toml:7: tracelet 't': step 3 returns from call 'b' before its nested step 2 ('c') "
            "is answered (a ret must come after the rets of the calls it made)");
  EXPECT_EQ(
      ErrorOf(head + "  { op = \"call\", from = \"A\", to = \"B\", id = \"a\" },\n"
                     "  { op = \"call\", from = \"B\", to = \"C\", id = \"b\" },\n"
                     "  { op = \"msg\", from = \"B\", to = \"D\", id = \"m\", after = \"a\" },\n"
                     "  { op = \"ret\", ret = \"b\", after = \"m\" },\n]\n"),
      "t.toml:8: tracelet 't': step 4 answers call 'b' but does not come after it (through "
      "'after')");
}

TEST(ParseGenConfig, SecondRootIsRejected) {
  EXPECT_EQ(ErrorOf("[[tracelet]]\nname = \"t\"\nthink = \"1s\"\nsteps = [\n"
                    "  { op = \"call\", from = \"A\", to = \"B\", id = \"b\" },\n"
                    "  { op = \"ret\", ret = \"b\" },\n"
                    "  { op = \"call\", from = \"A\", to = \"B\", id = \"b2\" },\n"
                    "  { op = \"ret\", ret = \"b2\" },\n]\n"),
            "t.toml:7: tracelet 't': step 3 ('b2'): call from 'A' is nested in no open call into "
            "'A' among the steps it comes after; only the first step may start the path");
}

TEST(ParseGenConfig, BadOp) {
  EXPECT_EQ(ErrorOf("[[tracelet]]\nname = \"t\"\nsteps = [\n"
                    "  { op = \"cal\", from = \"A\", to = \"B\" },\n]\n"),
            "t.toml:4: bad op 'cal' in step 1 (want call, ret or msg)");
}

TEST(ParseGenConfig, OtherErrors) {
  EXPECT_EQ(ErrorOf("seed = 1\n"), "t.toml:1: no [[tracelet]] tables: a config needs at least one");
  EXPECT_EQ(ErrorOf("duration = \"1s\"\nmessages = 5\n[[tracelet]]\nname = \"t\"\n"),
            "t.toml:2: give 'duration' or 'messages', not both");
  EXPECT_EQ(ErrorOf("[[tracelet]]\nname = \"t\"\nsteps = [\n"
                    "  { op = \"msg\", from = \"A\", to = \"B\", after = \"z\" },\n]\n"),
            "t.toml:4: step 1: after = 'z' names no step of tracelet 't'");
  EXPECT_EQ(ErrorOf("[[tracelet]]\nname = \"t\"\nsteps = [\n"
                    "  { op = \"msg\", from = \"A\", to = \"B\" },\n]\n"),
            "t.toml:4: tracelet 't': every delay and its think time are zero, so its loop would "
            "never advance in time");
  EXPECT_EQ(ErrorOf("[[tracelet]]\nname = \"t\"\nchoose.WS = { WS1 = 0 }\n"),
            "t.toml:3: weight of 'WS1' in choose.WS must be a positive number");
  // Control characters from the input are escaped: an error stays on one line.
  EXPECT_EQ(ErrorOf("\"a\\nb\" = 1\n"),
            "t.toml:1: unknown key 'a\\x0ab' in the top level (known: seed, start, duration, "
            "messages, parallelism, deviation, tracelet, network, timestamps)");
  // A TOML syntax error names line and column.
  std::string syntax = ErrorOf("seed = \n");
  EXPECT_EQ(syntax.rfind("t.toml:1:", 0), 0u) << syntax;
}

}  // namespace
}  // namespace weft
