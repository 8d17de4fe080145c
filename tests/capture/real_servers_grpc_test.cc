// The gRPC chain (grpc_chain.cc) that the HTTP/2 tests trace: a client with 8 threads,
// each keeping 16 RPCs in flight over 2 shared channels, to a front service that calls a
// back service, the front synchronous or callback-based. Here untraced: every RPC must pass
// through both servers with its request id, so that the chain's truth can be relied on.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>

#include "capture/real_servers.h"
#include "weft_cli.h"

namespace weft::testing {
namespace {

// Request ids by role ("client", "front", "back") from a truth file, with how many of
// each role's lines said ok.
struct ChainTruth {
  std::map<std::string, std::multiset<std::string>> ids;
  std::map<std::string, int> ok;
};
void ReadChainTruth(const std::string& path, ChainTruth* truth) {
  std::istringstream in(ReadFile(path));
  std::string role, id;
  long long start, end;
  int ok;
  while (in >> role >> id >> start >> end >> ok) {
    truth->ids[role].insert(id);
    truth->ok[role] += ok;
    EXPECT_LE(start, end) << path;
  }
}

class GrpcChainTest : public RealServersTest, public ::testing::WithParamInterface<bool> {
 protected:
  // Starts a chain server and returns the port it printed.
  int StartServer(const std::string& name, std::vector<std::string> args) {
    args.insert(args.begin(), {GRPC_CHAIN});
    args.insert(args.end(), {"--truth", Path(name + ".truth")});
    background_->Start(args, Path(name + ".out"));
    EXPECT_TRUE(WaitForLog(Path(name + ".out"), "listening ")) << ReadFile(Path(name + ".out"));
    std::string out = ReadFile(Path(name + ".out"));
    size_t at = out.find("listening ");
    return at == std::string::npos ? 0 : std::atoi(out.c_str() + at + 10);
  }
};

TEST_P(GrpcChainTest, EveryRpcPassesThroughBothServers) {
  const bool callback = GetParam();
  int back = StartServer("back", {"back"});
  ASSERT_GT(back, 0);
  std::vector<std::string> front_args = {"front", "--back", "127.0.0.1:" + std::to_string(back)};
  if (callback) front_args.push_back("--callback");
  int front = StartServer("front", front_args);
  ASSERT_GT(front, 0);
  auto [rc, output] =
      Shell(std::string(GRPC_CHAIN) + " client --target 127.0.0.1:" + std::to_string(front) +
            " --threads 8 --inflight 16 --requests 800 " + "--channels 2 --truth " +
            Path("client.truth") + " 2>&1");
  EXPECT_EQ(rc, 0) << output;
  EXPECT_NE(output.find("requests 800 ok 800 failed 0"), std::string::npos) << output;
  ChainTruth truth;
  ReadChainTruth(Path("client.truth"), &truth);
  background_.reset();  // SIGTERM: the servers write their truth
  ReadChainTruth(Path("front.truth"), &truth);
  ReadChainTruth(Path("back.truth"), &truth);
  ASSERT_EQ(truth.ids["client"].size(), 800u);
  EXPECT_EQ(std::set<std::string>(truth.ids["client"].begin(), truth.ids["client"].end()).size(),
            800u);
  EXPECT_EQ(truth.ok["client"], 800);
  EXPECT_EQ(truth.ids["front"], truth.ids["client"]);
  EXPECT_EQ(truth.ids["back"], truth.ids["client"]);
  EXPECT_EQ(truth.ok["front"], 800);
}

INSTANTIATE_TEST_SUITE_P(Front, GrpcChainTest, ::testing::Values(false, true),
                         [](const auto& param_info) {
                           return param_info.param ? "Callback" : "Sync";
                         });

}  // namespace
}  // namespace weft::testing
