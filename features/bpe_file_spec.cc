#include "features/bpe_file_spec.h"

#include "base/file.h"
#include "features/tiktoken_file.h"

namespace sluice::features {

bool IsBpeFileSpec(const std::string& spec) {
  return spec.rfind("hf:", 0) == 0 || spec.rfind("tiktoken:", 0) == 0;
}

Status ParseBpeFileSpec(const std::string& spec, BpeFileSpec* out) {
  BpeFileSpec s;
  s.type = spec.substr(0, spec.find(':'));
  s.path = spec.substr(s.type.size() + 1);
  if (s.type == "tiktoken") {
    for (const char* e : kTiktokenEncodingNames) {
      const std::string suffix = std::string(":") + e;
      if (s.path.size() > suffix.size() && s.path.ends_with(suffix)) {
        s.path.resize(s.path.size() - suffix.size());
        s.encoding = e;
      }
    }
    const std::string base = s.path.substr(s.path.rfind('/') + 1);
    for (const char* e : kTiktokenEncodingNames) {
      if (s.encoding.empty() && base.rfind(e, 0) == 0) s.encoding = e;
    }
    if (s.encoding.empty()) {
      return Status::InvalidArgument(
          "--tokenizer '" + spec +
          "': name the encoding whose regex and special tokens go with the rank file, e.g. "
          "tiktoken:" +
          s.path + ":cl100k_base (known: " + kTiktokenEncodings + ")");
    }
  } else if (s.type != "hf") {
    return Status::InvalidArgument(
        "--tokenizer '" + spec + "': expected hf:PATH/tokenizer.json or tiktoken:PATH[:ENCODING]");
  }
  if (s.path.empty())
    return Status::InvalidArgument("--tokenizer '" + spec + "': the file's path is missing");
  *out = std::move(s);
  return Status::OK();
}

Status LoadBpeFile(const BpeFileSpec& spec, std::string* bytes, std::unique_ptr<Tokenizer>* out) {
  Status s = ReadFileToString(spec.path, bytes);
  if (!s.ok()) return Prefixed(s, "--tokenizer " + spec.type + ":" + spec.path);
  if (spec.type == "hf") return MakeHfTokenizer(*bytes, spec.path, spec.hf, out);
  return MakeTiktokenTokenizer(*bytes, spec.path, spec.encoding, out);
}

}  // namespace sluice::features
