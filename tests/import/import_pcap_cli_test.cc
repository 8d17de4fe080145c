// `weft import pcap` as a user runs it: the summary line, the one-line reports of damage
// with the trace of what was readable still written, the exit codes, and the errors for
// files it cannot read at all.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "import/pcap_writer.h"
#include "trace/io.h"
#include "weft_cli.h"

namespace weft::import {
namespace {

namespace fs = std::filesystem;
using weft::testing::Weft;

class ImportPcapCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("weft-import-cli-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& bytes) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  // A capture of two exchanges on one connection (10 packets).
  static std::string TwoExchanges() {
    testing::PcapWriter w(testing::kEthernet);
    testing::TcpConversation t(&w, testing::V4(10, 0, 0, 1, 40000), testing::V4(10, 0, 0, 2, 80));
    t.Handshake(1000);
    t.Send(true, "ping", 1010);
    t.Send(false, "pong!", 1020);
    t.Send(true, "ping", 1030);
    t.Send(false, "pong!", 1040);
    t.Close(1050);
    return w.bytes();
  }
  fs::path dir_;
};

TEST_F(ImportPcapCliTest, WritesTheTraceAndOneSummaryLine) {
  std::string pcap = Write("ok.pcap", TwoExchanges()), out = (dir_ / "ok.weft").string();
  auto run = Weft("import pcap " + pcap + " -o " + out);
  ASSERT_EQ(run.rc, 0) << run.output;
  EXPECT_NE(
      run.output.find(pcap + ": 10 packets, 1 connections, 4 messages, 18 bytes, 0 gaps (0 "
                             "bytes), 0 retransmissions, 0 packets of other protocols skipped"),
      std::string::npos)
      << run.output;
  Result<Trace> trace = LoadTrace(out);
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(trace->size(), 4u);
}

TEST_F(ImportPcapCliTest, ATruncatedFileIsReportedAndWhatWasReadableWritten) {
  std::string bytes = TwoExchanges();
  bytes.resize(bytes.size() - 5);
  std::string pcap = Write("cut.pcap", bytes), out = (dir_ / "cut.weft").string();
  auto run = Weft("import pcap " + pcap + " -o " + out);
  EXPECT_EQ(run.rc, 1) << run.output;
  EXPECT_NE(run.output.find("damaged: " + pcap + ": packet 10: truncated dump file"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("weft import: " + pcap + ": 1 damaged part(s)"), std::string::npos);
  Result<Trace> trace = LoadTrace(out);
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(trace->size(), 4u);
  EXPECT_EQ(Weft("import pcap " + pcap + " -o " + out + " --keep-going").rc, 0);
}

TEST_F(ImportPcapCliTest, FilesItCannotReadAreOneLineErrors) {
  std::string text = Write("notes.txt", "these are not packets\n");
  auto run = Weft("import pcap " + text + " -o " + (dir_ / "x.weft").string());
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.output, "weft import: " + text + ": unknown file format\n");
  testing::PcapWriter wifi(105);
  std::string radio = Write("wifi.pcap", wifi.bytes());
  run = Weft("import pcap " + radio + " -o " + (dir_ / "y.weft").string());
  EXPECT_EQ(run.rc, 1);
  EXPECT_NE(run.output.find("link type 105 (IEEE802_11) is not supported"), std::string::npos)
      << run.output;
  run = Weft("import pcap " + radio + " -o " + (dir_ / "y.weft").string() + " --nodes host");
  EXPECT_EQ(run.output, "weft import: --nodes: 'host': expected ip or ip-port\n");
}

}  // namespace
}  // namespace weft::import
