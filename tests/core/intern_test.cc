#include "core/intern.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(InternTest, DenseStableIds) {
  StringTable t;
  StringId a = t.Intern("alpha");
  StringId b = t.Intern("beta");
  EXPECT_EQ(a.value(), 0u);
  EXPECT_EQ(b.value(), 1u);
  EXPECT_EQ(t.Intern("alpha"), a);
  EXPECT_EQ(t.Get(b), "beta");
  EXPECT_EQ(t.Find("beta"), b);
  EXPECT_FALSE(t.Find("gamma").valid());
  EXPECT_TRUE(t.Contains(b));
  EXPECT_FALSE(t.Contains(StringId(2)));
  EXPECT_FALSE(t.Contains(StringId()));
  std::string_view view = t.Get(a);
  for (int i = 0; i < 10000; ++i) t.Intern("s" + std::to_string(i));
  EXPECT_EQ(view, "alpha");  // views survive growth
  EXPECT_EQ(t.size(), 10002u);
}

TEST(InternTest, CopiesAreIndependent) {
  NodeTable t;
  t.Intern("WS1");
  NodeTable copy = t;
  copy.Intern("WS2");
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(copy.size(), 2u);
  EXPECT_EQ(copy.Get(NodeId(0)), "WS1");
}

}  // namespace
}  // namespace weft
