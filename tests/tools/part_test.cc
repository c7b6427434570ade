// shardify's part logic without a scheduler: --part auto from fake Slurm variables, and
// merge's check of part directories from their completion markers (tools/shardify/part.h).
#include "part.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "assert_ok.h"
#include "shards/checksum.h"
#include "test_util.h"

namespace sluice::shardify {
namespace {
namespace fs = std::filesystem;
using sluice::testing::TempDir;
using sluice::testing::WriteFile;

EnvFn Env(std::map<std::string, std::string> vars) {
  auto held = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [held](const char* name) -> const char* {
    auto it = held->find(name);
    return it == held->end() ? nullptr : it->second.c_str();
  };
}

Status Resolve(const std::string& spec, std::map<std::string, std::string> vars, uint32_t* i,
               uint32_t* n) {
  return ResolvePart(spec, Env(std::move(vars)), i, n);
}

TEST(PartTest, AutoTakesTheArrayTaskIdAndCount) {
  uint32_t i = 9, n = 9;
  ASSERT_OK(
      Resolve("auto", {{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "3"}}, &i, &n));
  EXPECT_EQ(i, 2u);
  EXPECT_EQ(n, 3u);
  // An array that starts at 1 (--array=1-3): part = id - MIN.
  ASSERT_OK(Resolve("auto",
                    {{"SLURM_ARRAY_TASK_ID", "1"},
                     {"SLURM_ARRAY_TASK_COUNT", "3"},
                     {"SLURM_ARRAY_TASK_MIN", "1"},
                     {"SLURM_ARRAY_TASK_MAX", "3"}},
                    &i, &n));
  EXPECT_EQ(i, 0u);
  EXPECT_EQ(n, 3u);
  ASSERT_OK(Resolve("3/8", {}, &i, &n));
  EXPECT_EQ(i, 3u);
  EXPECT_EQ(n, 8u);
}

TEST(PartTest, AutoOverNTakesTheIdAsThePartOfN) {
  uint32_t i = 0, n = 0;
  // A rerun of parts 3 and 7 of 16: COUNT is 2, the part count comes from the flag.
  ASSERT_OK(Resolve("auto/16",
                    {{"SLURM_ARRAY_TASK_ID", "7"},
                     {"SLURM_ARRAY_TASK_COUNT", "2"},
                     {"SLURM_ARRAY_TASK_MIN", "3"},
                     {"SLURM_ARRAY_TASK_MAX", "7"}},
                    &i, &n));
  EXPECT_EQ(i, 7u);
  EXPECT_EQ(n, 16u);
  Status st = Resolve("auto/4", {{"SLURM_ARRAY_TASK_ID", "4"}}, &i, &n);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("SLURM_ARRAY_TASK_ID=4 is not a part of 0..3"), std::string::npos)
      << st.message();
  EXPECT_FALSE(Resolve("auto/0", {{"SLURM_ARRAY_TASK_ID", "0"}}, &i, &n).ok());
  EXPECT_FALSE(Resolve("auto/x", {{"SLURM_ARRAY_TASK_ID", "0"}}, &i, &n).ok());
}

TEST(PartTest, AutoErrorsNameTheVariables) {
  uint32_t i = 0, n = 0;
  Status st = Resolve("auto", {}, &i, &n);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("SLURM_ARRAY_TASK_ID unset"), std::string::npos) << st.message();
  st = Resolve("auto", {{"SLURM_ARRAY_TASK_ID", "1"}}, &i, &n);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("SLURM_ARRAY_TASK_COUNT unset"), std::string::npos) << st.message();
  st = Resolve("auto", {{"SLURM_ARRAY_TASK_ID", "abc"}, {"SLURM_ARRAY_TASK_COUNT", "3"}}, &i, &n);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("SLURM_ARRAY_TASK_ID=abc"), std::string::npos) << st.message();
  // A list of ids (sbatch --array=3,7): COUNT is not the number of parts.
  st = Resolve("auto",
               {{"SLURM_ARRAY_TASK_ID", "3"},
                {"SLURM_ARRAY_TASK_COUNT", "2"},
                {"SLURM_ARRAY_TASK_MIN", "3"},
                {"SLURM_ARRAY_TASK_MAX", "7"}},
               &i, &n);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not one contiguous range"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("--part auto/N"), std::string::npos) << st.message();
  // An id outside MIN..MAX.
  EXPECT_FALSE(Resolve("auto",
                       {{"SLURM_ARRAY_TASK_ID", "9"},
                        {"SLURM_ARRAY_TASK_COUNT", "3"},
                        {"SLURM_ARRAY_TASK_MIN", "0"}},
                       &i, &n)
                   .ok());
}

// A complete part directory: a manifest and a marker that vouches for it.
void MakePart(const std::string& dir, uint32_t part, uint32_t parts, const std::string& input,
              const std::string& shard_size = "100") {
  fs::create_directories(dir);
  const std::string manifest = "{\"part\": \"" + PartSpec(part, parts) + "\"}\n";
  WriteFile(dir + "/manifest.json", manifest);
  PartMarker m;
  m.part = part;
  m.parts = parts;
  m.input_items = 10 * parts;
  m.first_item = 10 * part;
  m.end_item = 10 * (part + 1);
  m.input_xxh3 = input;
  m.options = {{"command", "audio"}, {"part", PartSpec(part, parts)}, {"shard_size", shard_size}};
  m.writer = {{"shard_size", 100}, {"block_size", 10}, {"zstd_level", -1}};
  m.manifest_xxh3 = shards::ChecksumHex(shards::Checksum(manifest.data(), manifest.size()));
  m.created_by = "test";
  ASSERT_OK(WritePartMarker(dir, m));
}

TEST(PartTest, MarkerRoundTripsAndVouchesForItsManifest) {
  TempDir tmp;
  MakePart(tmp.Join("p"), 2, 5, "abc");
  PartMarker m;
  ASSERT_OK(LoadPartMarker(tmp.Join("p"), &m));
  EXPECT_EQ(m.part, 2u);
  EXPECT_EQ(m.parts, 5u);
  EXPECT_EQ(m.first_item, 20u);
  EXPECT_EQ(m.writer["block_size"], 10);
  EXPECT_TRUE(LoadPartMarker(tmp.Join("none"), &m).IsNotFound());
  WriteFile(tmp.Join("p/manifest.json"), "{}\n");  // rewritten after the marker
  Status st = LoadPartMarker(tmp.Join("p"), &m);
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("rewritten after the part completed"), std::string::npos);
  WriteFile(tmp.Join("p/part.json"), "{\"part_marker\": 1}");
  EXPECT_TRUE(LoadPartMarker(tmp.Join("p"), &m).IsCorruption());
}

TEST(PartTest, CollectOrdersCompletePartsByIndex) {
  TempDir tmp;
  for (uint32_t i : {2u, 0u, 1u}) MakePart(tmp.Join(std::to_string(i)), i, 3, "abc");
  std::vector<CompletePart> parts;
  ASSERT_OK(CollectParts({tmp.Join("2"), tmp.Join("0"), tmp.Join("1")}, &parts));
  ASSERT_EQ(parts.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(parts[i].marker.part, i);
    EXPECT_EQ(parts[i].dir, tmp.Join(std::to_string(i)));
  }
}

TEST(PartTest, CollectNamesMissingAndIncompletePartsByIndex) {
  TempDir tmp;
  for (uint32_t i : {0u, 1u, 2u, 4u, 5u, 6u}) MakePart(tmp.Join(std::to_string(i)), i, 8, "abc");
  // Part 3 crashed: shards and a journal, no marker. Part 7 never ran.
  fs::create_directories(tmp.Join("3"));
  WriteFile(tmp.Join("3/.shardify-journal.jsonl"),
            "{\"journal\":1,\"fingerprint\":{\"part\":\"3/8\"}}\n");
  WriteFile(tmp.Join("3/shard-00000.sluice"), "x");
  std::vector<std::string> dirs;
  ASSERT_OK(ListPartDirs(tmp.path(), &dirs));
  std::vector<CompletePart> parts;
  Status st = CollectParts(dirs, &parts);
  ASSERT_TRUE(st.IsInvalidArgument());
  const std::string& msg = st.message();
  EXPECT_NE(msg.find("parts 3, 7 of 8 missing or incomplete"), std::string::npos) << msg;
  EXPECT_NE(msg.find(tmp.Join("3") + " (no part.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("its journal is part 3/8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sbatch --array=3,7"), std::string::npos) << msg;
  // Listed explicitly, a directory that does not exist is named as such.
  st = CollectParts({tmp.Join("0"), tmp.Join("7")}, &parts);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(tmp.Join("7") + " (does not exist)"), std::string::npos)
      << st.message();
}

TEST(PartTest, CollectRefusesPartsOfDifferentRuns) {
  TempDir tmp;
  MakePart(tmp.Join("a0"), 0, 2, "abc");
  MakePart(tmp.Join("a1"), 1, 2, "abc");
  MakePart(tmp.Join("other_input"), 1, 2, "def");
  MakePart(tmp.Join("other_options"), 1, 2, "abc", "200");
  MakePart(tmp.Join("other_count"), 1, 3, "abc");
  MakePart(tmp.Join("again0"), 0, 2, "abc");
  std::vector<CompletePart> parts;
  ASSERT_OK(CollectParts({tmp.Join("a0"), tmp.Join("a1")}, &parts));
  Status st = CollectParts({tmp.Join("a0"), tmp.Join("other_input")}, &parts);
  EXPECT_NE(st.message().find("input (items, XXH3)"), std::string::npos) << st.message();
  st = CollectParts({tmp.Join("a0"), tmp.Join("other_options")}, &parts);
  EXPECT_NE(st.message().find("options"), std::string::npos) << st.message();
  st = CollectParts({tmp.Join("a0"), tmp.Join("other_count")}, &parts);
  EXPECT_NE(st.message().find("part count 3"), std::string::npos) << st.message();
  st = CollectParts({tmp.Join("a0"), tmp.Join("again0"), tmp.Join("a1")}, &parts);
  EXPECT_NE(st.message().find("part 0/2 is in both"), std::string::npos) << st.message();
}

TEST(PartTest, PartsDirListsNumericNamesInNumericOrder) {
  TempDir tmp;
  for (const char* d : {"10", "2", "0", "1", "merged"}) fs::create_directories(tmp.Join(d));
  WriteFile(tmp.Join("notes.txt"), "");
  std::vector<std::string> dirs;
  ASSERT_OK(ListPartDirs(tmp.path(), &dirs));
  EXPECT_EQ(dirs, (std::vector<std::string>{tmp.Join("0"), tmp.Join("1"), tmp.Join("2"),
                                            tmp.Join("10"), tmp.Join("merged")}));
  EXPECT_TRUE(ListPartDirs(tmp.Join("none"), &dirs).IsNotFound());
}

}  // namespace
}  // namespace sluice::shardify
