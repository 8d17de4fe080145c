#include "testbed/runner.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "testbed/server.h"
#include "testbed/wire.h"

namespace weft::testbed {
Result<int> BindLoopback(uint16_t port, bool udp, uint16_t* bound) {
  int fd = socket(AF_INET, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
  if (fd < 0) return Status::IoError("socket: {}", std::strerror(errno));
  int one = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
    int err = errno;
    close(fd);
    return Status::IoError("setsockopt: {}", std::strerror(err));
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || (!udp && listen(fd, 4096) != 0) ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    int err = errno;
    close(fd);
    return Status::IoError("listening on 127.0.0.1:{}: {}", port, std::strerror(err));
  }
  *bound = ntohs(a.sin_port);
  return fd;
}

namespace {

struct Child {
  std::string name;
  pid_t pid = -1;
  int listen_fd = -1;
};

// How long the servers get, after the load ends, to finish the last requests' work.
constexpr std::chrono::milliseconds kDrain{200};

// Stops every server: SIGTERM, up to a second to exit, then SIGKILL. Always reaps. Then
// the same for what is left of each server's process group (its forked or spawned
// children, which a stuck child would otherwise outlive the run in, holding its pipes).
void StopAll(std::vector<Child>& children) {
  std::vector<pid_t> groups;
  for (Child& c : children) {
    if (c.pid > 0) kill(c.pid, SIGTERM);
    if (c.pid > 0) groups.push_back(c.pid);
  }
  TimeNs deadline = WallNow() + kSecond;
  for (Child& c : children) {
    while (c.pid > 0) {
      pid_t r = waitpid(c.pid, nullptr, WNOHANG);
      if (r == c.pid || (r < 0 && errno == ECHILD)) {
        c.pid = -1;
      } else if (WallNow() > deadline) {
        kill(c.pid, SIGKILL);
        waitpid(c.pid, nullptr, 0);
        c.pid = -1;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    if (c.listen_fd >= 0) close(c.listen_fd);
    c.listen_fd = -1;
  }
  deadline = WallNow() + kSecond;
  for (pid_t group : groups) {
    if (kill(-group, SIGTERM) != 0) continue;  // ESRCH: nothing left
    while (kill(-group, 0) == 0 && WallNow() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    kill(-group, SIGKILL);
  }
}

[[noreturn]] void ServerChild(const Topology& topo, int tier, int index, int listen_fd,
                              pid_t parent, const std::string& out_dir,
                              const std::vector<Child>& children) {
  // Known by its server's name (ps, top, and `weft reconcile --nodes name`), not as a
  // copy of the runner. The kernel keeps 15 bytes.
  prctl(PR_SET_NAME, topo.tiers[tier].servers[index].name.c_str());
  // Never outlive the runner, even when it is killed with SIGKILL.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);
  // Its own process group: Ctrl-C reaches only the runner, which then stops the servers
  // after the load client has finished cleanly.
  setpgid(0, 0);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  for (const Child& c : children) {
    if (c.listen_fd != listen_fd && c.listen_fd >= 0) close(c.listen_fd);
  }
  const std::string& name = topo.tiers[tier].servers[index].name;
  std::string log = fmt::format("{}/{}.log", out_dir, name);
  int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  if (fd >= 0) {
    dup2(fd, STDERR_FILENO);
    close(fd);
  }
  Status s = RunServer(topo, tier, index, listen_fd, out_dir);
  fmt::print(stderr, "{}: {}\n", name, s.message());
  _exit(2);
}

}  // namespace

Result<RunReport> RunTestbed(Topology topo, const RunOptions& options) {
  if (options.out_dir.empty()) return Status::InvalidArgument("give an output directory");
  if (mkdir(options.out_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::IoError("{}: {}", options.out_dir, std::strerror(errno));
  }
  std::vector<Child> children;
  struct Slot {
    int tier, index;
  };
  std::vector<Slot> slots;
  for (size_t t = 0; t < topo.tiers.size(); ++t) {
    for (size_t i = 0; i < topo.tiers[t].servers.size(); ++i) {
      ServerSpec& s = topo.tiers[t].servers[i];
      Result<int> fd = BindLoopback(s.port, topo.tiers[t].udp, &s.port);
      if (!fd.ok()) {
        StopAll(children);
        return fd.status().WithContext(s.name);
      }
      children.push_back({s.name, -1, *fd});
      slots.push_back({int(t), int(i)});
    }
  }
  pid_t parent = getpid();
  for (size_t k = 0; k < children.size(); ++k) {
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid < 0) {
      Status err = Status::IoError("fork: {}", std::strerror(errno));
      StopAll(children);
      return err;
    }
    if (pid == 0) {
      ServerChild(topo, slots[k].tier, slots[k].index, children[k].listen_fd, parent,
                  options.out_dir, children);
    }
    setpgid(pid, pid);  // as the child does, so that StopAll finds the group either way
    children[k].pid = pid;
  }
  std::vector<std::pair<std::string, int>> server_pids;
  for (const Child& c : children) server_pids.emplace_back(c.name, c.pid);
  // The servers hold their listening sockets now; connections queue in the kernel until
  // each server accepts, so the client may start at once.
  for (Child& c : children) {
    close(c.listen_fd);
    c.listen_fd = -1;
  }
  if (options.before_load) options.before_load(topo);
  std::atomic<bool> done{false};
  std::thread killer;
  if (!options.kill_server.empty()) {
    killer = std::thread([&] {
      TimeNs at = WallNow() + options.kill_after;
      while (!done && WallNow() < at) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      for (Child& c : children) {
        if (!done && c.name == options.kill_server) kill(c.pid, SIGKILL);
      }
    });
  }
  std::thread side;
  if (options.during) side = std::thread([&] { options.during(topo); });
  LoadOptions load;
  load.duration = options.duration;
  load.concurrency = options.concurrency;
  load.rate = options.rate;
  load.requests = options.requests;
  load.max_outstanding = options.max_outstanding;
  load.truth_dir = options.out_dir;
  load.baggage = options.baggage;
  load.stop = options.stop;
  // From here on this process is the topology's client, and is called so (the truth's
  // node "client").
  prctl(PR_SET_NAME, "client");
  Result<LoadStats> stats = RunLoad(topo, load);
  done = true;
  // Let the servers finish the work of the last requests before they are stopped, as an
  // operator would: a server killed in the middle of a reply leaves its truth and a
  // tracer's log disagreeing about the last message (a terminating signal delivered as a
  // send returns ends the process before the tracer has written the send down).
  std::this_thread::sleep_for(kDrain);
  if (killer.joinable()) killer.join();
  if (side.joinable()) side.join();
  if (options.after_load) options.after_load(topo);
  // A server that exited on its own (other than the one killed on purpose) is a failure.
  std::string died;
  for (Child& c : children) {
    int wstatus = 0;
    if (waitpid(c.pid, &wstatus, WNOHANG) == c.pid) {
      if (c.name != options.kill_server) died = c.name;
      c.pid = -1;
    }
  }
  StopAll(children);
  if (!stats.ok()) return stats.status();
  if (!died.empty()) {
    return Status::Internal("server {} exited during the run (see {}/{}.log)", died,
                            options.out_dir, died);
  }
  return RunReport{std::move(*stats), std::move(topo), std::move(server_pids)};
}

}  // namespace weft::testbed
