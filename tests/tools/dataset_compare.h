// Comparing dataset directories byte for byte (the shardify and Slurm suites).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "shards/checksum.h"
#include "test_util.h"

namespace sluice::testing {

// Every file of a dataset directory, name -> size and checksum of its bytes.
inline std::map<std::string, std::string> DirContents(const std::string& dir) {
  std::map<std::string, std::string> m;
  for (const auto& de : std::filesystem::directory_iterator(dir)) {
    const std::string bytes = ReadFile(de.path().string());
    m[de.path().filename().string()] =
        std::to_string(bytes.size()) + ":" +
        shards::ChecksumHex(shards::Checksum(bytes.data(), bytes.size()));
  }
  return m;
}

// Shard, rejects and tokenizer files equal byte for byte, and manifest.json equal but for
// "source", which must differ: a single run records its input, a merge the part directories
// and each part's item range.
inline void ExpectSameDatasetBytes(const std::string& a, const std::string& b) {
  auto da = DirContents(a), db = DirContents(b);
  da.erase("manifest.json");
  db.erase("manifest.json");
  EXPECT_EQ(da, db);
  auto ma = nlohmann::json::parse(ReadFile(a + "/manifest.json"));
  auto mb = nlohmann::json::parse(ReadFile(b + "/manifest.json"));
  ma.erase("source");
  mb.erase("source");
  EXPECT_EQ(ma, mb);
}

}  // namespace sluice::testing
