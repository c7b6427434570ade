// The batch digests of one loader epoch over a dataset directory (the shardify suites compare
// datasets written different ways through what the loader makes of them).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "loader/digest.h"
#include "loader/loader.h"

namespace sluice::testing {

// DigestOf every batch of `epoch`, in order; empty (with a test failure) when the loader fails.
inline std::vector<uint64_t> EpochDigests(const std::string& dir, const loader::LoaderOptions& o,
                                          uint64_t epoch) {
  std::unique_ptr<loader::Loader> l;
  Status st = loader::Loader::Open(dir, o, &l);
  EXPECT_OK(st);
  std::vector<uint64_t> d;
  if (!st.ok() || !l->Start(epoch).ok()) return d;
  const loader::Batch* b = nullptr;
  while ((st = l->Next(&b)).ok() && b != nullptr) d.push_back(loader::DigestOf(*b));
  EXPECT_OK(st);
  return d;
}

}  // namespace sluice::testing
