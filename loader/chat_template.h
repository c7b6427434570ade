// Prompt formatting, declared (docs/conversations.md, "Templates"): how a conversation record
// (shards/conversation.h) becomes the LLM's token ids, its loss mask and one placeholder span per
// audio turn, from a JSON template instead of code:
//
//   {"roles": {"user": {"prefix": "<|im_start|>user\n", "suffix": "<|im_end|>\n",
//                       "audio_prefix": "<|audio_bos|>", "audio_suffix": "<|audio_eos|>",
//                       "audio_position": "before_text"},
//              "assistant": {"prefix": "<|im_start|>assistant\n", "suffix": "<|im_end|>\n",
//                            "loss": true}, ...},
//    "placeholder": "<|audio|>"}
//
// Usage:
//   ChatTemplate t;
//   SLUICE_RETURN_IF_ERROR(ParseChatTemplate(json_text, "template.json", &t));
//   SLUICE_RETURN_IF_ERROR(ResolveChatTemplate(tokenizer, &t));  // texts -> the tokenizer's ids
//   RenderedConversation out;
//   SLUICE_RETURN_IF_ERROR(RenderConversation(t, turns, frames, &out));
//
// t.checksum identifies the template's meaning (its canonical JSON), for a run record that
// refuses to resume with another template.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "features/tokenizer.h"
#include "shards/conversation.h"

namespace sluice::loader {

// Text the tokenizer turns into ids (special tokens as the tokenizer finds them), or ids given
// as such: {"ids": [151644]}.
struct TemplatePiece {
  std::string text;
  std::vector<int32_t> ids;  // given, or ResolveChatTemplate's tokenization of `text`
  bool given_ids = false;
};

struct RoleTemplate {
  TemplatePiece prefix;        // before the turn's contents; never carries loss
  TemplatePiece suffix;        // after them; carries loss when `loss` (the end of turn is learnt)
  TemplatePiece audio_prefix;  // around the placeholder span of the turn's audio
  TemplatePiece audio_suffix;
  bool audio_after_text = false;  // "audio_position": "before_text" (default) or "after_text"
  bool loss = false;              // the turn's text ids and suffix carry loss
};

struct ChatTemplate {
  // Indexed by shards::Role. Defaults: no prefix or suffix, loss on assistant turns only.
  std::array<RoleTemplate, shards::kMaxRole + 1> roles;
  TemplatePiece placeholder;  // one id: what fills a placeholder span
  bool has_placeholder = false;  // given; only a dataset with audio turns needs one
  // "task": {"prompt": ...}: how a plain ASR record (audio and transcript, no turns) becomes a
  // conversation, for mixtures of ASR and conversation datasets: a user turn of the prompt's
  // text and the audio, then an assistant turn whose text is the transcript (AsrTaskTurns).
  TemplatePiece task_prompt;
  bool has_task = false;
  std::vector<uint32_t> task_prompt_ids;  // task_prompt.ids as a turn's ids (ResolveChatTemplate)
  std::string canonical;      // the template as canonical JSON (sorted keys, defaults filled)
  uint64_t checksum = 0;      // XXH3-64 of `canonical`
  bool resolved = false;
};

// Parses a template; InvalidArgument naming `name`, the JSON path and the reason for an unknown
// role or key or a mistyped value. The placeholder may be left out (text-only conversations).
Status ParseChatTemplate(std::string_view json_text, std::string_view name, ChatTemplate* out);
// Tokenizes every text piece with `tokenizer`; the placeholder, if any, must be one id.
Status ResolveChatTemplate(const features::Tokenizer& tokenizer, ChatTemplate* t);

// The one-turn conversation an ASR record of `samples` samples and transcript ids `transcript`
// becomes through the template's task: a user turn with the task prompt's ids as its text and the
// audio, then an assistant turn with the transcript. The turns view `t` and `transcript`, which
// must outlive them. Written into `turns`, which allocates only while it has no room for two.
// InvalidArgument for a template without a task or not resolved.
Status AsrTaskTurns(const ChatTemplate& t, uint32_t samples, std::span<const uint32_t> transcript,
                    std::vector<shards::ConversationTurn>* turns);
// Their turn table (what the index would hold for it): for costs without the ids. By value, on
// the stack: no allocation per record.
std::array<shards::TurnEntry, 2> AsrTaskEntries(const ChatTemplate& t, uint32_t samples,
                                                uint32_t transcript_tokens);

// Encoder frames of an audio turn of `samples` samples (the encoder-frame counter plugs in here).
using FramesFn = std::function<uint64_t(uint64_t samples)>;

struct PlaceholderSpan {
  uint32_t turn = 0;    // the audio turn's index in the conversation
  uint64_t start = 0;   // first position in `ids`
  uint64_t length = 0;  // frames(samples) positions, each the placeholder id
};

struct RenderedConversation {
  std::vector<int32_t> ids;
  std::vector<uint8_t> loss;  // 1 where the position's id is a target
  std::vector<PlaceholderSpan> spans;
};

// Renders `turns` (shards::DecodeConversation of a record with token ids) with a resolved
// template: per turn prefix, then audio (audio_prefix, frames(samples) placeholders,
// audio_suffix) and text ids in the role's order, then suffix. InvalidArgument for a turn with
// text but no stored ids (a dataset made without --tokenizer), or an audio turn with a template
// that has no placeholder.
Status RenderConversation(const ChatTemplate& t, std::span<const shards::ConversationTurn> turns,
                          const FramesFn& frames, RenderedConversation* out);

}  // namespace sluice::loader
