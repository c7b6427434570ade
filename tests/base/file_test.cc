// The file seam's writers and line reader (base/file.h), with the fault injector in front of
// their calls (base/sysio.h): a read error is never an end of file, an append-only log is cut
// back to what its journal vouches for and no further, a failed atomic write leaves no debris.
#include "base/file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "base/sysio.h"
#include "test_util.h"

namespace sluice {
namespace {
namespace fs = std::filesystem;

void Arm(const std::string& text) {
  sysio::FaultSpec spec;
  std::string why;
  ASSERT_TRUE(sysio::ParseFaultSpec(text, &spec, &why)) << why;
  sysio::ArmFaults(spec);
}

class FileTest : public ::testing::Test {
 protected:
  void TearDown() override { sysio::ArmFaults({}); }
  std::vector<std::string> Lines(const std::string& path, Status* st) {
    std::unique_ptr<LineReader> r;
    *st = LineReader::Open(path, &r);
    std::vector<std::string> out;
    if (!st->ok()) return out;
    for (std::string line; r->Next(&line, st);) out.push_back(line);
    return out;
  }
  testing::TempDir dir_;
};

TEST_F(FileTest, LineReaderReadsEveryLineAcrossChunks) {
  // Lines longer than a chunk (64 KiB), an empty line and a last line without "\n".
  const std::string big(100000, 'x');
  testing::WriteFile(dir_.Join("a"), "one\n\n" + big + "\ntwo\r\nlast");
  Status st;
  const auto lines = Lines(dir_.Join("a"), &st);
  ASSERT_OK(st);
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "", big, "two\r", "last"}));
}

// A line of many chunks was searched for its end from its start again after every chunk: 52 s
// for one 200 MB line of `shardify text`. Each byte is searched once, whatever the line lengths.
TEST_F(FileTest, LineReaderSearchesEachByteOnceInALongLine) {
  // Two lines of 64 chunks (64 KiB each), the last one without "\n".
  const std::string big(4 << 20, 'x');
  const std::string text = "a\n" + big + "\nb\n" + big;
  testing::WriteFile(dir_.Join("long"), text);
  std::unique_ptr<LineReader> r;
  ASSERT_OK(LineReader::Open(dir_.Join("long"), &r));
  std::vector<size_t> sizes;
  Status st;
  for (std::string line; r->Next(&line, &st);) sizes.push_back(line.size());
  ASSERT_OK(st);
  EXPECT_EQ(sizes, (std::vector<size_t>{1, big.size(), 1, big.size()}));
  EXPECT_EQ(r->bytes_searched(), text.size());
}

TEST_F(FileTest, LineReaderMissingFileIsNotFound) {
  Status st;
  Lines(dir_.Join("nope"), &st);
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
}

// Input manifests and journals (LineReader), tokenizer models and checkpoints
// (ReadFileToString): a FIFO among them blocked open() until a writer appeared.
TEST_F(FileTest, FifoIsRefusedByTheLineReaderAndWholeFileReads) {
  const std::string path = dir_.Join("fifo");
  testing::FifoWatchdog watchdog(path, 10);
  Status st;
  Lines(path, &st);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_EQ(st.message().rfind(path + ": not a regular file (FIFO)", 0), 0u) << st.message();
  std::string bytes;
  st = ReadFileToString(path, &bytes);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_EQ(st.message().rfind(path + ": not a regular file (FIFO)", 0), 0u) << st.message();
  EXPECT_FALSE(watchdog.fired()) << "an open() blocked on the FIFO";
}

// std::getline takes a read error for the end of the file: a failing disk would silently cut
// an input manifest short. The reader reports it, naming file and offset.
TEST_F(FileTest, LineReaderReadErrorIsAnErrorNotTheEnd) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "line " + std::to_string(i) + "\n";  // > 1 chunk
  testing::WriteFile(dir_.Join("m"), text);
  Arm("3:eio:m");  // open, the first chunk, then the second chunk fails
  Status st;
  const auto lines = Lines(dir_.Join("m"), &st);
  ASSERT_TRUE(st.IsIOError()) << st.ToString();
  EXPECT_NE(st.message().find(dir_.Join("m") + ": read of 65536 bytes at offset 65536"),
            std::string::npos)
      << st.ToString();
  EXPECT_LT(lines.size(), 20000u);
}

TEST_F(FileTest, LineReaderShortReadsChangeNothing) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += std::to_string(i) + "\n";
  testing::WriteFile(dir_.Join("m"), text);
  for (int n = 1; n <= 3; ++n) {
    Arm(std::to_string(n) + ":short:m");
    Status st;
    const auto lines = Lines(dir_.Join("m"), &st);
    ASSERT_OK(st);
    ASSERT_EQ(lines.size(), 20000u) << n;
    EXPECT_EQ(lines.back(), "19999");
  }
}

TEST_F(FileTest, OpenForAppendKeepsWhatTheJournalVouchesFor) {
  const std::string path = dir_.Join("log");
  testing::WriteFile(path, "kept\ntorn li");
  std::unique_ptr<WritableFile> f;
  ASSERT_OK(WritableFile::OpenForAppend(path, 5, &f));
  ASSERT_OK(f->Append("next\n"));
  ASSERT_OK(f->Close());
  EXPECT_EQ(testing::ReadFile(path), "kept\nnext\n");
}

TEST_F(FileTest, OpenForAppendRefusesAFileShorterThanVouchedFor) {
  const std::string path = dir_.Join("log");
  testing::WriteFile(path, "abc");
  std::unique_ptr<WritableFile> f;
  const Status st = WritableFile::OpenForAppend(path, 10, &f);
  ASSERT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find("holds 3 bytes, fewer than the 10"), std::string::npos);
  EXPECT_EQ(testing::ReadFile(path), "abc");  // not extended with zeros
}

TEST_F(FileTest, WriteErrorNamesFileOffsetAndCall) {
  const std::string path = dir_.Join("w");
  std::unique_ptr<WritableFile> f;
  ASSERT_OK(WritableFile::Create(path, &f));
  ASSERT_OK(f->Append(std::string(100, 'a')));
  ASSERT_OK(f->Sync());
  Arm("1:error:" + path);
  // A large append goes straight to the file: its write is call 1.
  const Status st = f->Append(std::string(2 << 20, 'b'));
  ASSERT_TRUE(st.IsIOError()) << st.ToString();
  EXPECT_NE(st.message().find(path + ": write of "), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("at offset 100: No space left on device"), std::string::npos)
      << st.ToString();
}

TEST_F(FileTest, FailedAtomicWriteLeavesNoFileAndNoDebris) {
  const std::string path = dir_.Join("manifest.json");
  for (const char* n : {"1", "2", "3"}) {  // create, write, fsync of the .tmp
    Arm(std::string(n) + ":error:manifest.json");
    EXPECT_FALSE(WriteFileAtomic(path, "{}").ok()) << n;
    sysio::ArmFaults({});
    EXPECT_FALSE(fs::exists(path)) << n;
    EXPECT_FALSE(fs::exists(path + ".tmp")) << n;
  }
  ASSERT_OK(WriteFileAtomic(path, "{}"));
  EXPECT_EQ(testing::ReadFile(path), "{}");
}

TEST_F(FileTest, LinkOrCopyFileGivesTheSameBytes) {
  const std::string from = dir_.Join("a"), to = dir_.Join("b");
  testing::WriteFile(from, "shard bytes");
  testing::WriteFile(to, "stale");
  ASSERT_OK(LinkOrCopyFile(from, to));
  EXPECT_EQ(testing::ReadFile(to), "shard bytes");
  Arm("1:eio:" + to);  // the link fails with EIO: an error, not a silent copy
  const Status st = LinkOrCopyFile(from, to);
  EXPECT_TRUE(st.IsIOError()) << st.ToString();
}

}  // namespace
}  // namespace sluice
