#include "loader/sources.h"

#include <nlohmann/json.hpp>
#include <string>

#include "loader/dataset_tokenizer.h"
#include "loader/mix.h"
#include "shards/checksum.h"
#include "storage/open.h"
#include "storage/url.h"

namespace sluice::loader {
namespace {

// A tokenizer as a message names it: its type, its size and the XXH3 of its whole description
// (which for char holds every character, too long to print).
std::string TokenizerBrief(const nlohmann::json& t) {
  if (t.is_null()) return "none";
  const std::string all = t.dump();
  std::string s = t.value("type", std::string("?"));
  if (t.contains("vocab_size")) s += ", " + t["vocab_size"].dump() + " ids";
  return s + ", description xxh3 " + shards::ChecksumHex(shards::Checksum(all.data(), all.size()));
}

// What an ASR source `asr` must share with conversation source `conv` for its records to be
// rendered as the template's task conversations beside the conversations (docs/conversations.md,
// "ASR datasets as task conversations"): empty, or why not, naming the ASR dataset and the fix.
// Their codecs may differ (each record's audio field says its own) and so may their fields.
std::string AsrDisagreement(const shards::Dataset& conv, const shards::Dataset& asr) {
  const shards::Manifest &mc = conv.manifest(), &ma = asr.manifest();
  const std::string head =
      "mixture: ASR dataset " + asr.dir() + " beside conversations " + conv.dir() + ": ";
  if (ma.sample_rate != mc.sample_rate)
    return head + "its audio is at " + std::to_string(ma.sample_rate) +
           " Hz, the conversations' at " + std::to_string(mc.sample_rate) +
           " Hz, and the loader does not resample. HINT: shardify audio --sample-rate " +
           std::to_string(mc.sample_rate);
  if (ma.codec != "pcm16" && ma.codec != "flac")
    return head + "its records hold no audio the loader decodes (codec '" + ma.codec +
           "'). HINT: shardify audio --codec pcm16 or flac, without --drop-audio";
  // A segment's audio is in its recording's chunk records, which the task conversation's one
  // audio turn (the record's own audio field) cannot reach.
  if (ma.stored_segments())
    return head +
           "its segments are stored as references into recordings, whose audio a task "
           "conversation does not read. HINT: shardify audio without --segments stored";
  if (!ma.has_field("tokens"))
    return head +
           "its transcripts hold no token ids, which the task conversation's assistant turn is "
           "made of. HINT: shardify audio --tokenizer with the conversations' tokenizer (" +
           TokenizerBrief(*mc.tokenizer) + ")";
  // The file's special tokens around each transcript would put them (a BOS) inside the task
  // conversation's answer; shardify audio adds them by default, shardify conversations never.
  if (ma.tokenizer->is_object() && ma.tokenizer->value("add_special_tokens", false) == true)
    return head +
           "its transcripts were tokenized with add_special_tokens true, which would put the "
           "file's special tokens inside each answer. HINT: shardify audio --add-special-tokens "
           "false";
  const std::string differ = TokenizerDifference(*ma.tokenizer, *mc.tokenizer);
  if (!differ.empty())
    return head + "its transcripts were tokenized with another tokenizer than the conversations (" +
           differ + "; " + TokenizerBrief(*ma.tokenizer) + " vs " + TokenizerBrief(*mc.tokenizer) +
           "): their ids would mean other text. HINT: shardify audio --tokenizer with the "
           "conversations' tokenizer file";
  return "";
}

// What two sources must share for one FeatureExtractor, collator and tokenizer to serve both:
// empty, or why not (naming both directories).
std::string Disagreement(const shards::Dataset& a, const shards::Dataset& b,
                         const LoaderOptions& options) {
  const shards::Manifest &ma = a.manifest(), &mb = b.manifest();
  const auto differ = [&](const std::string& what, const std::string& va, const std::string& vb,
                          const std::string& hint) {
    return "mixture: " + a.dir() + " and " + b.dir() + " disagree on " + what + " (" + va + " vs " +
           vb + "). HINT: " + hint;
  };
  // The loader computes features itself for both unless it would use stored ones; then the
  // stored ones are no part of what must agree.
  const bool stored = options.use_precomputed || options.kind == FeatureKind::kPrecomputed;
  const bool stored_a = stored && !ma.features->is_null();
  const bool stored_b = stored && !mb.features->is_null();
  const auto fields = [&](const shards::Manifest& m) {
    std::string s;
    for (const std::string& f : m.fields)
      if (f != "features" || stored_a || stored_b) s += (s.empty() ? "" : ",") + f;
    return s;
  };
  if (ma.kind == "conversation" && mb.kind == "audio") {
    const std::string why = AsrDisagreement(a, b);
    if (!why.empty()) return why;
  } else {
    if (ma.kind != mb.kind)
      return differ("their kind", ma.kind, mb.kind,
                    "mix audio datasets with audio ones, and conversation datasets with "
                    "conversation or audio (ASR) ones");
    if (ma.sample_rate != mb.sample_rate)
      return differ("their sample rate", std::to_string(ma.sample_rate),
                    std::to_string(mb.sample_rate), "shardify both at one --sample-rate");
    if (ma.codec != mb.codec)
      return differ("their audio codec", ma.codec, mb.codec, "shardify both with one --codec");
    if (stored_a != stored_b || (stored_a && *ma.features != *mb.features))
      return differ("their precomputed features", ma.features->dump(), mb.features->dump(),
                    "shardify both with the same --features options, or compute features in the "
                    "loader (use_precomputed false and kind fbank; sluice-bench --features fbank)");
    if (fields(ma) != fields(mb))
      return differ("the fields of their records", fields(ma), fields(mb),
                    "shardify both with the same --tokenizer, --store and --features options");
    const std::string why = TokenizerDifference(*ma.tokenizer, *mb.tokenizer);
    if (!why.empty())
      return differ("their tokenizer", why + "; " + TokenizerBrief(*ma.tokenizer),
                    TokenizerBrief(*mb.tokenizer),
                    "shardify both with the same --tokenizer (one model file)");
  }
  // A filter reads every source's metadata columns by the first's list (record_filter.h).
  if (!options.filter.empty() && ma.columns != mb.columns) {
    const auto list = [](const shards::Manifest& m) {
      std::string s;
      for (const shards::ColumnSpec& c : m.columns)
        s += (s.empty() ? "" : ",") + c.name + ":" + shards::ColumnTypeName(c.type);
      return "[" + s + "]";
    };
    return differ("their metadata columns, which the filter reads", list(ma), list(mb),
                  "shardify both with the same --keep-field options, or filter each apart");
  }
  return "";
}

}  // namespace

Status Sources::Open(const MixOptions& mix, const LoaderOptions& options,
                     std::unique_ptr<Sources>* out) {
  if (mix.sources.empty()) return Status::InvalidArgument("mixture: no source");
  std::unique_ptr<Sources> s(new Sources());
  s->mix_ = mix;
  s->mixed_ = mix.sources.size() > 1 || mix.epoch_records > 0;
  shards::ReadOptions ro;
  ro.verify_checksums = options.verify_checksums;
  for (const MixSource& src : mix.sources) {
    if (s->mixed_)
      SLUICE_RETURN_IF_ERROR(CheckMixWeight(src.weight, "mixture: " + storage::RedactUrl(src.dir)));
    std::unique_ptr<shards::Dataset> ds;
    SLUICE_RETURN_IF_ERROR(storage::OpenDataset(src.dir, options.storage, ro, &ds));
    for (size_t i = 0; i < ds->num_shards(); ++i) s->shards_.push_back(&ds->shard(i));
    s->datasets_.push_back(std::move(ds));
  }
  // A conversation mixture's batches are conversations: its first conversation source leads,
  // and audio sources are its ASR records (rendered as the template's task conversations).
  for (size_t i = 0; i < s->datasets_.size(); ++i)
    if (s->datasets_[i]->manifest().kind == "conversation") {
      s->lead_ = i;
      break;
    }
  const bool conversations = s->manifest().kind == "conversation";
  for (size_t i = 0; i < s->datasets_.size(); ++i) {
    s->asr_.push_back(conversations && s->datasets_[i]->manifest().kind == "audio");
    if (i == s->lead_) continue;
    const std::string why = Disagreement(*s->datasets_[s->lead_], *s->datasets_[i], options);
    if (!why.empty()) return Status::InvalidArgument(why);
  }
  *out = std::move(s);
  return Status::OK();
}

void BuildSourceIndex(const Sources& sources,
                      const std::function<uint64_t(const shards::RecordEntry&)>& length_of,
                      IndexColumns* out) {
  std::vector<const shards::ShardReader*> shards;
  for (size_t g = 0; g < sources.num_shards(); ++g) shards.push_back(&sources.shard(g));
  BuildIndexColumns(shards, length_of, out);
  out->source_first_record.assign(1, 0);
  size_t g = 0;
  for (size_t s = 0; s < sources.size(); ++s) {
    g += sources.source(s).num_shards();
    out->source_first_record.push_back(out->shard_first_record[g]);
  }
}

}  // namespace sluice::loader
