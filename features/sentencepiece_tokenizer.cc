// SentencePiece (BPE or unigram) behind the Tokenizer interface.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <exception>
#include <mutex>

#include "features/tokenizer.h"

namespace sluice::features {
namespace {

// Feeds normalised texts to the trainer without a temporary file.
class TextIterator final : public sentencepiece::SentenceIterator {
 public:
  TextIterator(const std::vector<std::string>& texts, const TextNormalizeOptions& n)
      : texts_(texts), norm_(n) {
    Load();
  }
  bool done() const override { return i_ >= texts_.size(); }
  void Next() override {
    ++i_;
    Load();
  }
  const std::string& value() const override { return value_; }
  sentencepiece::util::Status status() const override { return sentencepiece::util::Status(); }

 private:
  void Load() {
    if (i_ < texts_.size()) value_ = NormalizeText(texts_[i_], norm_);
  }
  const std::vector<std::string>& texts_;
  TextNormalizeOptions norm_;
  size_t i_ = 0;
  std::string value_;
};

class SentencePieceTokenizer final : public Tokenizer {
 public:
  Status Init(const std::string& model_bytes, const std::string& name,
              const TextNormalizeOptions& normalize, bool allow_unknown) {
    normalize_ = normalize;
    allow_unknown_ = allow_unknown;
    name_ = name;
    sentencepiece::util::Status st;
    try {
      st = sp_.LoadFromSerializedProto(model_bytes);
    } catch (const std::exception& e) {
      // libsentencepiece checks some damage only by throwing: a zero-length piece makes its
      // trie builder (darts_clone) throw, which terminated the process (sentencepiece_fuzzer).
      return Status::Corruption(name + ": not a SentencePiece model: " + e.what());
    }
    if (!st.ok()) return Status::Corruption(name + ": not a SentencePiece model: " + st.ToString());
    // Our ids: 0 blank, 1 end-of-document (SentencePiece's </s> when it has one),
    // then every other piece in SentencePiece's order.
    const int n = sp_.GetPieceSize();
    to_ours_.assign(n, 0);
    to_spm_.assign(kFirstTokenId, -1);
    for (int p = 0; p < n; ++p) {
      if (p == sp_.eos_id()) {
        to_ours_[p] = kEndOfDocumentId;
        to_spm_[kEndOfDocumentId] = p;
      } else {
        to_ours_[p] = static_cast<int32_t>(to_spm_.size());
        to_spm_.push_back(p);
      }
    }
    return Status::OK();
  }

  Status Encode(std::string_view text, std::vector<int32_t>* out) const override {
    const std::string norm = NormalizeText(text, normalize_);
    std::vector<int> pieces;
    auto st = sp_.Encode(norm, &pieces);
    if (!st.ok()) return Status::InvalidArgument(name_ + ": encode: " + st.ToString());
    for (int p : pieces) {
      if (p == sp_.unk_id() && !allow_unknown_) {
        return Status::InvalidArgument("text maps to <unk> under " + name_ +
                                       " (a character the model lacks) in: \"" +
                                       norm.substr(0, 80) + "\"");
      }
      out->push_back(to_ours_[p]);
    }
    return Status::OK();
  }

  Status Decode(const int32_t* ids, size_t n, std::string* text) const override {
    std::vector<int> pieces;
    for (size_t i = 0; i < n; ++i) {
      if (ids[i] < 0 || ids[i] >= vocab_size()) {
        return Status::InvalidArgument("token id " + std::to_string(ids[i]) + " at position " +
                                       std::to_string(i) + " is outside the vocabulary of " +
                                       std::to_string(vocab_size()));
      }
      if (ids[i] >= kFirstTokenId) pieces.push_back(to_spm_[ids[i]]);
    }
    auto st = sp_.Decode(pieces, text);
    if (!st.ok()) return Status::InvalidArgument(name_ + ": decode: " + st.ToString());
    return Status::OK();
  }

  int32_t vocab_size() const override { return static_cast<int32_t>(to_spm_.size()); }
  std::string_view type() const override { return "sentencepiece"; }

 private:
  sentencepiece::SentencePieceProcessor sp_;
  std::vector<int32_t> to_ours_;
  std::vector<int> to_spm_;
  bool allow_unknown_ = false;
  std::string name_;
};

}  // namespace

Status TrainSentencePiece(const std::vector<std::string>& texts,
                          const TextNormalizeOptions& normalize, const SentencePieceTrainOptions& o,
                          std::string* model_bytes) {
  if (o.model_type != "bpe" && o.model_type != "unigram") {
    return Status::InvalidArgument("SentencePiece model type '" + o.model_type +
                                   "': expected bpe or unigram");
  }
  if (o.vocab_size < 4)
    return Status::InvalidArgument("SentencePiece vocabulary size must be at least 4");
  if (texts.empty()) return Status::InvalidArgument("no texts to train a SentencePiece model on");
  // The trainer's random generator is process-global: serialise training and
  // seed it every time so that the same texts give the same model.
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  sentencepiece::SetRandomGeneratorSeed(static_cast<unsigned>(o.seed));
  TextIterator it(texts, normalize);
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", o.model_type},
      {"vocab_size", std::to_string(o.vocab_size)},
      {"character_coverage", "1.0"},     // every character of the transcripts gets a piece
      {"hard_vocab_limit", "false"},     // a small corpus may not support vocab_size pieces
      {"num_threads", "1"},              // one thread: the same model every time
      {"input_sentence_size", "0"},      // use every text, no sampling
      {"shuffle_input_sentence", "false"},
      {"eos_id", "0"},                   // </s> becomes our end-of-document id 1
      {"unk_id", "1"},
      {"bos_id", "-1"},
      {"pad_id", "-1"},
      {"minloglevel", "2"},              // quiet: errors only
  };
  auto st = sentencepiece::SentencePieceTrainer::Train(args, &it, model_bytes);
  if (!st.ok()) return Status::InvalidArgument("SentencePiece training failed: " + st.ToString());
  return Status::OK();
}

Status MakeSentencePieceTokenizer(const std::string& model_bytes, const std::string& name,
                                  const TextNormalizeOptions& normalize, bool allow_unknown,
                                  std::unique_ptr<Tokenizer>* out) {
  auto t = std::make_unique<SentencePieceTokenizer>();
  SLUICE_RETURN_IF_ERROR(t->Init(model_bytes, name, normalize, allow_unknown));
  *out = std::move(t);
  return Status::OK();
}

}  // namespace sluice::features
