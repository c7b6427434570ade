#include "features/tiktoken_file.h"

#include <charconv>
#include <unordered_set>

namespace sluice::features {
namespace {

struct Encoding {
  const char* name;
  const char* pattern;
  std::vector<std::pair<const char*, int32_t>> special;
};

// tiktoken 0.14's tiktoken_ext/openai_public.py.
const std::vector<Encoding>& Encodings() {
  static const char* r50k =
      R"('(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s)";
  static const std::vector<Encoding> all = {
      {"r50k_base", r50k, {{"<|endoftext|>", 50256}}},
      {"p50k_base", r50k, {{"<|endoftext|>", 50256}}},
      {"cl100k_base",
       R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s)",
       {{"<|endoftext|>", 100257},
        {"<|fim_prefix|>", 100258},
        {"<|fim_middle|>", 100259},
        {"<|fim_suffix|>", 100260},
        {"<|endofprompt|>", 100276}}},
      {"o200k_base",
       R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
       R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
       R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
       {{"<|endoftext|>", 199999}, {"<|endofprompt|>", 200018}}},
  };
  return all;
}

// Standard base64 with padding, as Python's base64.b64decode reads it; false for anything else.
bool DecodeBase64(std::string_view in, std::string* out) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (in.empty() || in.size() % 4 != 0) return false;
  out->clear();
  for (size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      if (in[i + k] == '=' && i + 4 == in.size() && k >= 2) {
        v[k] = 0;
        ++pad;
      } else if (pad > 0 || (v[k] = value(in[i + k])) < 0) {
        return false;
      }
    }
    const uint32_t n = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out->push_back(static_cast<char>(n >> 16));
    if (pad < 2) out->push_back(static_cast<char>((n >> 8) & 0xFF));
    if (pad < 1) out->push_back(static_cast<char>(n & 0xFF));
  }
  return true;
}

}  // namespace

Status ParseTiktokenFile(const std::string& bytes, const std::string& name,
                         const std::string& encoding, BpeTokenizerSpec* spec) {
  const Encoding* enc = nullptr;
  for (const Encoding& e : Encodings())
    if (encoding == e.name) enc = &e;
  if (enc == nullptr) {
    return Status::InvalidArgument(name + ": unknown tiktoken encoding \"" + encoding +
                                   "\" (known: " + kTiktokenEncodings + ")");
  }
  BpeTokenizerSpec s;
  s.type = "tiktoken";
  s.name = name;
  s.dialect = RegexDialect::kFancyRegex;
  s.steps.push_back({PreTokenizeStep::Kind::kSplit, enc->pattern, false, SplitBehavior::kIsolated,
                     false, std::string("the ") + enc->name + " pattern"});
  s.model.name = name;
  s.model.byte_symbols = true;
  s.model.merges_from_ranks = true;
  s.model.ignore_merges = true;  // tiktoken looks a whole pre-token up before merging
  size_t line_no = 0;
  std::string token;
  std::unordered_set<int32_t> ranks;
  for (size_t pos = 0; pos < bytes.size();) {
    size_t end = bytes.find('\n', pos);
    if (end == std::string::npos) end = bytes.size();
    std::string_view line(bytes.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const std::string where = name + ": line " + std::to_string(line_no);
    const size_t space = line.find(' ');
    int32_t rank = -1;
    const char* rank_end = line.data() + line.size();
    if (space == std::string_view::npos ||
        std::from_chars(line.data() + space + 1, rank_end, rank).ptr != rank_end || rank < 0) {
      return Status::Corruption(where + ": expected \"base64-token rank\", got \"" +
                                std::string(line.substr(0, 80)) +
                                "\" (hint: is this a .tiktoken rank file?)");
    }
    if (!DecodeBase64(line.substr(0, space), &token))
      return Status::Corruption(where + ": the token is not valid base64");
    if (!ranks.insert(rank).second)
      return Status::Corruption(where + ": rank " + std::to_string(rank) + " is given twice");
    s.model.vocab.emplace_back(token, rank);
  }
  if (s.model.vocab.empty()) return Status::Corruption(name + ": no ranks (an empty file?)");
  int32_t max_id = 0;
  for (const auto& [t, id] : s.model.vocab) max_id = std::max(max_id, id);
  for (const auto& [content, id] : enc->special) {
    if (ranks.count(id)) {
      return Status::InvalidArgument(
          name + ": " + encoding + "'s special token " + content + " has id " + std::to_string(id) +
          ", which the rank file gives to a token (hint: is this the " + encoding + " rank file?)");
    }
    s.added.push_back({content, id});
    max_id = std::max(max_id, id);
  }
  s.decode.assign(max_id + 1, std::string());
  s.has_id.assign(max_id + 1, false);
  for (const auto& [t, id] : s.model.vocab) {
    s.decode[id] = t;
    s.has_id[id] = true;
  }
  for (const AddedToken& a : s.added) {
    s.decode[a.id] = a.content;
    s.has_id[a.id] = true;
  }
  s.end_of_document_id = enc->special.front().second;  // <|endoftext|>
  *spec = std::move(s);
  return Status::OK();
}

Status MakeTiktokenTokenizer(const std::string& file_bytes, const std::string& name,
                             const std::string& encoding, std::unique_ptr<Tokenizer>* out) {
  BpeTokenizerSpec spec;
  SLUICE_RETURN_IF_ERROR(ParseTiktokenFile(file_bytes, name, encoding, &spec));
  return MakeBpeTokenizer(std::move(spec), out);
}

}  // namespace sluice::features
