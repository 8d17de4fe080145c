#include "core/status.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

Result<int> Half(int x) {
  if (x % 2) return Status::InvalidArgument("{} is odd", x);
  return x / 2;
}

Result<int> Quarter(int x) {
  WEFT_ASSIGN_OR_RETURN(int h, Half(x));
  WEFT_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckEven(int x) {
  WEFT_RETURN_IF_ERROR(Half(x).status());
  return Status::Ok();
}

TEST(StatusTest, OkAndErrors) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = Status::Corruption("section '{}' at {}", "send_time", 64);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(), "section 'send_time' at 64");
  EXPECT_EQ(s.WithContext("x.weft").message(), "x.weft: section 'send_time' at 64");
  EXPECT_TRUE(Status::Ok().WithContext("x").ok());
}

TEST(StatusTest, ResultPropagates) {
  EXPECT_EQ(*Quarter(12), 3);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "3 is odd");
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_EQ(CheckEven(5).message(), "5 is odd");
}

}  // namespace
}  // namespace weft
