// A query that names something that does not exist, or puts an aggregate where it has no
// meaning, gets one diagnostic with its position, a caret and the nearest known name.
#include <gtest/gtest.h>

#include "query/hand_events.h"

namespace weft::query::testing {
namespace {

std::string Error(const std::string& query) {
  HandEvents events;
  return Ask(query, AbcTracepoints(), events, {}).error;
}

TEST(CompileErrors, NameTheNearestKnownName) {
  EXPECT_EQ(Error("From b In Bb Select b.id"),
            "query:1:11: unknown tracepoint 'Bb'; did you mean 'B'?\n"
            "  From b In Bb Select b.id\n"
            "            ^");
  EXPECT_EQ(Error("From b In B\nSelect b.idd"),
            "query:2:8: B has no variable 'idd'; did you mean 'id'?\n"
            "  Select b.idd\n"
            "         ^");
  EXPECT_EQ(Error("From bee In B Select be.id"),
            "query:1:22: unknown alias 'be'; did you mean 'bee'?\n"
            "  From bee In B Select be.id\n"
            "                       ^");
  EXPECT_EQ(Error("X = From a In A Select a.v; From b In B Join x In X On x -> b Select x.vv"),
            "query:1:70: 'x' has no column 'vv'; did you mean 'v'?\n"
            "  X = From a In A Select a.v; From b In B Join x In X On x -> b Select x.vv\n"
            "                                                                       ^");
}

TEST(CompileErrors, SayWhatIsWrongWithTheShape) {
  auto first_line = [](const std::string& e) { return e.substr(0, e.find('\n')); };
  EXPECT_EQ(first_line(Error("From b In B GroupBy b.host Select b.id, COUNT")),
            "query:1:35: 'b.id' must be in GroupBy or inside an aggregate");
  EXPECT_EQ(first_line(Error("From b In B Join a In A On b -> a Select COUNT")),
            "query:1:28: the joined alias comes first, as in On a -> b (a happened before b)");
  EXPECT_EQ(
      first_line(Error("X = From a In A Select a.v; From b In X Select b.v")),
      "query:1:39: 'X' is a named query: join it (Join x In X On x -> ...) rather than reading "
      "it in From or in a union");
  EXPECT_EQ(
      first_line(Error("From b In B Join a In (From x In A Select COUNT) On a -> b Select b.id")),
      "query:1:43: a joined query cannot aggregate; aggregate in the query that joins it");
  EXPECT_EQ(first_line(Error("From b In B Join a In A On a -> a Select b.id")),
            "query:1:33: a join cannot happen before itself");
  EXPECT_EQ(
      first_line(Error("From b In B Join a In A On a -> c Join c In C On c -> a Select b.id")),
      "query:1:13: these joins form a cycle");
  EXPECT_EQ(
      first_line(Error(
          "X = From a In A Select a.v; From b In B Join x In X On x -> b Select SUM(x.v) / 2")),
      "query:1:70: an aggregate must stand alone in Select (SUM(x), not SUM(x) / 2)");
}

}  // namespace
}  // namespace weft::query::testing
