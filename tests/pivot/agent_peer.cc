// pivot_agent_peer STATS_FILE PEER PERIOD_US [FORK_EVERY]: an instrumented program with
// an agent, for agent_processes_test (agent_peer.h says what it does).
#include "pivot/agent_peer.h"

#include <cstdlib>

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: pivot_agent_peer STATS_FILE PEER PERIOD_US [FORK_EVERY]\n");
    return 2;
  }
  return weft::pivot::RunAgentPeer(argv[1], std::strtoll(argv[2], nullptr, 10),
                                   std::strtoll(argv[3], nullptr, 10),
                                   argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 0);
}
