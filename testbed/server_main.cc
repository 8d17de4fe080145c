// weft-testbed-server: one testbed server as a program of its own, to run a topology by
// hand or under a tracer (`weft testbed run` forks its servers instead). Every server of
// the topology needs a fixed port, since each process must know where its callees listen.
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "testbed/runner.h"
#include "testbed/server.h"

namespace {

weft::Status Main(int argc, char** argv) {
  if (argc != 4) {
    return weft::Status::InvalidArgument(
        "usage: weft-testbed-server TOPOLOGY SERVER TRUTH_DIR  (e.g. three-tier.toml app0 run/)");
  }
  WEFT_ASSIGN_OR_RETURN(weft::testbed::Topology topo, weft::testbed::LoadTopology(argv[1]));
  int tier = -1, index = -1;
  for (size_t t = 0; t < topo.tiers.size(); ++t) {
    for (size_t i = 0; i < topo.tiers[t].servers.size(); ++i) {
      const weft::testbed::ServerSpec& s = topo.tiers[t].servers[i];
      if (s.port == 0) {
        return weft::Status::InvalidArgument("{} has no fixed port; give every server port = N",
                                             s.name);
      }
      if (s.name == argv[2]) {
        tier = int(t);
        index = int(i);
      }
    }
  }
  if (tier < 0) return weft::Status::NotFound("no server named {} in {}", argv[2], argv[1]);
  uint16_t port = topo.tiers[tier].servers[index].port;
  WEFT_ASSIGN_OR_RETURN(int fd, weft::testbed::BindLoopback(port, topo.tiers[tier].udp, &port));
  return weft::testbed::RunServer(topo, tier, index, fd, argv[3]);
}

}  // namespace

int main(int argc, char** argv) {
  weft::Status s = Main(argc, argv);
  fmt::print(stderr, "weft-testbed-server: {}\n", s.message());
  return 1;
}
