// weft capture: run a program tree with libweft-preload.so preloaded, one event log per
// process under DIR/<host>/ (docs/formats.md "Event log"); weft events: print logs.
//
// Following fork and exec is the preload library's job (it reopens a log in every child
// and puts itself back into an exec's environment); this command only starts the first
// program, forwards the signals a user sends to it, and exits with its status.
#include <elf.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "capture/event_log.h"
#include "capture/go_image.h"
#include "capture/protocols/spec.h"
#include "cli/command.h"

namespace weft::cli {
namespace {

struct CaptureFlags {
  std::string output;
  uint32_t payload_prefix = 0;
  std::string protocols = "auto";
  bool isolate = true;
  std::string sync = "queues";
  std::string owner;  // --owner: the user the capture directory is given to
  std::vector<std::string> command;
  std::string path;  // weft events
};

pid_t g_child = -1;
void ForwardSignal(int signal) {
  if (g_child > 0) kill(g_child, signal);
}

// The program as execvp would find it.
Result<std::string> FindProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (access(name.c_str(), X_OK) != 0)
      return Status::NotFound("{}: {}", name, std::strerror(errno));
    return name;
  }
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    size_t colon = dirs.find(':');
    std::string dir(dirs.substr(0, colon));
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return Status::NotFound("{}: not found in PATH", name);
}

// LD_PRELOAD needs the dynamic loader: a program without PT_INTERP (statically linked) runs
// untraced, so it is refused. A script is judged by its interpreter. Returns whether the
// program was built by the Go toolchain (capture/go_image.h; its notes read from the file,
// at most 64 KiB per segment), which capture warns of.
Result<bool> CheckProgram(const std::string& program, int depth = 0) {
  std::ifstream in(program, std::ios::binary);
  if (!in) return Status::NotFound("{}: cannot read it", program);
  char start[256] = {};
  in.read(start, sizeof start);
  size_t got = size_t(in.gcount());
  if (got >= 2 && start[0] == '#' && start[1] == '!' && depth == 0) {
    std::string line(start + 2, got - 2);
    line = line.substr(0, line.find('\n'));
    size_t begin = line.find_first_not_of(" \t");
    if (begin == std::string::npos) return false;
    std::string interpreter = line.substr(begin, line.find_first_of(" \t", begin) - begin);
    return CheckProgram(interpreter, depth + 1);
  }
  if (got < sizeof(Elf64_Ehdr) || std::memcmp(start, ELFMAG, SELFMAG) != 0) return false;
  if (start[EI_CLASS] != ELFCLASS64) {
    return Status::InvalidArgument("{} is not a 64-bit program; the preload library is 64-bit",
                                   program);
  }
  Elf64_Ehdr header;
  std::memcpy(&header, start, sizeof header);
  bool interpreted = false, go = false;
  for (int i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    in.clear();
    in.seekg(std::streamoff(header.e_phoff + uint64_t(i) * header.e_phentsize));
    if (!in.read(reinterpret_cast<char*>(&segment), sizeof segment)) break;
    interpreted = interpreted || segment.p_type == PT_INTERP;
    if (go || segment.p_type != PT_NOTE || segment.p_filesz > 65536) continue;
    std::vector<uint8_t> notes(segment.p_filesz);
    in.seekg(std::streamoff(segment.p_offset));
    go = in.read(reinterpret_cast<char*>(notes.data()), std::streamsize(notes.size())) &&
         capture::NotesNameGo(notes.data(), notes.size(), segment.p_align);
  }
  if (interpreted) return go;
  return Status::InvalidArgument(
      "{} is statically linked (no PT_INTERP): LD_PRELOAD cannot trace it; capture needs a "
      "dynamically linked program",
      program);
}

// Creates `dir` and its missing parents 0700, whatever the umask: the logs hold URLs, SQL
// text and payload bytes, for the user who captured alone. `dir` itself is made 0700 even
// if it was there (a second capture into the same directory); a parent that was there is
// left as it is (it may be a shared place such as /tmp).
std::error_code MakePrivateDirectories(const std::filesystem::path& dir) {
  std::error_code ec;
  std::vector<std::filesystem::path> missing;
  for (std::filesystem::path p = dir; !p.empty() && !std::filesystem::exists(p, ec);
       p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (mkdir(it->c_str(), 0700) == 0) {
      // mkdir's mode is narrowed by the umask; 0700 exactly is wanted.
      if (chmod(it->c_str(), 0700) != 0) return std::error_code(errno, std::generic_category());
    } else if (errno != EEXIST) {
      return std::error_code(errno, std::generic_category());
    }
  }
  if (chmod(dir.c_str(), 0700) != 0) return std::error_code(errno, std::generic_category());
  return {};
}

// --owner: gives `dir` (the host folder) to `user`, still 0700, and `output` too if this
// capture made it (`made_output`; one that was there, such as /tmp, is left alone), so
// that a process that switched to that user can create its log there: a child it forks,
// an image it execs (Apache's mod_cgid daemon, as www-data, forks a process per CGI
// request). The logs stay 0600, each its creator's. Checked as the user, in a child: every
// directory above must let it through.
Status GiveDirectory(const std::filesystem::path& output, bool made_output,
                     const std::filesystem::path& dir, const std::string& user) {
  const passwd* entry = getpwnam(user.c_str());
  if (entry == nullptr) return Status::InvalidArgument("--owner: no user '{}'", user);
  const uid_t uid = entry->pw_uid;
  const gid_t gid = entry->pw_gid;
  if (geteuid() != 0 && geteuid() != uid)
    return Status::InvalidArgument("--owner {}: only root can give a directory to another user",
                                   user);
  for (const std::filesystem::path& d : {output, dir}) {
    if (d == output && !made_output) continue;
    if (chown(d.c_str(), uid, gid) != 0)
      return Status::IoError("--owner {}: chown {}: {}", user, d.string(), std::strerror(errno));
  }
  std::fflush(nullptr);
  pid_t child = fork();
  if (child < 0) return Status::IoError("fork: {}", std::strerror(errno));
  if (child == 0) {
    bool ok = setgid(gid) == 0 && setuid(uid) == 0 && access(dir.c_str(), W_OK | X_OK) == 0;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::InvalidArgument(
        "--owner {}: {} cannot reach {}: let it through every directory above (chmod o+x), or "
        "capture elsewhere",
        user, user, dir.string());
  }
  return Status::Ok();
}

std::string PreloadLibrary() {
  if (const char* given = std::getenv("WEFT_PRELOAD")) return given;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / "libweft-preload.so").string();
}

Status RunCapture(const CaptureFlags& f) {
  if (f.output.empty()) return Status::InvalidArgument("give the capture directory with -o DIR");
  if (f.command.empty()) return Status::InvalidArgument("give the program after --");
  WEFT_ASSIGN_OR_RETURN(std::string program, FindProgram(f.command[0]));
  WEFT_ASSIGN_OR_RETURN(bool go, CheckProgram(program));
  // Traced all the same: the programs it starts are (they inherit the preload library).
  if (go) {
    std::fprintf(stderr,
                 "weft capture: warning: %s is a Go program: Go makes its system calls itself, "
                 "not through the C library, so none of its own I/O can be captured; its "
                 "connections will show only at the ends other traced programs hold\n",
                 program.c_str());
  }
  // The error_code overloads of std::filesystem throughout: this returns a Status.
  std::error_code ec;
  std::string preload = std::filesystem::absolute(PreloadLibrary(), ec).string();
  if (access(preload.c_str(), R_OK) != 0) {
    return Status::NotFound("{}: {} (build the weft-preload target)", preload,
                            std::strerror(errno));
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::filesystem::path output = std::filesystem::absolute(f.output, ec);
  const std::filesystem::path dir = output / host;
  const bool made_output = !std::filesystem::exists(output, ec);
  if (!ec) ec = MakePrivateDirectories(dir);
  bool traced = !ec;
  if (traced && !f.owner.empty())
    WEFT_RETURN_IF_ERROR(GiveDirectory(output, made_output, dir, f.owner));
  if (!traced) {  // the program must not be harmed by where its logs cannot go
    std::fprintf(stderr, "weft capture: cannot create %s: %s; running the program untraced\n",
                 dir.c_str(), ec.message().c_str());
  }
  std::vector<char*> argv;
  for (const std::string& a : f.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The signals a user sends to stop the run go to the program. They are blocked from
  // before the fork until the handler that forwards them is in place, so one that comes
  // in between (the parent may not run for a while after fork) is forwarded, not fatal.
  sigset_t forwarded, previous_mask;
  sigemptyset(&forwarded);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&forwarded, s);
  sigprocmask(SIG_BLOCK, &forwarded, &previous_mask);
  std::fflush(nullptr);
  pid_t child = fork();
  if (child < 0) {
    sigprocmask(SIG_SETMASK, &previous_mask, nullptr);
    return Status::IoError("fork: {}", std::strerror(errno));
  }
  if (child == 0) {
    sigprocmask(SIG_SETMASK, &previous_mask, nullptr);
    if (traced) {
      const char* old = std::getenv("LD_PRELOAD");
      std::string value = preload + (old != nullptr && *old != '\0' ? std::string(":") + old : "");
      setenv("LD_PRELOAD", value.c_str(), 1);
      setenv("WEFT_CAPTURE_DIR", dir.c_str(), 1);
      setenv("WEFT_PAYLOAD_PREFIX", std::to_string(f.payload_prefix).c_str(), 1);
      setenv("WEFT_PROTOCOLS", f.protocols.c_str(), 1);
      setenv("WEFT_ISOLATE", f.isolate ? "1" : "0", 1);
      setenv("WEFT_SYNC", f.sync.c_str(), 1);
    }
    execv(program.c_str(), argv.data());
    std::fprintf(stderr, "weft capture: %s: %s\n", program.c_str(), std::strerror(errno));
    _exit(127);
  }
  g_child = child;
  struct sigaction forward {};
  forward.sa_handler = ForwardSignal;
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(s, &forward, nullptr);
  sigprocmask(SIG_SETMASK, &previous_mask, nullptr);
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return Status::IoError("waitpid: {}", std::strerror(errno));
  }
  if (traced) {
    size_t logs = 0;
    std::filesystem::directory_iterator it(dir, ec), end;
    for (; !ec && it != end; it.increment(ec)) logs += it->path().extension() == ".wev";
    std::fprintf(stderr, "weft capture: %zu process logs in %s\n", logs, dir.c_str());
  }
  std::fflush(nullptr);
  // The program's status is ours: its exit code, or 128 + the signal that ended it.
  std::_Exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

class StderrReporter : public capture::Reporter {
 public:
  explicit StderrReporter(std::string path) : path_(std::move(path)) {}
  void Lost(uint64_t offset, uint64_t bytes, std::string_view reason) override {
    std::fprintf(stderr, "%s: byte %llu: %llu bytes lost: %.*s\n", path_.c_str(),
                 static_cast<unsigned long long>(offset), static_cast<unsigned long long>(bytes),
                 int(reason.size()), reason.data());
  }

 private:
  std::string path_;
};

Status RunEvents(const CaptureFlags& f) {
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> logs, capture::FindEventLogs(f.path));
  if (logs.empty()) return Status::NotFound("{}: no event logs (*.wev)", f.path);
  for (const std::string& path : logs) {
    StderrReporter reporter(path);
    WEFT_ASSIGN_OR_RETURN(capture::EventLog log, capture::ReadEventLog(path, &reporter));
    std::string args;
    for (const std::string& a : log.header.arguments) args += (args.empty() ? "" : " ") + a;
    fmt::print("# {}: host {} pid {} parent {} exec {} {} [{}]\n", path, log.header.host,
               log.header.pid, log.header.parent_pid, log.header.exec_index, log.header.executable,
               args);
    for (const capture::Event& e : log.events) fmt::print("{}\n", capture::FormatEvent(log, e));
    const capture::EventLogLoss& loss = log.loss;
    fmt::print(
        "# {} events in {} blocks; {}; dropped {}, truncated {} bytes, corrupt {} bytes, "
        "file I/O calls {}; isolation: {} reads cut at a boundary, {} served from {} held "
        "bytes, {} waits held inputs back\n",
        log.events.size(), log.blocks,
        loss.has_end_record ? (loss.ended_by_exec ? "ended by exec" : "ended by exit")
                            : "no end record (killed or still running)",
        loss.dropped_events, loss.truncated_bytes, loss.corrupt_bytes, loss.untraced_io_calls,
        loss.isolated_reads, loss.held_reads, loss.held_bytes, loss.split_waits);
    if (loss.go_runtime) {
      fmt::print(
          "# a Go program: its system calls bypass the C library, so none of its I/O "
          "is here\n");
    }
    if (loss.tls_streams + loss.tls_opaque_streams != 0) {
      fmt::print(
          "# TLS: {} sockets read as plaintext, {} streams of TLS ciphertext no TLS "
          "library call was seen for (statically linked TLS?)\n",
          loss.tls_streams, loss.tls_opaque_streams);
    }
  }
  return Status::Ok();
}

// --protocols (capture/protocols/spec.h): the preload library reads it again and skips
// what it cannot use, so it is checked here, where a mistake can be told.
Status CheckProtocolSpec(const std::string& spec) {
  if (spec.empty())
    return Status::InvalidArgument("--protocols: empty (use 'none' for no processors)");
  if (spec.size() >= 512) return Status::InvalidArgument("--protocols: longer than 511 bytes");
  capture::protocols::SpecReader reader(spec.data(), spec.size());
  capture::protocols::SpecItem item;
  capture::protocols::SpecError error;
  while (reader.Next(&item, &error)) {
    if (error == capture::protocols::SpecError::kOk) continue;
    // An unknown protocol is named alone; every other mistake with its whole item.
    size_t shown =
        error == capture::protocols::SpecError::kUnknownProtocol ? item.name_length : item.length;
    return Status::InvalidArgument("--protocols: '{}': {}", std::string_view(item.text, shown),
                                   capture::protocols::SpecErrorText(error));
  }
  return Status::Ok();
}

}  // namespace

void AddCaptureCommand(CLI::App& app, Status& result) {
  static CaptureFlags f;
  auto* cmd = app.add_subcommand("capture", "Run a program tree and log its socket calls");
  cmd->footer(
      "Every process of the tree writes DIR/<host>/<pid>.wev (see docs/formats.md); fork and\n"
      "exec are followed. Only dynamically linked programs can be traced.\n\n"
      "Example:\n"
      "  weft capture -o run -- ./start-my-services.sh\n"
      "  weft capture -o run --payload-prefix 16 -- curl -s http://localhost:8080/\n"
      "  weft capture -o run --protocols http=8080,redis=/run/redis.sock,testbed=auto -- "
      "./start.sh\n"
      "  sudo weft capture -o run --owner www-data -- apache2ctl -DFOREGROUND\n"
      "  weft events run | head\n");
  cmd->add_option("-o,--output", f.output, "Capture directory (created)")->required();
  cmd->add_option(
         "--payload-prefix", f.payload_prefix,
         "Keep the first N bytes of every send and receive (default 0: none; at most 4096)")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--protocols", f.protocols,
                  "Protocol processors that log message boundaries and attributes (URL, SQL, "
                  "Redis command) on stream connections: 'auto' (default: PostgreSQL on 5432, "
                  "Redis on 6379, DNS on 53, and detection from each connection's first request "
                  "bytes), 'none', or a comma list of auto, PROTO=PORT, PROTO=/unix/path, "
                  "PROTO=@abstract, PROTO=auto (detect it), PROTO=PROGRAM (every stream of that "
                  "program); PROTO is http, testbed, postgres, redis, dns, line, oneshot, mysql, "
                  "memcached or http2");
  cmd->add_flag("--isolate,!--no-isolate", f.isolate,
                "Event isolation (BorderPatrol §3.2), on by default: reads on connections with "
                "a protocol processor stop where a message ends; the rest is held and served on "
                "the next read, and poll/select/epoll report one such input per wait "
                "(docs/capture.md \"Event isolation\"). --no-isolate: programs read and wait "
                "as untraced");
  cmd->add_option("--sync", f.sync,
                  "Synchronisation calls logged as evidence of hand-offs between threads: "
                  "'queues' (default: condition variables, semaphores, eventfds, timerfds, and "
                  "the mutexes condition variables wait with), 'all' (every mutex too) or 'off' "
                  "(docs/capture.md \"Hand-offs\")")
      ->check(CLI::IsMember({"queues", "all", "off"}));
  cmd->add_option("--owner", f.owner,
                  "Give the capture directory to USER (root only), for a server that starts as "
                  "root and forks or execs after switching to USER (Apache's mod_cgid and its "
                  "CGI programs): those processes can then create their logs. Logs stay 0600, "
                  "each its creator's (docs/capture.md \"Permissions\")")
      ->type_name("USER");
  cmd->add_option("command", f.command, "The program and its arguments, after --")->required();
  cmd->callback([&result] {
    result = CheckProtocolSpec(f.protocols);
    if (result.ok()) result = RunCapture(f);
  });

  auto* events = app.add_subcommand("events", "Print event logs, one event per line");
  events->footer("Example:\n  weft events run/myhost/4242.wev\n  weft events run\n");
  events->add_option("path", f.path, "A .wev log or a capture directory")->required();
  events->callback([&result] { result = RunEvents(f); });
}

}  // namespace weft::cli
