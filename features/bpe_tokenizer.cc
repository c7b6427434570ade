#include "features/bpe_tokenizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>

#include "features/utf8.h"

namespace sluice::features {
namespace {

bool IsAscii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

class BpeTokenizer final : public Tokenizer {
 public:
  Status Init(BpeTokenizerSpec spec) {
    // The text normalisation of char/SentencePiece (lowercasing, punctuation) does not apply:
    // the file says how its text is normalised.
    normalize_.lowercase = normalize_.strip_punctuation = normalize_.collapse_whitespace = false;
    spec_ = std::move(spec);
    for (const PreTokenizeStep& st : spec_.steps) {
      std::unique_ptr<PretokenizeRegex> re;
      if (st.kind == PreTokenizeStep::Kind::kSplit) {
        SLUICE_RETURN_IF_ERROR(st.literal
                                   ? PretokenizeRegex::CompileLiteral(st.pattern, st.where, &re)
                                   : PretokenizeRegex::Compile(st.pattern, spec_.dialect,
                                                               spec_.name + ": " + st.where, &re));
      }
      regexes_.push_back(std::move(re));
    }
    for (size_t i = 0; i < spec_.added.size(); ++i) {
      const AddedToken& t = spec_.added[i];
      if (t.content.empty())
        return Status::InvalidArgument(spec_.name + ": an added token with empty content");
      added_by_first_byte_[static_cast<uint8_t>(t.content[0])].push_back(i);
    }
    for (auto& list : added_by_first_byte_) {  // longest first: leftmost-longest matching
      std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) {
        return spec_.added[a].content.size() > spec_.added[b].content.size();
      });
    }
    if (spec_.end_of_document_id < 0 ||
        spec_.end_of_document_id >= static_cast<int32_t>(spec_.decode.size()))
      return Status::InvalidArgument(spec_.name + ": no end-of-document token");
    for (const auto* list : {&spec_.prefix_ids, &spec_.suffix_ids}) {
      for (const int32_t id : *list) {
        if (id < 0 || id >= static_cast<int32_t>(spec_.decode.size()) || !spec_.has_id[id])
          return Status::InvalidArgument(spec_.name + ": the post-processor's id " +
                                         std::to_string(id) + " is not a token of the file");
      }
    }
    return BpeModel::Create(std::move(spec_.model), &model_);
  }

  Status Encode(std::string_view text, std::vector<int32_t>* ids) const override {
    if (!spec_.add_special_tokens) return EncodeText(text, ids);
    ids->insert(ids->end(), spec_.prefix_ids.begin(), spec_.prefix_ids.end());
    SLUICE_RETURN_IF_ERROR(EncodeText(text, ids));
    ids->insert(ids->end(), spec_.suffix_ids.begin(), spec_.suffix_ids.end());
    return Status::OK();
  }

  Status Decode(const int32_t* ids, size_t n, std::string* text) const override {
    for (size_t i = 0; i < n; ++i) {
      const int32_t id = ids[i];
      if (id < 0 || id >= vocab_size() || !spec_.has_id[id]) {
        return Status::InvalidArgument("id " + std::to_string(id) + " at position " +
                                       std::to_string(i) + " is not a token of " + spec_.name);
      }
      *text += spec_.decode[id];
    }
    return Status::OK();
  }

  int32_t vocab_size() const override { return static_cast<int32_t>(spec_.decode.size()); }
  std::string_view type() const override { return spec_.type; }
  int32_t end_of_document_id() const override { return spec_.end_of_document_id; }
  int32_t blank_id() const override { return -1; }
  bool encode_ends_document() const override {
    return spec_.add_special_tokens && !spec_.suffix_ids.empty() &&
           spec_.suffix_ids.back() == spec_.end_of_document_id;
  }

 private:
  // The text alone: HF's add_special_tokens=False.
  Status EncodeText(std::string_view text, std::vector<int32_t>* ids) const {
    size_t bad = 0;
    if (!ValidUtf8(text, &bad)) {
      return Status::InvalidArgument(
          "invalid UTF-8 at byte " + std::to_string(bad) + " of the text (" + spec_.name +
          " encodes text, not bytes; hint: decode the source with errors=\"replace\")");
    }
    size_t start = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      const auto& candidates = added_by_first_byte_[static_cast<uint8_t>(text[i])];
      for (size_t a : candidates) {
        const std::string& c = spec_.added[a].content;
        if (text.compare(i, c.size(), c) != 0) continue;
        SLUICE_RETURN_IF_ERROR(EncodeSegment(text.substr(start, i - start), ids));
        ids->push_back(spec_.added[a].id);
        start = i + c.size();
        i = start - 1;
        break;
      }
    }
    return EncodeSegment(text.substr(start), ids);
  }

  struct Segment {
    size_t b, e;
    bool match;
  };

  Status EncodeSegment(std::string_view text, std::vector<int32_t>* ids) const {
    if (text.empty()) return Status::OK();
    using N = BpeTokenizerSpec::Normalization;
    if (spec_.normalization == N::kNone || IsAscii(text)) return Apply(0, text, ids);
    int options = UTF8PROC_STABLE | UTF8PROC_COMPOSE;
    if (spec_.normalization == N::kNfkc) options |= UTF8PROC_COMPAT;
    uint8_t* composed = nullptr;
    const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const uint8_t*>(text.data()),
                                            static_cast<utf8proc_ssize_t>(text.size()), &composed,
                                            static_cast<utf8proc_option_t>(options));
    if (n < 0) {
      return Status::InvalidArgument(spec_.name + ": normalisation failed: " + utf8proc_errmsg(n));
    }
    Status s = Apply(0, std::string_view(reinterpret_cast<const char*>(composed), n), ids);
    std::free(composed);
    return s;
  }

  // Runs pre-tokenizer step k on `piece` and the steps after it on each of its pieces; past the
  // last step, the BPE model.
  Status Apply(size_t k, std::string_view piece, std::vector<int32_t>* ids) const {
    if (piece.empty()) return Status::OK();
    if (k == spec_.steps.size()) return model_->Encode(piece, ids);
    const PreTokenizeStep& st = spec_.steps[k];
    if (st.kind == PreTokenizeStep::Kind::kPrefixSpace) {
      if (piece[0] == ' ') return Apply(k + 1, piece, ids);
      std::string spaced;
      spaced.reserve(piece.size() + 1);
      spaced += ' ';
      spaced += piece;
      return Apply(k + 1, spaced, ids);
    }
    const PretokenizeRegex& re = *regexes_[k];
    Status s;
    if (st.behavior == SplitBehavior::kIsolated) {  // every piece in order: no list needed
      size_t prev = 0;
      SLUICE_RETURN_IF_ERROR(re.ForEachMatch(piece, [&](size_t b, size_t e) {
        if (!s.ok()) return;
        if (b > prev) s = Apply(k + 1, piece.substr(prev, b - prev), ids);
        if (s.ok()) s = Apply(k + 1, piece.substr(b, e - b), ids);
        prev = e;
      }));
      SLUICE_RETURN_IF_ERROR(s);
      return Apply(k + 1, piece.substr(prev), ids);
    }
    std::vector<Segment> segs;
    size_t prev = 0;
    SLUICE_RETURN_IF_ERROR(re.ForEachMatch(piece, [&](size_t b, size_t e) {
      if (b > prev) segs.push_back({prev, b, false});
      segs.push_back({b, e, true});
      prev = e;
    }));
    if (prev < piece.size()) segs.push_back({prev, piece.size(), false});
    if (st.invert)
      for (Segment& g : segs) g.match = !g.match;
    std::vector<Segment> out;
    bool previous_match = false;
    switch (st.behavior) {
      case SplitBehavior::kIsolated: out = segs; break;
      case SplitBehavior::kRemoved:
        for (const Segment& g : segs)
          if (!g.match) out.push_back(g);
        break;
      case SplitBehavior::kMergedWithPrevious:
        for (const Segment& g : segs) {
          if (g.match && !previous_match && !out.empty()) out.back().e = g.e;
          else out.push_back(g);
          previous_match = g.match;
        }
        break;
      case SplitBehavior::kMergedWithNext:
        for (auto it = segs.rbegin(); it != segs.rend(); ++it) {
          if (it->match && !previous_match && !out.empty()) out.back().b = it->b;
          else out.push_back(*it);
          previous_match = it->match;
        }
        std::reverse(out.begin(), out.end());
        break;
      case SplitBehavior::kContiguous:
        for (const Segment& g : segs) {
          if (g.match == previous_match && !out.empty()) out.back().e = g.e;
          else out.push_back(g);
          previous_match = g.match;
        }
        break;
    }
    for (const Segment& g : out)
      SLUICE_RETURN_IF_ERROR(Apply(k + 1, piece.substr(g.b, g.e - g.b), ids));
    return Status::OK();
  }

  BpeTokenizerSpec spec_;
  std::vector<std::unique_ptr<PretokenizeRegex>> regexes_;  // per step; null for kPrefixSpace
  std::unique_ptr<BpeModel> model_;
  std::vector<size_t> added_by_first_byte_[256];
};

}  // namespace

Status MakeBpeTokenizer(BpeTokenizerSpec spec, std::unique_ptr<Tokenizer>* out) {
  auto t = std::make_unique<BpeTokenizer>();
  SLUICE_RETURN_IF_ERROR(t->Init(std::move(spec)));
  *out = std::move(t);
  return Status::OK();
}

}  // namespace sluice::features
