// A gRPC chain for the capture tests: a client keeps RPCs in flight to a front service,
// which calls a back service for each. Every program logs the request ids it saw (the
// truth the tests compare weft's trees with); the id travels only as gRPC metadata
// (x-request-id), as a tracing header would, never in the messages.
//
//   grpc_chain back   --truth FILE
//   grpc_chain front  --truth FILE --back HOST:PORT [--callback]
//   grpc_chain client --truth FILE --target HOST:PORT [--threads 8] [--inflight 16]
//                     [--requests 800] [--channels 2]
//
// The servers listen on a port the kernel picks and print "listening PORT" when ready;
// they stop on SIGTERM or SIGINT and then write their truth. The front is a synchronous
// server by default (a thread of gRPC's pool runs each call and blocks on the back), or a
// callback server with --callback (the call to the back is asynchronous and the reply
// goes out from the thread that completes it). The client's threads share --channels
// channels (HTTP/2 connections), each thread keeping --inflight calls outstanding.
// Truth lines: "ROLE ID START_NS END_NS OK" (CLOCK_REALTIME).
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "chain.grpc.pb.h"

namespace {

using weft::chain::Back;
using weft::chain::Front;
using weft::chain::Req;
using weft::chain::Resp;

int64_t Now() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// What one program saw, written once at the end.
class Truth {
 public:
  void Add(const char* role, const std::string& id, int64_t start, int64_t end, bool ok) {
    std::lock_guard lock(mu_);
    lines_ += std::string(role) + " " + id + " " + std::to_string(start) + " " +
              std::to_string(end) + " " + (ok ? "1" : "0") + "\n";
  }
  bool Write(const std::string& path) {
    std::lock_guard lock(mu_);
    FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) return false;
    bool ok = std::fwrite(lines_.data(), 1, lines_.size(), f) == lines_.size();
    return std::fclose(f) == 0 && ok;
  }

 private:
  std::mutex mu_;
  std::string lines_;
};

std::string RequestId(const grpc::ServerContextBase& context) {
  auto it = context.client_metadata().find("x-request-id");
  if (it == context.client_metadata().end()) return "-";
  return std::string(it->second.data(), it->second.size());
}

class BackService final : public Back::Service {
 public:
  explicit BackService(Truth& truth) : truth_(truth) {}
  grpc::Status Read(grpc::ServerContext* context, const Req* request, Resp* reply) override {
    int64_t start = Now();
    // A short, random service time, so that calls overlap and finish out of order.
    thread_local std::minstd_rand rng{uint32_t(start)};
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 1000));
    reply->set_id(request->id());
    reply->set_body(request->body());
    truth_.Add("back", RequestId(*context), start, Now(), true);
    return grpc::Status::OK;
  }

 private:
  Truth& truth_;
};

class FrontService final : public Front::Service {
 public:
  FrontService(Truth& truth, std::shared_ptr<grpc::Channel> back)
      : truth_(truth), back_(Back::NewStub(back)) {}
  grpc::Status Get(grpc::ServerContext* context, const Req* request, Resp* reply) override {
    int64_t start = Now();
    const std::string id = RequestId(*context);
    grpc::ClientContext call;
    call.AddMetadata("x-request-id", id);
    grpc::Status status = back_->Read(&call, *request, reply);
    truth_.Add("front", id, start, Now(), status.ok());
    return status;
  }

 private:
  Truth& truth_;
  std::unique_ptr<Back::Stub> back_;
};

class FrontCallbackService final : public Front::CallbackService {
 public:
  FrontCallbackService(Truth& truth, std::shared_ptr<grpc::Channel> back)
      : truth_(truth), back_(Back::NewStub(back)) {}
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context, const Req* request,
                                Resp* reply) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    auto call = std::make_shared<grpc::ClientContext>();
    const std::string id = RequestId(*context);
    call->AddMetadata("x-request-id", id);
    const int64_t start = Now();
    back_->async()->Read(call.get(), request, reply,
                         [this, reactor, call, id, start](grpc::Status status) {
                           truth_.Add("front", id, start, Now(), status.ok());
                           reactor->Finish(status);
                         });
    return reactor;
  }

 private:
  Truth& truth_;
  std::unique_ptr<Back::Stub> back_;
};

// Flags as --name value pairs.
struct Flags {
  std::string truth, back, target;
  bool callback = false;
  int threads = 8, inflight = 16, requests = 800, channels = 2;
};

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 2; i < argc; ++i) {
    std::string name = argv[i];
    if (name == "--callback") {
      f->callback = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    std::string value = argv[++i];
    if (name == "--truth") {
      f->truth = value;
    } else if (name == "--back") {
      f->back = value;
    } else if (name == "--target") {
      f->target = value;
    } else if (name == "--threads") {
      f->threads = std::atoi(value.c_str());
    } else if (name == "--inflight") {
      f->inflight = std::atoi(value.c_str());
    } else if (name == "--requests") {
      f->requests = std::atoi(value.c_str());
    } else if (name == "--channels") {
      f->channels = std::atoi(value.c_str());
    } else {
      return false;
    }
  }
  return !f->truth.empty() && f->threads > 0 && f->inflight > 0 && f->requests >= 0 &&
         f->channels > 0;
}

// Serves until SIGTERM or SIGINT (blocked here, before gRPC starts its threads, and taken
// with sigwait), then writes the truth.
int Serve(grpc::Service* service, Truth& truth, const std::string& truth_path) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "grpc_chain: cannot listen\n");
    return 1;
  }
  std::printf("listening %d\n", port);
  std::fflush(stdout);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  int signal = 0;
  sigwait(&stop, &signal);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  return truth.Write(truth_path) ? 0 : 1;
}

int RunClient(const Flags& f, Truth& truth) {
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int c = 0; c < f.channels; ++c) {
    // Distinct channel arguments keep gRPC from sharing one connection between them.
    grpc::ChannelArguments args;
    args.SetInt("weft.channel", c);
    channels.push_back(
        grpc::CreateCustomChannel(f.target, grpc::InsecureChannelCredentials(), args));
  }
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < f.threads; ++t) {
    threads.emplace_back([&, t] {
      std::unique_ptr<Front::Stub> stub = Front::NewStub(channels[size_t(t % f.channels)]);
      std::mutex mu;
      std::condition_variable cv;
      int outstanding = 0;
      const int count = f.requests / f.threads + (t < f.requests % f.threads ? 1 : 0);
      struct Call {
        grpc::ClientContext context;
        Req request;
        Resp reply;
        std::string id;
        int64_t start = 0;
      };
      for (int k = 0; k < count; ++k) {
        {
          std::unique_lock lock(mu);
          cv.wait(lock, [&] { return outstanding < f.inflight; });
          ++outstanding;
        }
        auto* call = new Call;
        call->id = std::to_string((t + 1) * 1'000'000 + k);
        call->context.AddMetadata("x-request-id", call->id);
        call->request.set_id(uint64_t(k));
        call->request.set_body(std::string(64 + k % 200, 'x'));
        call->start = Now();
        stub->async()->Get(&call->context, &call->request, &call->reply,
                           [&, call](grpc::Status status) {
                             bool good = status.ok() && call->reply.id() == call->request.id();
                             (good ? ok : failed).fetch_add(1);
                             truth.Add("client", call->id, call->start, Now(), good);
                             delete call;
                             std::lock_guard lock(mu);
                             --outstanding;
                             cv.notify_one();
                           });
      }
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return outstanding == 0; });
    });
  }
  for (std::thread& t : threads) t.join();
  std::printf("requests %d ok %d failed %d\n", f.requests, ok.load(), failed.load());
  return truth.Write(f.truth) && failed.load() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  std::string mode = argc > 1 ? argv[1] : "";
  if (!ParseFlags(argc, argv, &f) || (mode != "back" && mode != "front" && mode != "client") ||
      (mode == "front" && f.back.empty()) || (mode == "client" && f.target.empty())) {
    std::fprintf(stderr,
                 "usage: grpc_chain back|front|client --truth FILE [--back HOST:PORT] "
                 "[--callback] [--target HOST:PORT] [--threads N] [--inflight N] "
                 "[--requests N] [--channels N]\n");
    return 2;
  }
  Truth truth;
  if (mode == "client") return RunClient(f, truth);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  if (mode == "back") {
    BackService service(truth);
    return Serve(&service, truth, f.truth);
  }
  auto back = grpc::CreateChannel(f.back, grpc::InsecureChannelCredentials());
  if (f.callback) {
    FrontCallbackService service(truth, back);
    return Serve(&service, truth, f.truth);
  }
  FrontService service(truth, back);
  return Serve(&service, truth, f.truth);
}
