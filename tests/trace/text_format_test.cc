#include "trace/text_format.h"

#include <gtest/gtest.h>

#include "trace/binary_format.h"
#include "trace_testing.h"

namespace weft {
namespace {

Trace ParseOk(std::string_view text) {
  auto t = ParseTextTrace(text, "t.trace");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? std::move(t).value() : Trace();
}

std::string ParseError(std::string_view text) {
  auto t = ParseTextTrace(text, "t.trace");
  EXPECT_FALSE(t.ok());
  if (t.ok()) return "";
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  return t.status().message();
}

TEST(ParseTextTrace, Project5Example) {
  Trace t = ParseOk(
      "1047680084.482205\tCALL_SENT\tnodeA\tnodeB\tid37\n"
      "1047680084.483575\tRET_SENT\tnodeB\tnodeA\tid37\n");
  ASSERT_EQ(t.size(), 2u);
  const TraceColumns& c = t.columns();
  EXPECT_EQ(c.send_time, (std::vector<TimeNs>{1047680084482205000, 1047680084483575000}));
  EXPECT_EQ(c.recv_time, (std::vector<TimeNs>{kNoTime, kNoTime}));
  EXPECT_EQ(c.kind, (std::vector<MessageKind>{MessageKind::kCall, MessageKind::kReturn}));
  EXPECT_EQ(t.NodeName(c.sender[0]), "nodeA");
  EXPECT_EQ(t.NodeName(c.receiver[0]), "nodeB");
  EXPECT_EQ(c.sender[1], c.receiver[0]);
  EXPECT_EQ(c.call_id[0], c.call_id[1]);
  EXPECT_EQ(t.strings().Get(c.call_id[0]), "id37");
  EXPECT_EQ(c.bytes, (std::vector<int64_t>{-1, -1}));
  EXPECT_FALSE(t.HasTruth());
}

TEST(ParseTextTrace, EveryFieldAndKey) {
  Trace t = ParseOk(
      "# a comment line\n"
      "\n"
      "   \t \n"
      "1047680084.482205 CALL_SENT nodeA node%20B id%2537 recv=1047680084.482305 bytes=120 "
      "path=3 msg=10 parent=11 stid=7 rtid=9 src=10.0.0.1:40000 dst=10.0.0.2:5432 "
      "http.url=/a%20b%3Dc sql=SELECT%201\n"
      "  # an indented comment\n"
      "1047680084482000000 MSG_SENT client nodeA - msg=11 path=3\n"
      "- RET_SENT node%20B nodeA id%2537 recv=1047680084.483600001 msg=12 parent=10\n"
      "1047680085 MSG_SENT client node%20B\n");
  ASSERT_EQ(t.size(), 4u);
  const TraceColumns& c = t.columns();
  // Sorted: the integer-ns line first ("1047680085" is nanoseconds, the earliest).
  EXPECT_EQ(c.send_time,
            (std::vector<TimeNs>{1047680085, 1047680084482000000, 1047680084482205000, kNoTime}));
  EXPECT_EQ(c.recv_time,
            (std::vector<TimeNs>{kNoTime, kNoTime, 1047680084482305000, 1047680084483600001}));
  EXPECT_EQ(t.NodeName(c.sender[2]), "nodeA");
  EXPECT_EQ(t.NodeName(c.receiver[2]), "node B");
  EXPECT_EQ(t.NodeName(c.sender[3]), "node B");
  EXPECT_EQ(c.kind, (std::vector<MessageKind>{MessageKind::kMessage, MessageKind::kMessage,
                                              MessageKind::kCall, MessageKind::kReturn}));
  EXPECT_FALSE(c.call_id[0].valid());
  EXPECT_FALSE(c.call_id[1].valid());
  EXPECT_EQ(t.strings().Get(c.call_id[2]), "id%37");
  EXPECT_EQ(c.call_id[3], c.call_id[2]);
  EXPECT_EQ(c.bytes, (std::vector<int64_t>{-1, -1, 120, -1}));
  EXPECT_EQ(c.truth_path, (std::vector<PathId>{PathId(), PathId(3), PathId(3), PathId()}));
  // parent=11 refers forward to a later line; after sorting the labels become MessageIds.
  EXPECT_EQ(c.truth_parent,
            (std::vector<MessageId>{MessageId(), MessageId(), MessageId(1), MessageId(2)}));
  EXPECT_EQ(c.sender_thread,
            (std::vector<ThreadId>{ThreadId(), ThreadId(), ThreadId(7), ThreadId()}));
  EXPECT_EQ(c.receiver_thread,
            (std::vector<ThreadId>{ThreadId(), ThreadId(), ThreadId(9), ThreadId()}));
  EXPECT_EQ(t.strings().Get(c.sender_endpoint[2]), "10.0.0.1:40000");
  EXPECT_EQ(t.strings().Get(c.receiver_endpoint[2]), "10.0.0.2:5432");
  EXPECT_FALSE(c.sender_endpoint[3].valid());
  ASSERT_EQ(t.attributes().size(), 2u);
  EXPECT_EQ(t.attributes()[0].message, MessageId(2));
  EXPECT_EQ(t.strings().Get(t.attributes()[0].key), "http.url");
  EXPECT_EQ(t.strings().Get(t.attributes()[0].value), "/a b=c");
  EXPECT_EQ(t.strings().Get(t.attributes()[1].key), "sql");
  EXPECT_EQ(t.strings().Get(t.attributes()[1].value), "SELECT 1");
}

TEST(ParseTextTrace, ExampleFromTheDocumentation) {
  // docs/formats.md, "Text message trace".
  Trace t = ParseOk(
      "# weft text trace: timestamp op sender receiver id [key=value ...]\n"
      "1047680084.482205 CALL_SENT nodeA nodeB id37 msg=0\n"
      "1047680084.483575 RET_SENT nodeB nodeA id37 msg=1 parent=0\n"
      "- MSG_SENT client web%201 - recv=1047680085.000000001 bytes=512 path=4 msg=2 stid=17 "
      "dst=10.0.0.2:80 http.url=/a%20b\n");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t.columns().truth_parent[1], MessageId(0));
  EXPECT_EQ(t.columns().recv_time[2], 1047680085000000001);
  EXPECT_EQ(t.NodeName(t.columns().receiver[2]), "web 1");
  EXPECT_EQ(t.columns().sender_thread[2], ThreadId(17));
  ASSERT_EQ(t.attributes().size(), 1u);
  EXPECT_EQ(t.strings().Get(t.attributes()[0].value), "/a b");
}

TEST(ParseTextTrace, TimestampForms) {
  Trace t = ParseOk(
      "5.5 MSG_SENT a b\n"
      "5.000000001 MSG_SENT a b\n"
      "-3 MSG_SENT a b\n"
      "-0.25 MSG_SENT a b\n"
      "7000000000 MSG_SENT a b recv=7.5\n");
  EXPECT_EQ(t.columns().send_time,
            (std::vector<TimeNs>{-250000000, -3, 5000000001, 5500000000, 7000000000}));
  EXPECT_EQ(t.columns().recv_time[4], 7500000000);
}

TEST(ParseTextTrace, WindowsLineEndings) {
  Trace t = ParseOk("1.0 MSG_SENT a b x\r\n2.0 MSG_SENT b a y bytes=3\r\n");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.strings().Get(t.columns().call_id[0]), "x");
  EXPECT_EQ(t.columns().bytes[1], 3);
  EXPECT_EQ(t.NodeName(t.columns().receiver[1]), "a");
}

TEST(ParseTextTrace, EmptyInputIsAnEmptyTrace) {
  EXPECT_EQ(ParseOk("").size(), 0u);
  EXPECT_EQ(ParseOk("# only a comment\n\n").size(), 0u);
}

TEST(ParseTextTrace, Errors) {
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b\n\n1.1 CAL_SENT a b id1\n"),
            "t.trace:3: unknown op 'CAL_SENT' (want CALL_SENT, RET_SENT, MSG_SENT, FORK, EXEC, "
            "THREAD or HANDOFF)");
  EXPECT_EQ(ParseError("# x\n1.0 MSG_SENT a\n"),
            "t.trace:2: too few fields (want: timestamp op sender receiver [id] [key=value ...])");
  EXPECT_EQ(ParseError("1.0\n"),
            "t.trace:1: too few fields (want: timestamp op sender receiver [id] [key=value ...])");
  EXPECT_EQ(ParseError("1.0x MSG_SENT a b\n"), "t.trace:1: bad timestamp '1.0x'");
  EXPECT_EQ(ParseError("1. MSG_SENT a b\n"), "t.trace:1: bad timestamp '1.'");
  EXPECT_EQ(ParseError("1.0000000001 MSG_SENT a b\n"),
            "t.trace:1: timestamp '1.0000000001' is finer than a nanosecond");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b recv=soon\n"), "t.trace:1: bad timestamp 'soon'");
  EXPECT_EQ(ParseError("--5 MSG_SENT a b\n"), "t.trace:1: bad timestamp '--5'");
  EXPECT_EQ(ParseError("9223372036854775808 MSG_SENT a b\n"),
            "t.trace:1: bad timestamp '9223372036854775808'");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b bytes=12k\n"), "t.trace:1: bad value in bytes=12k");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b bytes=-4\n"), "t.trace:1: bad value in bytes=-4");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b path=x\n"), "t.trace:1: bad value in path=x");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b path=4294967295\n"),
            "t.trace:1: bad value in path=4294967295");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b stid=-1\n"), "t.trace:1: bad value in stid=-1");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b rtid=\n"), "t.trace:1: bad value in rtid=");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b msg=one\n"), "t.trace:1: bad value in msg=one");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b url=%4\n"), "t.trace:1: bad value in url=%4");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b src=%zz\n"), "t.trace:1: bad value in src=%zz");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b =v\n"), "t.trace:1: empty key in '=v'");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b id1 extra\n"), "t.trace:1: 'extra' is not key=value");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a%2 b\n"), "t.trace:1: bad escape in sender 'a%2'");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b%g0\n"), "t.trace:1: bad escape in receiver 'b%g0'");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b id%\n"), "t.trace:1: bad escape in call id 'id%'");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b\n- MSG_SENT a b bytes=1\n"),
            "t.trace:2: timestamp is '-' and there is no recv=");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b msg=1\n2.0 MSG_SENT a b parent=7\n"),
            "t.trace:2: parent=7 names no msg= in the input");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b msg=1\n2.0 MSG_SENT a b msg=2\n3.0 MSG_SENT a b msg=1\n"),
            "t.trace:3: msg=1 appears twice");
  EXPECT_EQ(ParseError("1.0 MSG_SENT a b msg=4 parent=4\n"),
            "t.trace:1: parent=4 names the message itself");
}

TEST(FormatTextTrace, ExactOutput) {
  TraceBuilder b;
  MessageRecord m;
  m.send_time = 1047680084482205000;
  m.sender = b.Node("node A");
  m.receiver = b.Node("B");
  m.kind = MessageKind::kCall;
  m.call_id = b.String("id37");
  uint32_t first = b.Add(m);
  m.send_time = kNoTime;
  m.recv_time = 1047680084483600001;
  std::swap(m.sender, m.receiver);
  m.kind = MessageKind::kReturn;
  m.bytes = 0;
  m.truth_path = PathId(2);
  m.sender_thread = ThreadId(4);
  m.receiver_endpoint = b.String("h:80");
  uint32_t second = b.Add(m);
  b.SetParent(second, first);
  b.AddAttribute(second, b.String("recv"), b.String("50%=half"));
  auto t = std::move(b).Finish();
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(FormatTextTrace(*t),
            "# weft text trace: timestamp op sender receiver id [key=value ...]\n"
            "1047680084.482205000 CALL_SENT node%20A B id37 msg=0\n"
            "- RET_SENT B node%20A id37 recv=1047680084.483600001 bytes=0 path=2 msg=1 "
            "parent=0 stid=4 dst=h:80 %72ecv=50%25%3Dhalf\n");
}

TEST(FormatTextTrace, RoundTripKeepsEveryColumnAndAttribute) {
  Trace original = testing::SampleTrace();
  std::string text = FormatTextTrace(original);
  Trace parsed = ParseOk(text);
  testing::ExpectSameMessages(original, parsed);
  // And formatting is stable.
  EXPECT_EQ(FormatTextTrace(parsed), text);
}

TEST(FormatTextTrace, RoundTripOfAwkwardStrings) {
  TraceBuilder b;
  MessageRecord m;
  m.send_time = 1;
  m.sender = b.Node("#not-a-comment");
  m.receiver = b.Node("tab\there\nnewline");
  m.call_id = b.String("-");  // a real call id spelled like "none"
  m.sender_endpoint = b.String("a=b");
  uint32_t row = b.Add(m);
  b.AddAttribute(row, b.String("msg"), b.String(""));
  b.AddAttribute(row, b.String("k=ey"), b.String("\x7f%"));
  auto t = std::move(b).Finish();
  ASSERT_TRUE(t.ok());
  Trace parsed = ParseOk(FormatTextTrace(*t));
  testing::ExpectSameMessages(*t, parsed);
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// Process links (fork, exec, thread) are lines of their own, in time order among the messages, and
// survive both encodings.
TEST(FormatTextTrace, ProcessLinksRoundTrip) {
  const std::string text =
      "# weft text trace: timestamp op sender receiver id [key=value ...]\n"
      "1.000000000 CALL_SENT c web - stid=7 rtid=1\n"
      "1.500000000 FORK web web stid=1 rtid=50\n"
      "1.600000000 EXEC web cgi%20x stid=50 rtid=50\n"
      "1.700000000 THREAD cgi%20x cgi%20x stid=50 rtid=51\n"
      "2.000000000 CALL_SENT cgi%20x db - stid=51\n"
      "3.000000000 EXEC cgi%20x sh stid=50 rtid=50\n";
  Trace t = ParseOk(text);
  ASSERT_EQ(t.process_links().size(), 4u);
  const ProcessLink& fork = t.process_links()[0];
  EXPECT_EQ(fork.kind, ProcessLinkKind::kFork);
  EXPECT_EQ(fork.time, 1'500'000'000);
  EXPECT_EQ(t.NodeName(fork.from), "web");
  EXPECT_EQ(fork.from_thread, ThreadId(1));
  EXPECT_EQ(fork.to_thread, ThreadId(50));
  EXPECT_EQ(t.NodeName(t.process_links()[1].to), "cgi x");
  const ProcessLink& thread = t.process_links()[2];
  EXPECT_EQ(thread.kind, ProcessLinkKind::kThread);
  EXPECT_EQ(thread.from, thread.to);
  EXPECT_EQ(thread.from_thread, ThreadId(50));
  EXPECT_EQ(thread.to_thread, ThreadId(51));
  EXPECT_EQ(FormatTextTrace(t), text);
  const std::string bytes = EncodeBinaryTrace(t);
  Result<Trace> binary = DecodeBinaryTrace(
      std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), "t.weft");
  ASSERT_TRUE(binary.ok()) << binary.status().message();
  EXPECT_EQ(FormatTextTrace(*binary), text);
  // The section count at byte 32: the 16 required sections and process_links; a trace
  // without links is written as before links existed, with 16.
  auto section_count = [](const std::string& file) {
    return uint8_t(file[32]) | uint32_t(uint8_t(file[33])) << 8;
  };
  EXPECT_EQ(section_count(bytes), 17u);
  EXPECT_EQ(section_count(EncodeBinaryTrace(ParseOk("1.0 MSG_SENT a b\n"))), 16u);

  EXPECT_EQ(ParseError("- FORK a b stid=1 rtid=2\n"), "t.trace:1: a FORK line needs a timestamp");
  EXPECT_EQ(ParseError("1.0 EXEC a b stid=1\n"),
            "t.trace:1: a EXEC line needs stid= and rtid= (non-zero)");
  EXPECT_EQ(ParseError("1.0 FORK a b stid=1 rtid=2 bytes=3\n"),
            "t.trace:1: 'bytes=3' on a FORK line (want stid=N rtid=N)");
  EXPECT_EQ(ParseError("1.0 FORK a b stid=x rtid=2\n"), "t.trace:1: bad value in stid=x");
  EXPECT_EQ(ParseError("1.0 THREAD a a stid=1 rtid=0\n"),
            "t.trace:1: a THREAD line needs stid= and rtid= (non-zero)");
  EXPECT_EQ(ParseError("1.0 SPAWN a a stid=1 rtid=2\n"),
            "t.trace:1: unknown op 'SPAWN' (want CALL_SENT, RET_SENT, MSG_SENT, FORK, EXEC, THREAD "
            "or HANDOFF)");
}

// A HANDOFF line carries when the consumer took the work over (recv=) and whether the
// link was a guess; both survive both encodings.
TEST(FormatTextTrace, HandoffLinksRoundTrip) {
  const std::string text =
      "# weft text trace: timestamp op sender receiver id [key=value ...]\n"
      "1.000000000 CALL_SENT c web - stid=7 rtid=1\n"
      "1.000100000 HANDOFF web web stid=1 rtid=2 recv=1.000350000\n"
      "1.000400000 HANDOFF web web stid=2 rtid=3 recv=1.000400000 ambiguous=1\n"
      "1.000500000 CALL_SENT web db - stid=2\n";
  Trace t = ParseOk(text);
  ASSERT_EQ(t.process_links().size(), 2u);
  const ProcessLink& queue = t.process_links()[0];
  EXPECT_EQ(queue.kind, ProcessLinkKind::kHandoff);
  EXPECT_EQ(queue.time, 1'000'100'000);
  EXPECT_EQ(queue.TakenAt(), 1'000'350'000);
  EXPECT_FALSE(queue.ambiguous);
  EXPECT_TRUE(t.process_links()[1].ambiguous);
  EXPECT_EQ(FormatTextTrace(t), text);
  const std::string bytes = EncodeBinaryTrace(t);
  Result<Trace> binary = DecodeBinaryTrace(
      std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), "t.weft");
  ASSERT_TRUE(binary.ok()) << binary.status().message();
  EXPECT_EQ(FormatTextTrace(*binary), text);

  EXPECT_EQ(ParseError("1.0 HANDOFF a a stid=1 rtid=2\n"),
            "t.trace:1: a HANDOFF line needs recv= at or after its timestamp");
  EXPECT_EQ(ParseError("2.0 HANDOFF a a stid=1 rtid=2 recv=1.0\n"),
            "t.trace:1: a HANDOFF line needs recv= at or after its timestamp");
  EXPECT_EQ(ParseError("1.0 FORK a a stid=1 rtid=2 recv=1.0\n"),
            "t.trace:1: 'recv=1.0' on a FORK line (want stid=N rtid=N)");
}

// A HANDOFF line may name the messages its work goes with (from_msg=, to_msg=: message
// lines counted from 0); they survive both encodings, follow their messages when the file
// is out of time order, and must exist.
TEST(FormatTextTrace, HandoffLinksNameTheirMessages) {
  const std::string text =
      "# weft text trace: timestamp op sender receiver id [key=value ...]\n"
      "1.000000000 CALL_SENT c web c1 recv=1.000050000 stid=7 rtid=1\n"
      "1.000050000 HANDOFF web web stid=1 rtid=2 recv=1.000100000 from_msg=0\n"
      "1.000200000 HANDOFF web web stid=2 rtid=3 recv=1.000300000 to_msg=1\n"
      "1.000300000 CALL_SENT web db c2 stid=3\n";
  Trace t = ParseOk(text);
  ASSERT_EQ(t.process_links().size(), 2u);
  EXPECT_EQ(t.process_links()[0].from_message, MessageId(0));
  EXPECT_FALSE(t.process_links()[0].to_message.valid());
  EXPECT_EQ(t.process_links()[1].to_message, MessageId(1));
  EXPECT_EQ(FormatTextTrace(t), text);
  const std::string bytes = EncodeBinaryTrace(t);
  Result<Trace> binary = DecodeBinaryTrace(
      std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), "t.weft");
  ASSERT_TRUE(binary.ok()) << binary.status().message();
  EXPECT_EQ(FormatTextTrace(*binary), text);

  // Messages out of time order: the link still names the same message once sorted.
  Trace sorted = ParseOk(
      "2.0 CALL_SENT web db c2 stid=3\n"
      "1.5 HANDOFF web web stid=2 rtid=3 recv=2.0 to_msg=0\n"
      "1.0 CALL_SENT c web c1 recv=1.1 stid=7 rtid=1\n");
  ASSERT_EQ(sorted.process_links().size(), 1u);
  EXPECT_EQ(
      sorted.strings().Get(sorted.columns().call_id[sorted.process_links()[0].to_message.value()]),
      "c2");

  EXPECT_EQ(ParseError("1.0 CALL_SENT a b c1 stid=1\n"
                       "1.0 HANDOFF a a stid=1 rtid=2 recv=1.0 to_msg=1\n"),
            "t.trace:2: a HANDOFF line names message 1, but there are 1");
  EXPECT_EQ(ParseError("1.0 HANDOFF a a stid=1 rtid=2 recv=1.0 to_msg=x\n"),
            "t.trace:1: bad value in to_msg=x");
}

}  // namespace
}  // namespace weft
