// weft import spans and weft export through the binary, as a user runs them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "weft_cli.h"

namespace weft {
namespace {

using testing::Weft;

class SpanCli : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/weft-span-cli-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) { return dir_ + "/" + name; }
  std::string dir_;
};

TEST_F(SpanCli, ImportTheSpecificationExampleAndInferFromIt) {
  std::string example = std::string(WEFT_TEST_DATA) + "/spans/otlp_spec_example.json";
  auto run = Weft("import spans " + example + " -o " + Path("ex.trace"));
  ASSERT_EQ(run.rc, 0) << run.output;
  EXPECT_EQ(run.output,
            "otlp: 6 spans in 1 traces -> 6 messages: 3 calls, 3 spans nested in their service, 1 "
            "paths\n");
  run = Weft("infer " + Path("ex.trace") + " --algo truth -o " + Path("ex.paths.json"));
  ASSERT_EQ(run.rc, 0) << run.output;
  run = Weft("export chrome " + Path("ex.paths.json") + " --trace " + Path("ex.trace") + " -o " +
             Path("ex.chrome.json"));
  ASSERT_EQ(run.rc, 0) << run.output;
  EXPECT_EQ(run.output, "chrome: 1 requests, 3 spans (truth algorithm)\n");
  run = Weft("export jaeger " + Path("ex.paths.json") + " --trace " + Path("ex.trace") + " -o " +
             Path("ex.jaeger.json"));
  ASSERT_EQ(run.rc, 0) << run.output;
  // Back again: the same three calls.
  run = Weft("import spans " + Path("ex.jaeger.json") + " --strip-truth -o " + Path("b.trace"));
  ASSERT_EQ(run.rc, 0) << run.output;
  EXPECT_EQ(run.output,
            "jaeger: 3 spans in 1 traces -> 6 messages: 3 calls, 0 spans nested in their service, "
            "no ground truth\n");
}

TEST_F(SpanCli, ABadFileIsOneLineAndTheRestIsKept) {
  {
    std::ofstream out(Path("bad.json"));
    out << R"([{"traceId":"t","id":"1","timestamp":5,"duration":3,)"
           R"("localEndpoint":{"serviceName":"a"}},{"traceId":"t","id":"2","parentId":"1",)"
           R"("timestamp":6,"duration":1,"localEndpoint":{"serviceName":"b"}},{"traceId":"t","id":)";
  }
  auto run = Weft("import spans " + Path("bad.json") + " -o " + Path("bad.trace"));
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.output,
            "zipkin: 2 spans in 1 traces -> 4 messages: 2 calls, 0 spans nested in their service, "
            "1 paths\nweft import: " +
                Path("bad.json") +
                ": byte 212: truncated in span 2; kept the 2 spans read before it (1 bad records "
                "skipped; the trace holds the rest)\n");
  EXPECT_TRUE(std::filesystem::exists(Path("bad.trace")));
  run = Weft("import spans " + Path("bad.json") + " --format pcap -o " + Path("x.trace"));
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.output,
            "weft import: unknown span format 'pcap' (want otlp, jaeger, zipkin or csv)\n");
  run = Weft("export otlp " + Path("none.paths.json") + " --trace " + Path("bad.trace") + " -o -");
  EXPECT_EQ(run.rc, 1);
  EXPECT_NE(run.output.find("weft export: "), std::string::npos);
}

TEST_F(SpanCli, HelpHasExamples) {
  auto run = Weft("import spans --help");
  EXPECT_EQ(run.rc, 0);
  EXPECT_NE(run.output.find("weft import spans otel-collector.json -o run.weft"),
            std::string::npos);
  run = Weft("export --help");
  EXPECT_EQ(run.rc, 0);
  EXPECT_NE(run.output.find("weft export chrome"), std::string::npos);
}

}  // namespace
}  // namespace weft
