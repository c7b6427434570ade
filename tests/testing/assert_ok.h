// ASSERT_OK / EXPECT_OK: check that a sluice::Status is OK and, when it is not, print the
// expression and the status (code, file, record, reason). `ASSERT_TRUE(s.ok())` prints only
// "false", which throws away the one thing a failing test should say.
//
//   ASSERT_OK(shards::Dataset::Open(dir, {}, &ds));
//   EXPECT_OK(tok->Encode(text, &ids)) << "text " << text;   // extra context streams as usual
#pragma once

#include <gtest/gtest.h>

#include "base/status.h"

namespace sluice::testing {

// The predicate-formatter behind the macros (gtest's EXPECT_PRED_FORMAT1 protocol).
inline ::testing::AssertionResult StatusIsOk(const char* expr, const Status& s) {
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expr << " returned " << s.ToString();
}

}  // namespace sluice::testing

#define ASSERT_OK(expr) ASSERT_PRED_FORMAT1(::sluice::testing::StatusIsOk, expr)
#define EXPECT_OK(expr) EXPECT_PRED_FORMAT1(::sluice::testing::StatusIsOk, expr)
