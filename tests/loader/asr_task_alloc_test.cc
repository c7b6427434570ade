// An ASR record in a conversation mixture allocates nothing of its own (docs/STYLE: the hot path
// allocates nothing per record): AsrTaskTurns writes its two turns into the caller's vector, and
// planning an ASR dataset builds no per-record message. Counted by replacing operator new in
// this binary (conversation_pack_tests), only while a test asks for it on its own thread.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <new>
#include <vector>

#include "assert_ok.h"
#include "conversation_dataset.h"
#include "features/encoder_frames.h"
#include "loader/chat_template.h"
#include "loader/conversation_plan.h"
#include "shards/dataset.h"
#include "test_dataset.h"
#include "test_util.h"

namespace {
thread_local bool counting = false;
thread_local uint64_t allocations = 0;
}  // namespace

// GCC sees free() on what its builtin operator new would return and warns; these replace both
// ends, so the pair matches.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t n) {
  if (counting) ++allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace sluice::loader {
namespace {

using namespace conversation_testing;  // NOLINT: the conversation dataset's helpers

// Allocations made by fn on this thread.
template <class Fn>
uint64_t Allocations(Fn&& fn) {
  allocations = 0;
  counting = true;
  fn();
  counting = false;
  return allocations;
}

ChatTemplate TaskTemplate() {
  ChatTemplate t;
  EXPECT_OK(ParseChatTemplate(
      R"({"roles": {"user": {"prefix": "<u>", "suffix": "|", "audio_prefix": "<a",
                             "audio_suffix": ">"},
                    "assistant": {"prefix": "<as>", "suffix": "||"}},
          "placeholder": {"ids": [77]}, "task": {"prompt": "say it"}})",
      "t.json", &t));
  features::TextNormalizeOptions norm;
  EXPECT_OK(ResolveChatTemplate(*Chars(&norm), &t));
  return t;
}

TEST(AsrTaskAllocations, TurnsAreWrittenIntoTheCallersVector) {
  const ChatTemplate t = TaskTemplate();
  const std::vector<uint32_t> transcript = {5, 9, 14};
  std::vector<shards::ConversationTurn> turns;
  ASSERT_OK(AsrTaskTurns(t, 16000, transcript, &turns));  // the vector's room, once
  const uint64_t n = Allocations([&] {
    for (int i = 0; i < 100; ++i) EXPECT_OK(AsrTaskTurns(t, 16000 + i, transcript, &turns));
  });
  EXPECT_EQ(n, 0u) << "allocations for 100 ASR records";
  ASSERT_EQ(turns.size(), 2u);
  EXPECT_EQ(turns[1].tokens.size(), transcript.size());
}

// Planning 400 ASR records: the columns' vectors grow (a few dozen allocations), nothing per
// record.
TEST(AsrTaskAllocations, PlanningAnAsrDatasetBuildsNothingPerRecord) {
  sluice::testing::TempDir dir;
  testing::AudioDatasetSpec spec;
  spec.records = 400;
  spec.min_samples = 400;
  spec.max_samples = 800;
  spec.with_tokens = true;
  testing::WriteAudioDataset(dir.path(), spec);
  std::unique_ptr<shards::Dataset> d;
  ASSERT_OK(shards::Dataset::Open(dir.path(), shards::ReadOptions(), &d));
  std::vector<const shards::ShardReader*> shards;
  for (size_t i = 0; i < d->num_shards(); ++i) shards.push_back(&d->shard(i));
  const std::vector<uint8_t> asr(shards.size(), 1);
  const ChatTemplate t = TaskTemplate();
  features::EncoderFramesSpec frames;
  ASSERT_OK(features::EncoderFramesPreset("fastconformer", &frames));
  ConversationColumns columns;
  Status st;
  const uint64_t n =
      Allocations([&] { st = ConversationIndexColumns(shards, t, frames, true, &columns, asr); });
  ASSERT_OK(st);
  EXPECT_EQ(columns.llm_tokens.size(), 400u);
  EXPECT_LT(n, 100u) << "allocations planning 400 ASR records";
}

}  // namespace
}  // namespace sluice::loader
