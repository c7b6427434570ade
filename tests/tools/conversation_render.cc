// Renders every record of a conversation dataset with a template (loader/chat_template.h) and
// prints one JSON line per record: key, ids, loss, spans. The placeholder spans' lengths come
// from frames(samples) = ceil(samples / 640) (a 40 ms encoder frame at 16 kHz), which
// conversation_render_test.py's own rendering uses too.
//   conversation_render DATASET_DIR TEMPLATE_JSON
#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/file.h"
#include "loader/chat_template.h"
#include "loader/dataset_tokenizer.h"
#include "shards/conversation.h"
#include "shards/dataset.h"

namespace {

int Fail(const sluice::Status& st) {
  std::fprintf(stderr, "conversation_render: %s\n", st.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sluice;
  if (argc != 3) {
    std::fprintf(stderr, "usage: conversation_render DATASET_DIR TEMPLATE_JSON\n");
    return 2;
  }
  std::unique_ptr<shards::Dataset> ds;
  Status st = shards::Dataset::Open(argv[1], {}, &ds);
  if (!st.ok()) return Fail(st);
  std::unique_ptr<features::Tokenizer> tok;
  st = loader::LoadDatasetTokenizer(*ds->manifest().tokenizer, argv[1], &tok);
  if (!st.ok()) return Fail(st);
  std::string text;
  st = ReadFileToString(argv[2], &text);
  if (!st.ok()) return Fail(st);
  loader::ChatTemplate t;
  st = loader::ParseChatTemplate(text, argv[2], &t);
  if (st.ok()) st = loader::ResolveChatTemplate(*tok, &t);
  if (!st.ok()) return Fail(st);
  const loader::FramesFn frames = [](uint64_t samples) { return (samples + 639) / 640; };
  for (size_t s = 0; s < ds->manifest().shards.size(); ++s) {
    const shards::ShardReader& sh = ds->shard(s);
    for (size_t i = 0; i < sh.num_records(); ++i) {
      std::string payload;
      shards::RecordView v;
      std::vector<shards::ConversationTurn> turns;
      loader::RenderedConversation out;
      st = sh.ReadRecord(i, &payload);
      if (st.ok()) st = shards::ParseRecord(payload.data(), payload.size(), "record", &v);
      if (st.ok()) st = shards::DecodeConversation(v, "record", &turns);
      if (st.ok()) st = loader::RenderConversation(t, turns, frames, &out);
      if (!st.ok()) return Fail(st);
      nlohmann::json spans = nlohmann::json::array();
      for (const auto& sp : out.spans) spans.push_back({sp.turn, sp.start, sp.length});
      std::printf("%s\n", nlohmann::json{{"key", std::string(sh.key(i))},
                                         {"ids", out.ids},
                                         {"loss", out.loss},
                                         {"spans", spans},
                                         {"checksum", t.checksum}}
                              .dump()
                              .c_str());
    }
  }
  return 0;
}
