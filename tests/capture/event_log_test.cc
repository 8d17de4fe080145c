#include "capture/event_log.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "capture/program_name.h"
#include "event_log_writer.h"

namespace weft::capture {
namespace {

using namespace weft::capture::testing;

struct RecordingReporter : Reporter {
  std::vector<std::string> lines;
  uint64_t bytes = 0;
  void Lost(uint64_t offset, uint64_t n, std::string_view reason) override {
    lines.push_back(fmt::format("{} {} {}", offset, n, reason));
    bytes += n;
  }
};

Result<EventLog> Decode(const std::string& file, Reporter* reporter = nullptr) {
  return DecodeEventLog({reinterpret_cast<const uint8_t*>(file.data()), file.size()}, "x.wev",
                        reporter);
}

// A log with two threads' blocks and an end record: every field comes back.
std::string TwoThreadLog() {
  std::string file = EncodeHeader(TestHeader{});
  file +=
      Block(101, 0,
            {CallRecord(w::kOpSocket, 5, 100, 110, 5), CallRecord(w::kOpConnect, 5, 120, 150, 0),
             TcpEndpointRecord(w::kOpConnect, 5, 150, 40000, 8080),
             CallRecord(w::kOpSend, 5, 200, 210, 11), PayloadRecord(w::kOpSend, 5, "GET /x\r\n")});
  file += Block(102, 3,
                {CallRecord(w::kOpRecv, 7, 190, 400, 17),
                 DatagramRecord(w::kOpSendto, 9, 300, 64, 0xabcdef0123456789ULL, 53),
                 UnixEndpointRecord(11, 310, "/run/db.sock", 999)});
  file += Block(0, 0, {EndRecord(4, 12, 1)});
  return file;
}

TEST(ProgramNameTest, IsArgvZerosBasenameWhenPlainElseTheExecutables) {
  auto name = [](std::string_view exe, std::string_view argv0) {
    ProgramNameText n = ProgramName(exe.data(), exe.size(), argv0.data(), argv0.size());
    return std::string(n.data, n.size);
  };
  EXPECT_EQ(name("/usr/bin/redis-check-rdb", "/usr/bin/redis-server"), "redis-server");
  EXPECT_EQ(name("/usr/bin/python3.11", "python3"), "python3");
  EXPECT_EQ(name("/opt/srv/bin/srv", "./srv_2.0+dbg"), "srv_2.0+dbg");
  // A command line the program rewrote, a login shell's, none, or one ending in '/'.
  EXPECT_EQ(name("/usr/sbin/nginx", "nginx: worker process"), "nginx");
  EXPECT_EQ(name("/usr/sbin/sshd", "sshd: root@pts/0"), "sshd");
  EXPECT_EQ(name("/usr/bin/bash", "-bash"), "bash");
  EXPECT_EQ(name("/usr/bin/probe", ""), "probe");
  EXPECT_EQ(name("/usr/bin/probe", "/tmp/"), "probe");
  EXPECT_EQ(name("", ""), "");
}

TEST(EventLogTest, RoundTripsEveryField) {
  RecordingReporter reporter;
  auto log = Decode(TwoThreadLog(), &reporter);
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_TRUE(reporter.lines.empty());
  EXPECT_EQ(log->header.pid, 4242);
  EXPECT_EQ(log->header.parent_pid, 4241);
  EXPECT_EQ(log->header.host, "testhost");
  EXPECT_EQ(log->header.executable, "/usr/bin/probe");
  EXPECT_EQ(log->header.arguments, (std::vector<std::string>{"probe", "--flag"}));
  EXPECT_EQ(ProgramName(*log), "probe");
  EXPECT_EQ(log->header.boot_id[15], 16);
  EXPECT_EQ(log->header.clock_uncertainty_ns, 40);
  EXPECT_EQ(log->ToRealtime(1'000'000'123), 1'700'000'000'000'000'123);
  EXPECT_EQ(log->blocks, 3u);
  ASSERT_EQ(log->events.size(), 7u);
  // Sorted by entry time across the two threads.
  std::vector<int64_t> entries;
  for (const Event& e : log->events) entries.push_back(e.entry_ns);
  EXPECT_EQ(entries, (std::vector<int64_t>{100, 120, 150, 190, 200, 300, 310}));
  const Event& send = log->events[4];
  EXPECT_EQ(send.op, EventOp::kSend);
  EXPECT_EQ(send.tid, 101);
  EXPECT_EQ(send.result, 11);
  ASSERT_NE(send.payload, kNone);
  EXPECT_EQ(log->payloads[send.payload], "GET /x\r\n");
  const Event& named = log->events[2];
  ASSERT_EQ(named.op, EventOp::kEndpoint);
  EXPECT_EQ(named.arg, w::kOpConnect);
  const Endpoint& ep = log->endpoints[named.endpoint];
  EXPECT_EQ(FormatAddress(ep.local), "127.0.0.1:40000");
  EXPECT_EQ(FormatAddress(ep.peer), "127.0.0.1:8080");
  EXPECT_EQ(ep.kind, w::kKindTcp);
  EXPECT_EQ(ep.inode, 777u);
  const Event& datagram = log->events[5];
  EXPECT_TRUE(datagram.datagram);
  EXPECT_EQ(datagram.payload_hash, 0xabcdef0123456789ULL);
  EXPECT_EQ(FormatAddress(log->addresses[datagram.peer]), "127.0.0.1:53");
  const Endpoint& unix_ep = log->endpoints[log->events[6].endpoint];
  EXPECT_EQ(FormatAddress(unix_ep.peer), "unix:/run/db.sock");
  EXPECT_EQ(unix_ep.peer_pid, 999);
  EXPECT_TRUE(log->loss.has_end_record);
  EXPECT_EQ(log->loss.dropped_events, 4u);
  EXPECT_EQ(log->loss.untraced_io_calls, 12u);
  EXPECT_EQ(log->loss.failed_writes, 1u);
  EXPECT_EQ(log->loss.truncated_bytes, 0u);
}

// Cut at every byte after the header: the reader keeps exactly the whole records before
// the cut and counts every byte after the last of them.
// End records of every size a writer has used: 72 bytes (with split_waits), 64 (event
// isolation without it) and 40 (before event isolation); the counters a record lacks are 0.
// Empty arguments are arguments: a log written before the preload library dropped the
// NULs that pad a rewritten command line (php-fpm's workers') listed one for each NUL, and
// was refused as corrupt.
TEST(EventLogTest, EmptyArgumentsAreKept) {
  for (const std::vector<std::string>& arguments :
       {std::vector<std::string>{"php-fpm: pool www", "", ""}, {"a", "", "b"}, {"", ""}, {}}) {
    TestHeader header;
    header.arguments = arguments;
    auto log = Decode(EncodeHeader(header) + Block(0, 0, {EndRecord(0, 0, 0)}));
    ASSERT_TRUE(log.ok()) << log.status().message();
    EXPECT_EQ(log->header.arguments, arguments);
  }
}

TEST(EventLogTest, EndRecordsOfOlderSizesReadTheirCounters) {
  w::EndRecord r{
      w::kEndRecord, w::kOpNone, sizeof(w::EndRecord), 0, 5'000'000'000, 4, 12, 1, 7, 8, 9, 10};
  for (uint16_t size : {72, 64, 40}) {
    SCOPED_TRACE(size);
    r.size = size;
    std::string record(reinterpret_cast<const char*>(&r), size);
    auto log = Decode(EncodeHeader(TestHeader{}) + Block(0, 0, {record}));
    ASSERT_TRUE(log.ok()) << log.status().message();
    EXPECT_TRUE(log->loss.has_end_record);
    EXPECT_EQ(log->loss.failed_writes, 1u);
    EXPECT_EQ(log->loss.isolated_reads, size >= 64 ? 7u : 0u);
    EXPECT_EQ(log->loss.held_bytes, size >= 64 ? 9u : 0u);
    EXPECT_EQ(log->loss.split_waits, size >= 72 ? 10u : 0u);
  }
}

TEST(EventLogTest, LogCutAnywhereKeepsEveryWholeRecord) {
  std::string header = EncodeHeader(TestHeader{});
  std::vector<std::string> records;
  for (int i = 0; i < 6; ++i) records.push_back(CallRecord(w::kOpSend, 5, 100 + i, 105 + i, i + 1));
  std::string full = header + Block(7, 0, records);
  for (size_t cut = header.size(); cut <= full.size(); ++cut) {
    RecordingReporter reporter;
    auto log = Decode(full.substr(0, cut), &reporter);
    ASSERT_TRUE(log.ok()) << cut;
    size_t payload = cut - header.size();
    size_t whole = payload < 32 ? 0 : (payload - 32) / 32;
    EXPECT_EQ(log->events.size(), whole) << "cut at " << cut;
    size_t lost = payload == 0 ? 0 : (payload < 32 ? payload : (payload - 32) % 32);
    if (cut == full.size()) lost = 0;
    EXPECT_EQ(log->loss.truncated_bytes, lost) << "cut at " << cut;
    EXPECT_EQ(reporter.bytes, lost);
    for (size_t i = 0; i < whole; ++i) EXPECT_EQ(log->events[i].result, int32_t(i + 1));
    EXPECT_FALSE(log->loss.has_end_record);
  }
}

// A block that fails its checksum (one flipped byte) is skipped; the next one is read.
TEST(EventLogTest, CorruptBlockIsSkippedAndCounted) {
  std::string header = EncodeHeader(TestHeader{});
  std::string first =
      Block(7, 0, {CallRecord(w::kOpSend, 5, 1, 2, 10), CallRecord(w::kOpSend, 5, 3, 4, 20)});
  std::string second = Block(7, 2, {CallRecord(w::kOpRecv, 5, 5, 6, 30)});
  std::string file = header + first + second;
  file[header.size() + 32 + 24] ^= 0x40;  // the first record's result
  RecordingReporter reporter;
  auto log = Decode(file, &reporter);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->events.size(), 1u);
  EXPECT_EQ(log->events[0].result, 30);
  EXPECT_EQ(log->loss.corrupt_blocks, 1u);
  EXPECT_EQ(log->loss.corrupt_bytes, first.size());
  EXPECT_EQ(log->loss.dropped_events, 2u);
  ASSERT_EQ(reporter.lines.size(), 1u);
  EXPECT_NE(reporter.lines[0].find("checksum mismatch"), std::string::npos);
}

// A write cut short in the middle of the file (full disk, then space again): the partial
// block is skipped up to the next block header.
TEST(EventLogTest, PartialBlockInTheMiddleIsSkipped) {
  std::string header = EncodeHeader(TestHeader{});
  std::string partial =
      Block(7, 0, {CallRecord(w::kOpSend, 5, 1, 2, 10), CallRecord(w::kOpSend, 5, 3, 4, 20)});
  partial.resize(50);
  std::string file = header + partial + Block(8, 2, {CallRecord(w::kOpRecv, 5, 5, 6, 30)});
  auto log = Decode(file);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->events.size(), 1u);
  EXPECT_EQ(log->events[0].tid, 8);
  EXPECT_EQ(log->loss.corrupt_bytes, 50u);
}

TEST(EventLogTest, DamagedHeaderIsAOneLineError) {
  std::string good = TwoThreadLog();
  auto message = [](const std::string& file) {
    auto log = Decode(file);
    EXPECT_FALSE(log.ok());
    return log.ok() ? std::string() : log.status().message();
  };
  std::string bad_magic = good;
  bad_magic[1] = 'X';
  EXPECT_EQ(message(bad_magic), "x.wev: not a weft event log (bad magic at byte 0)");
  EXPECT_EQ(message(good.substr(0, 40)),
            "x.wev: truncated: 40 bytes, shorter than the 96-byte header");
  std::string version = good;
  version[8] = 9;
  EXPECT_EQ(message(version),
            "x.wev: unsupported version 9 at byte 8 (this weft reads versions 1 and 2)");
  std::string flipped = good;
  flipped[17] ^= 1;  // pid
  EXPECT_EQ(message(flipped).rfind("x.wev: header checksum mismatch (recorded ", 0), 0u);
  EXPECT_EQ(message(good.substr(0, 100)),
            "x.wev: truncated: the 136-byte header is cut at byte 100");
  EXPECT_EQ(message(""), "x.wev: not a weft event log (bad magic at byte 0)");
}

TEST(EventLogTest, UnknownRecordTypesAreSkippedBySize) {
  std::string unknown(24, '\0');
  unknown[0] = 77;
  unknown[2] = 24;
  std::string file =
      EncodeHeader(TestHeader{}) + Block(3, 0, {unknown, CallRecord(w::kOpClose, 5, 9, 10, 0)});
  auto log = Decode(file);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->events.size(), 1u);
  EXPECT_EQ(log->events[0].op, EventOp::kClose);
}

// A Go program's log says so (ImageRecord): none of its I/O can be in it. A runtime this
// reader does not know is a damaged record, not a silent Go.
TEST(EventLogTest, ImageRecordMarksAGoProgram) {
  std::string file =
      EncodeHeader(TestHeader{}) +
      Block(3, 0, {ImageRecord(w::kRuntimeGo, 90), CallRecord(w::kOpClose, 5, 9, 10, 0)});
  auto log = Decode(file);
  ASSERT_TRUE(log.ok());
  EXPECT_TRUE(log->loss.go_runtime);
  EXPECT_EQ(log->events.size(), 1u);

  auto plain =
      Decode(EncodeHeader(TestHeader{}) + Block(3, 0, {CallRecord(w::kOpClose, 5, 9, 10, 0)}));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->loss.go_runtime);

  RecordingReporter reporter;
  auto unknown = Decode(EncodeHeader(TestHeader{}) + Block(3, 0, {ImageRecord(7, 90)}), &reporter);
  ASSERT_TRUE(unknown.ok());
  EXPECT_FALSE(unknown->loss.go_runtime);
  EXPECT_EQ(reporter.lines.size(), 1u);
}

// Boundary records (a protocol message ended) come back with their attributes, each right
// after the call that moved the message's last byte.
TEST(EventLogTest, BoundaryRecordsRoundTrip) {
  std::string attributes("http.method=GET\0http.url=/a?b=c\0", 32);
  std::string file = EncodeHeader(TestHeader{}) +
                     Block(7, 0,
                           {CallRecord(w::kOpRecv, 5, 100, 120, 60),
                            BoundaryRecord(5, 100, 120, 25, 1, false, true, attributes),
                            BoundaryRecord(5, 100, 120, 60, 1, false, true, ""),
                            CallRecord(w::kOpSend, 5, 90, 95, 10)});
  RecordingReporter reporter;
  auto log = Decode(file, &reporter);
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_TRUE(reporter.lines.empty());
  ASSERT_EQ(log->events.size(), 4u);
  EXPECT_EQ(log->events[0].op, EventOp::kSend);
  EXPECT_EQ(log->events[1].op, EventOp::kRecv);
  ASSERT_EQ(log->events[2].op, EventOp::kBoundary);
  ASSERT_EQ(log->events[3].op, EventOp::kBoundary);
  EXPECT_EQ(log->events[2].fd, 5);
  EXPECT_EQ(log->events[2].entry_ns, 100);
  EXPECT_EQ(log->events[2].exit_ns, 120);
  ASSERT_EQ(log->boundaries.size(), 2u);
  const Boundary& b = log->boundaries[size_t(log->events[2].boundary)];
  EXPECT_EQ(b.protocol, 1);
  EXPECT_FALSE(b.sent);
  EXPECT_TRUE(b.request);
  EXPECT_EQ(b.offset, 25u);
  EXPECT_EQ(b.attributes, (std::vector<std::pair<std::string, std::string>>{
                              {"http.method", "GET"}, {"http.url", "/a?b=c"}}));
  EXPECT_TRUE(log->boundaries[size_t(log->events[3].boundary)].attributes.empty());
  EXPECT_EQ(FormatEvent(*log, log->events[2]),
            "1699999999.000000100 4242/7 boundary fd 5 http request received ends at 25 "
            "http.method=\"GET\" http.url=\"/a?b=c\"");
}

// Header-block records (HTTP/2's compressed header blocks) come back as kHeaderBlock events
// with their bytes and stream offset; damaged ones are reported like any record.
TEST(EventLogTest, HeaderBlockRecordsRoundTrip) {
  std::string bytes("\x82\x86\x84\x41\0x", 6);  // NUL bytes are kept
  std::string file = EncodeHeader(TestHeader{}) +
                     Block(7, 0,
                           {CallRecord(w::kOpSend, 5, 100, 120, 60),
                            HeaderBlockRecord(5, 100, 33, true, true, bytes),
                            BoundaryRecord(5, 100, 120, 45, protocols::kHttp2, true, true, "")});
  RecordingReporter reporter;
  auto log = Decode(file, &reporter);
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_TRUE(reporter.lines.empty());
  ASSERT_EQ(log->events.size(), 3u);
  ASSERT_EQ(log->events[1].op, EventOp::kHeaderBlock);
  EXPECT_EQ(log->events[1].fd, 5);
  const Boundary& b = log->boundaries[size_t(log->events[1].boundary)];
  EXPECT_EQ(b.protocol, protocols::kHttp2);
  EXPECT_TRUE(b.sent);
  EXPECT_TRUE(b.request);
  EXPECT_EQ(b.offset, 33u);
  EXPECT_EQ(b.header_block, bytes);
  EXPECT_EQ(FormatEvent(*log, log->events[1]),
            "1699999999.000000100 4242/7 header-block fd 5 http2 request sent 6 bytes at 33");
  for (std::string damaged : {HeaderBlockRecord(5, 100, 33, true, true, ""),
                              HeaderBlockRecord(5, 100, 33, true, true, "ab", 0),
                              HeaderBlockRecord(5, 100, 33, true, true, "ab", 200)}) {
    std::string damaged_file = EncodeHeader(TestHeader{}) +
                               Block(7, 0, {CallRecord(w::kOpSend, 5, 100, 120, 60), damaged});
    RecordingReporter damage;
    auto damaged_log = Decode(damaged_file, &damage);
    ASSERT_TRUE(damaged_log.ok());
    EXPECT_EQ(damaged_log->events.size(), 1u);
    EXPECT_EQ(damage.lines.size(), 1u);
  }
}

// An HTTP/2 frame record reads as the boundary a record with the http2 processor's
// attributes would be; one that no HTTP/2 frame end could have made is damage.
TEST(EventLogTest, Http2FrameRecordsReadAsBoundaries) {
  std::string file = EncodeHeader(TestHeader{}) +
                     Block(7, 0,
                           {CallRecord(w::kOpRecv, 5, 100, 120, 60),
                            Http2FrameRecord(5, 100, 120, 45, false, true, 1, 0x5, 3, 12),
                            Http2FrameRecord(5, 100, 120, 60, false, false, 5, 0x4, 3, 6, 4),
                            Http2FrameRecord(5, 100, 120, 80, true, false, 4, 0, 0, 6, 65536)});
  RecordingReporter reporter;
  auto log = Decode(file, &reporter);
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_TRUE(reporter.lines.empty());
  ASSERT_EQ(log->events.size(), 4u);
  ASSERT_EQ(log->events[1].op, EventOp::kBoundary);
  const Boundary& b = log->boundaries[size_t(log->events[1].boundary)];
  EXPECT_EQ(b.protocol, protocols::kHttp2);
  EXPECT_FALSE(b.sent);
  EXPECT_TRUE(b.request);
  EXPECT_EQ(b.offset, 45u);
  EXPECT_EQ(log->events[1].exit_ns, 120);
  EXPECT_EQ(FormatEvent(*log, log->events[1]),
            "1699999999.000000100 4242/7 boundary fd 5 http2 request received ends at 45 "
            "http2.stream=\"3\" http2.frame=\"HEADERS END_STREAM END_HEADERS\" "
            "http2.length=\"12\"");
  const Boundary& push = log->boundaries[size_t(log->events[2].boundary)];
  ASSERT_EQ(push.attributes.size(), 4u);
  EXPECT_EQ(push.attributes[1].second, "PUSH_PROMISE END_HEADERS");
  EXPECT_EQ(push.attributes[3].first, "http2.promised");
  EXPECT_EQ(push.attributes[3].second, "4");
  const Boundary& settings = log->boundaries[size_t(log->events[3].boundary)];
  ASSERT_EQ(settings.attributes.size(), 4u);
  EXPECT_EQ(settings.attributes[3].first, "http2.header_table_size");
  EXPECT_EQ(settings.attributes[3].second, "65536");
  for (std::string damaged : {Http2FrameRecord(5, 100, 120, 45, false, true, 2, 0, 3, 5),
                              Http2FrameRecord(5, 100, 120, 45, false, true, 8, 0, 3, 4),
                              Http2FrameRecord(5, 100, 120, 45, false, true, 0, 0, 1u << 31, 1),
                              Http2FrameRecord(5, 100, 120, 45, false, true, 0, 0, 3, 1u << 24)}) {
    std::string damaged_file = EncodeHeader(TestHeader{}) +
                               Block(7, 0, {CallRecord(w::kOpRecv, 5, 100, 120, 60), damaged});
    RecordingReporter damage;
    auto damaged_log = Decode(damaged_file, &damage);
    ASSERT_TRUE(damaged_log.ok());
    EXPECT_EQ(damaged_log->events.size(), 1u);
    EXPECT_EQ(damage.lines.size(), 1u);
  }
}

// A boundary record that makes no sense (attributes without '=', an unknown protocol, a
// direction out of range) is damage: the rest of its block is reported, as for any record.
TEST(EventLogTest, DamagedBoundaryRecordIsReported) {
  auto damaged = [](std::string record) {
    std::string file =
        EncodeHeader(TestHeader{}) + Block(7, 0,
                                           {CallRecord(w::kOpRecv, 5, 100, 120, 60), record,
                                            CallRecord(w::kOpClose, 5, 130, 140, 0)});
    RecordingReporter reporter;
    auto log = Decode(file, &reporter);
    EXPECT_TRUE(log.ok());
    EXPECT_EQ(log->events.size(), 1u);
    EXPECT_EQ(log->loss.corrupt_bytes, record.size() + 32);
    return reporter.lines.size();
  };
  EXPECT_EQ(damaged(BoundaryRecord(5, 100, 120, 25, 1, false, true, std::string("novalue\0", 8))),
            1u);
  EXPECT_EQ(damaged(BoundaryRecord(5, 100, 120, 25, 1, false, true, std::string("unended=x", 9))),
            1u);
  EXPECT_EQ(damaged(BoundaryRecord(5, 100, 120, 25, 0, false, true, "")), 1u);    // protocol none
  EXPECT_EQ(damaged(BoundaryRecord(5, 100, 120, 25, 200, false, true, "")), 1u);  // unknown
  std::string direction = BoundaryRecord(5, 100, 120, 25, 1, false, true, "");
  direction[offsetof(w::BoundaryRecord, direction)] = 2;
  EXPECT_EQ(damaged(direction), 1u);
  std::string overlong = BoundaryRecord(5, 100, 120, 25, 1, false, true, "");
  overlong[offsetof(w::BoundaryRecord, attributes_length)] = 9;  // past the record's size
  EXPECT_EQ(damaged(overlong), 1u);
}

// A thread record (op 29, pthread_create) is read in the new thread's block with its
// creator as the result; an op past the last one known is still a damaged record.
TEST(EventLogTest, ThreadRecordNamesTheCreator) {
  std::string file = EncodeHeader(TestHeader{});
  file +=
      Block(103, 0,
            {CallRecord(w::kOpThread, -1, 500, 540, 101), CallRecord(w::kOpSend, 5, 600, 610, 3)});
  file += Block(0, 0, {EndRecord(0, 0, 0)});
  RecordingReporter reporter;
  auto log = Decode(file, &reporter);
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_TRUE(reporter.lines.empty());
  ASSERT_EQ(log->events.size(), 2u);
  const Event& created = log->events[0];
  EXPECT_EQ(created.op, EventOp::kThread);
  EXPECT_EQ(created.tid, 103);
  EXPECT_EQ(created.result, 101);
  EXPECT_EQ(EventOpName(created.op), "thread");
  EXPECT_FALSE(IsSendOp(created.op) || IsRecvOp(created.op));
  EXPECT_EQ(FormatEvent(*log, created), "1699999999.000000500 4242/103 thread fd -1 = 101 [40ns]");

  std::string unknown = EncodeHeader(TestHeader{});
  unknown += Block(103, 0, {CallRecord(w::kOpCount, -1, 500, 540, 101)});
  auto damaged = Decode(unknown, &reporter);
  ASSERT_TRUE(damaged.ok()) << damaged.status().message();
  EXPECT_TRUE(damaged->events.empty());
  EXPECT_EQ(reporter.lines.size(), 1u);
}

TEST(EventLogTest, FormatEventIsOneLine) {
  auto log = Decode(TwoThreadLog());
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(FormatEvent(*log, log->events[2]),
            "1699999999.000000150 4242/101 endpoint fd 5 by connect tcp 127.0.0.1:40000 -> "
            "127.0.0.1:8080 inode 777");
  EXPECT_EQ(FormatEvent(*log, log->events[4]),
            "1699999999.000000200 4242/101 send fd 5 = 11 [10ns] payload \"GET /x\\x0d\\x0a\"");
}

// --- version 2: chunks -------------------------------------------------------------------

constexpr uint32_t kSmallChunk = 4096;

TestHeader ChunkedHeader() {
  TestHeader t;
  t.version = w::kVersion;
  t.chunk_size = kSmallChunk;
  return t;
}

// Bytes of chunk k of a log with ChunkedHeader (chunk 0 ends on a 4 KiB boundary).
uint32_t ChunkBytes(uint64_t k) {
  return uint32_t(w::ChunkSize(kSmallChunk, EncodeHeader(ChunkedHeader()).size(), k));
}

std::vector<std::string> Sends(int n, int first = 0) {
  std::vector<std::string> records;
  for (int i = first; i < first + n; ++i) {
    records.push_back(CallRecord(w::kOpSend, 5, 100 + i, 105 + i, i + 1));
  }
  return records;
}

// A chunk with the sealed segments of two threads one after the other, a chunk with an
// open segment (its thread was running), a chunk handed out but never written, and one
// with a sealed segment and the end record's segment, cut right after it (a clean end
// trims the file): every record comes back, nothing counts as lost.
TEST(EventLogTest, ChunksOfSegmentsSealedOpenAndTrimmedReadWhole) {
  std::string file = EncodeHeader(ChunkedHeader());
  file +=
      Chunk({Segment(101, 0, Sends(3), true), Segment(105, 1, Sends(1, 40), true)}, ChunkBytes(0));
  file += Chunk({Segment(102, 2, Sends(2, 10), false)}, ChunkBytes(1));
  file += std::string(ChunkBytes(2), '\0');
  std::string last =
      Segment(103, 2, Sends(1, 50), true) + Segment(0, 2, {EndRecord(2, 5, 0)}, true);
  file += last;
  RecordingReporter reporter;
  auto log = Decode(file, &reporter);
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_TRUE(reporter.lines.empty()) << reporter.lines[0];
  EXPECT_EQ(log->header.version, w::kVersion);
  EXPECT_EQ(log->blocks, 5u);  // segments
  ASSERT_EQ(log->events.size(), 7u);
  EXPECT_EQ(log->events[0].tid, 101);
  EXPECT_EQ(log->events[4].tid, 102);
  EXPECT_EQ(log->events[4].result, 12);
  EXPECT_EQ(log->events[5].tid, 105);
  EXPECT_EQ(log->events[6].tid, 103);
  EXPECT_TRUE(log->loss.has_end_record);
  EXPECT_EQ(log->loss.dropped_events, 2u);
  EXPECT_EQ(log->loss.untraced_io_calls, 5u);
  EXPECT_EQ(log->loss.truncated_bytes + log->loss.corrupt_bytes, 0u);
}

// A process killed while a thread wrote a record: the writer stores a record's first 8
// bytes last, so the chunk holds the committed records, then a record whose body is (partly)
// there and whose first 8 bytes are zero. Killed at every byte of the record being written,
// the reader keeps exactly the committed ones and counts the rest as not committed.
TEST(EventLogTest, KilledWhileWritingARecordKeepsEveryCommittedOne) {
  std::vector<std::string> committed = Sends(4);
  std::string next = CallRecord(w::kOpRecv, 5, 900, 901, 77);
  for (size_t body = 0; body <= next.size() - 8; ++body) {
    std::string chunk = Chunk({Segment(101, 0, committed, false)}, ChunkBytes(0));
    size_t at = sizeof(w::SegmentHeader) + 4 * 32;
    for (size_t i = 0; i < body; ++i) chunk[at + 8 + i] = next[8 + i];
    RecordingReporter reporter;
    auto log = Decode(EncodeHeader(ChunkedHeader()) + chunk, &reporter);
    ASSERT_TRUE(log.ok());
    ASSERT_EQ(log->events.size(), 4u) << body;
    EXPECT_EQ(log->events[3].result, 4);
    EXPECT_FALSE(log->loss.has_end_record);
    EXPECT_EQ(log->loss.corrupt_bytes, 0u);
    // The body's zero bytes at its end cannot be told from unused room.
    size_t written = body;
    while (written > 0 && next[8 + written - 1] == 0) --written;
    EXPECT_EQ(log->loss.truncated_bytes, written == 0 ? 0 : 8 + written) << body;
  }
}

// A thread's segment is sealed, the next thread's header is being written when the
// process is killed (its first 8 bytes not yet stored): the first segment is whole, the
// rest counts as not committed.
TEST(EventLogTest, SegmentHeaderNotCommittedEndsTheChunk) {
  std::string first = Segment(101, 0, Sends(2), true);
  std::string next = Segment(102, 0, {}, false);
  std::fill(next.begin(), next.begin() + 8, '\0');
  RecordingReporter reporter;
  auto log = Decode(EncodeHeader(ChunkedHeader()) + Chunk({first, next}, ChunkBytes(0)), &reporter);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->events.size(), 2u);
  EXPECT_EQ(log->loss.corrupt_bytes, 0u);
  size_t written = next.size();  // up to its last byte that is not zero (the checksum's)
  while (written > 0 && next[written - 1] == 0) --written;
  EXPECT_EQ(log->loss.truncated_bytes, written);
  ASSERT_EQ(reporter.lines.size(), 1u);
  EXPECT_NE(reporter.lines[0].find("segment header not committed"), std::string::npos);
}

// A call and its payload record are committed together: the payload's first bytes, then
// the call's. Killed between the two stores, neither is read.
TEST(EventLogTest, RecordPairIsCommittedTogether) {
  std::string call = CallRecord(w::kOpSend, 5, 200, 210, 6);
  std::string payload = PayloadRecord(w::kOpSend, 5, "hello!");
  std::string chunk = Chunk({Segment(101, 0, Sends(1), false)}, ChunkBytes(0));
  size_t at = sizeof(w::SegmentHeader) + 32;
  chunk.replace(at + 8, call.size() - 8, call.substr(8));
  chunk.replace(at + call.size(), payload.size(), payload);
  auto log = Decode(EncodeHeader(ChunkedHeader()) + chunk);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->events.size(), 1u);
  // From the uncommitted call to the payload's last byte that is not zero padding.
  EXPECT_EQ(log->loss.truncated_bytes, call.size() + sizeof(w::PayloadRecord) + 6);
  chunk.replace(at, 8, call.substr(0, 8));  // the call committed too
  log = Decode(EncodeHeader(ChunkedHeader()) + chunk);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->events.size(), 2u);
  EXPECT_EQ(log->payloads.at(log->events[1].payload), "hello!");
  EXPECT_EQ(log->loss.truncated_bytes, 0u);
}

// A sealed segment with one flipped bit fails its checksum and is skipped (the next segment
// in its chunk is read); a segment with a damaged header ends its chunk; an open segment
// with bytes that are no record is read up to them. Reading goes on at the next chunk.
TEST(EventLogTest, DamagedChunksAreSkippedAndCounted) {
  std::string header = EncodeHeader(ChunkedHeader());
  std::string sealed =
      Chunk({Segment(101, 0, Sends(2), true), Segment(107, 0, Sends(1, 9), true)}, ChunkBytes(0));
  sealed[sizeof(w::SegmentHeader) + 24] ^= 0x40;
  std::string bad_header = Chunk({Segment(102, 0, Sends(1), false)}, ChunkBytes(1));
  bad_header[12] ^= 1;
  std::string open = Chunk({Segment(103, 0, Sends(2, 20), false)}, ChunkBytes(2));
  open[sizeof(w::SegmentHeader) + 64] = 0x7f;  // an unknown type with size 0
  std::string good = Chunk({Segment(104, 0, Sends(1, 30), true)}, ChunkBytes(3));
  RecordingReporter reporter;
  auto log = Decode(header + sealed + bad_header + open + good, &reporter);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(reporter.lines.size(), 3u);
  EXPECT_NE(reporter.lines[0].find("sealed segment checksum mismatch"), std::string::npos);
  EXPECT_NE(reporter.lines[1].find("segment header damaged"), std::string::npos);
  EXPECT_NE(reporter.lines[2].find("makes no sense"), std::string::npos);
  ASSERT_EQ(log->events.size(), 4u);
  EXPECT_EQ(log->events[0].tid, 107);
  EXPECT_EQ(log->events[1].tid, 103);
  EXPECT_EQ(log->events[3].tid, 104);
  EXPECT_EQ(log->loss.corrupt_blocks, 3u);
  EXPECT_EQ(log->loss.corrupt_bytes, 64u + ChunkBytes(1) + 1);
}

}  // namespace
}  // namespace weft::capture
