// The thread-local current baggage and the helpers that carry it across a queue hand-off,
// a spawned thread and fork().
#include "pivot/current_baggage.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace weft::pivot {
namespace {

void Pack(int64_t v) {
  query::Value value = query::Value::Int(v);
  CurrentBaggage().Contents().Active(0, 1, 0).Append(&value, nullptr, 1, v);
}

std::vector<int64_t> Unpack(Baggage& b) {
  std::vector<int64_t> out;
  b.Contents().ForEachInstance(0, [&](const query::PackedTuples& t) {
    for (size_t i = 0; i < t.size(); ++i) out.push_back(t.Values(i)[0].i);
  });
  std::sort(out.begin(), out.end());
  return out;
}
std::vector<int64_t> Current() { return Unpack(CurrentBaggage()); }

TEST(CurrentBaggage, EachThreadHasItsOwn) {
  CurrentBaggage().Clear();
  Pack(1);
  std::vector<int64_t> there;
  std::thread([&] { there = Current(); }).join();
  EXPECT_TRUE(there.empty());
  EXPECT_EQ(Current(), std::vector<int64_t>{1});
}

TEST(CurrentBaggage, QueueHandOffMovesTheRequest) {
  struct Item {
    int request;
    Baggage baggage;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Item> queue;
  std::vector<std::vector<int64_t>> consumed(3);
  std::thread consumer([&] {
    for (int k = 0; k < 3; ++k) {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return !queue.empty(); });
      Item item = std::move(queue.front());
      queue.pop_front();
      lock.unlock();
      ScopedBaggage scope(std::move(item.baggage));
      Pack(100 + item.request);
      consumed[size_t(item.request)] = Current();
    }
  });
  for (int request = 0; request < 3; ++request) {
    CurrentBaggage().Clear();
    Pack(request);
    Item item{request, TakeCurrentBaggage()};
    EXPECT_EQ(CurrentBaggage().tuples(), 0u);  // the request left this thread
    std::lock_guard lock(mu);
    queue.push_back(std::move(item));
    cv.notify_one();
  }
  consumer.join();
  for (int64_t r = 0; r < 3; ++r)
    EXPECT_EQ(consumed[size_t(r)], (std::vector<int64_t>{r, 100 + r}));
}

TEST(CurrentBaggage, ScopedBaggagePutsTheOuterOneBack) {
  CurrentBaggage().Clear();
  Pack(1);
  Baggage inner;
  {
    ScopedBaggage scope(std::move(inner));
    Pack(2);
    EXPECT_EQ(Current(), std::vector<int64_t>{2});
    EXPECT_EQ(Unpack(scope.baggage()), std::vector<int64_t>{1});
  }
  EXPECT_EQ(Current(), std::vector<int64_t>{1});
}

TEST(CurrentBaggage, InstalledBaggageIsTheCurrentOneInPlace) {
  CurrentBaggage().Clear();
  Pack(1);
  Baggage request, other;
  {
    InstalledBaggage scope(request);
    EXPECT_EQ(&CurrentBaggage(), &request);
    Pack(2);
    {
      InstalledBaggage nested(other);
      Pack(3);
      EXPECT_EQ(Current(), std::vector<int64_t>{3});
      // Assigning the current baggage replaces the installed one, not the thread's own.
      Baggage replaced;
      CurrentBaggage() = std::move(replaced);
      Pack(4);
    }
    EXPECT_EQ(&CurrentBaggage(), &request);
    Pack(5);
  }
  EXPECT_EQ(Current(), std::vector<int64_t>{1});
  EXPECT_EQ(Unpack(request), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(Unpack(other), std::vector<int64_t>{4});
  // Another thread's current baggage is its own, whatever this thread installed.
  InstalledBaggage scope(request);
  std::vector<int64_t> there = {-1};
  std::thread([&] { there = Current(); }).join();
  EXPECT_TRUE(there.empty());
}

TEST(CurrentBaggage, SpawnedThreadsRunOnBranchesThatJoinBack) {
  CurrentBaggage().Clear();
  Pack(1);
  Baggage a = CurrentBaggage().Split();
  Baggage b = CurrentBaggage().Split();
  std::vector<int64_t> seen_a, seen_b;
  std::thread ta([&] {
    RunWithBaggage(a, [&] {
      Pack(10);
      seen_a = Current();
    });
  });
  std::thread tb([&] {
    RunWithBaggage(b, [&] {
      Pack(20);
      seen_b = Current();
    });
  });
  ta.join();
  tb.join();
  EXPECT_EQ(seen_a, (std::vector<int64_t>{1, 10}));  // not the sibling's 20
  EXPECT_EQ(seen_b, (std::vector<int64_t>{1, 20}));
  Pack(2);
  CurrentBaggage().Join(std::move(a));
  CurrentBaggage().Join(std::move(b));
  EXPECT_EQ(Current(), (std::vector<int64_t>{1, 2, 10, 20}));

  // A wrapped callable carries a branch and leaves the spawner's baggage alone.
  std::vector<int64_t> seen_c;
  std::thread tc(WithBranchOfCurrentBaggage([&] {
    Pack(30);
    seen_c = Current();
  }));
  tc.join();
  EXPECT_EQ(seen_c, (std::vector<int64_t>{1, 2, 10, 20, 30}));
  EXPECT_EQ(Current(), (std::vector<int64_t>{1, 2, 10, 20}));
}

TEST(CurrentBaggage, ForkedChildContinuesABranch) {
  CurrentBaggage().Clear();
  Pack(1);
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  pid_t pid = ForkWithBaggage();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child: packs into its branch and sends it back whole.
    close(pipe_fds[0]);
    Pack(50);
    std::string bytes = CurrentBaggage().Serialize();
    bool ok = Current() == std::vector<int64_t>{1, 50} &&
              write(pipe_fds[1], bytes.data(), bytes.size()) == ssize_t(bytes.size());
    _exit(ok ? 0 : 1);
  }
  close(pipe_fds[1]);
  Pack(2);
  std::string bytes;
  char buf[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) > 0;) bytes.append(buf, size_t(n));
  close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(Current(), (std::vector<int64_t>{1, 2}));
  Baggage child;
  ASSERT_TRUE(child.Deserialize(bytes).ok());
  CurrentBaggage().Join(std::move(child));
  EXPECT_EQ(Current(), (std::vector<int64_t>{1, 2, 50}));
}

}  // namespace
}  // namespace weft::pivot
