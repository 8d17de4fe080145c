// Interning the strings live advice keeps: the same contents give the same kept string,
// whichever address they come from, and a reused address with new contents is not
// mistaken for the string it held before.
#include "pivot/interner.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace weft::pivot {
namespace {

TEST(Interner, SameContentsKeepOneString) {
  std::string a = "front0", b = "front0";
  query::Value ka = InternValue(query::Value::String(a));
  query::Value kb = InternValue(query::Value::String(b));
  ASSERT_EQ(ka.type, query::ValueType::kString);
  EXPECT_EQ(ka.s, "front0");
  EXPECT_EQ(ka.s.data(), kb.s.data());  // one kept copy
  EXPECT_NE(ka.s.data(), a.data());     // not the caller's memory
  // Again from the same address: the recent strings answer, with the same copy.
  EXPECT_EQ(InternValue(query::Value::String(a)).s.data(), ka.s.data());
  // Another thread finds the same copy through the process-wide set.
  const char* there = nullptr;
  std::thread([&] { there = InternValue(query::Value::String(b)).s.data(); }).join();
  EXPECT_EQ(there, ka.s.data());
}

TEST(Interner, AReusedAddressWithNewContentsIsInternedAnew) {
  char buffer[16] = "storage0";
  query::Value first = InternValue(query::Value::String(std::string_view(buffer, 8)));
  EXPECT_EQ(first.s, "storage0");
  buffer[7] = '1';  // same address, same size, other contents
  query::Value second = InternValue(query::Value::String(std::string_view(buffer, 8)));
  EXPECT_EQ(second.s, "storage1");
  EXPECT_EQ(first.s, "storage0");  // the first kept copy is untouched
  query::Value shorter = InternValue(query::Value::String(std::string_view(buffer, 7)));
  EXPECT_EQ(shorter.s, "storage");
}

TEST(Interner, OtherValuesPassThrough) {
  EXPECT_EQ(InternValue(query::Value::Int(7)).i, 7);
  EXPECT_EQ(InternValue(query::Value::Null()).type, query::ValueType::kNull);
}

}  // namespace
}  // namespace weft::pivot
