// The ids sluice gives, for tests/features/bpe_equality.py to compare with HF tokenizers and
// tiktoken. Usage: bpe_ids hf PATH | bpe_ids tiktoken PATH ENCODING
// stdin: one text per line, base64 (texts hold newlines and, on purpose, invalid UTF-8).
// stdout: one JSON object per line: {"ids": [...], "decoded": base64 of Decode(ids)} or
// {"error": "..."}.
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/file.h"
#include "features/tokenizer.h"

namespace {

std::string FromBase64(const std::string& in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else continue;  // '=' padding
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

std::string ToBase64(const std::string& raw) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : raw) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += k[(acc >> bits) & 63];
    }
  }
  if (bits > 0) out += k[(acc << (6 - bits)) & 63];
  while (out.size() % 4) out += '=';
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sluice;
  if (argc < 3) {
    std::cerr << "usage: bpe_ids hf PATH [special|plain] | bpe_ids tiktoken PATH ENCODING\n";
    return 2;
  }
  const std::string kind = argv[1], path = argv[2];
  std::string bytes;
  Status s = ReadFileToString(path, &bytes);
  std::unique_ptr<features::Tokenizer> tok;
  if (s.ok()) {
    // hf: "special" is HF's encode(add_special_tokens=True), "plain" False; default HF's.
    features::HfTokenizerOptions o;
    o.add_special_tokens = !(argc > 3 && std::string(argv[3]) == "plain");
    s = kind == "hf" ? features::MakeHfTokenizer(bytes, path, o, &tok)
                     : features::MakeTiktokenTokenizer(bytes, path, argc > 3 ? argv[3] : "", &tok);
  }
  if (!s.ok()) {
    std::cerr << s.ToString() << "\n";
    return 1;
  }
  std::string line;
  std::vector<int32_t> ids;
  std::string back;
  while (std::getline(std::cin, line)) {
    const std::string text = FromBase64(line);
    ids.clear();
    nlohmann::json out;
    Status e = tok->Encode(text, &ids);
    if (!e.ok()) {
      out["error"] = e.ToString();
    } else {
      back.clear();
      Status d = tok->Decode(ids.data(), ids.size(), &back);
      out["ids"] = ids;
      if (d.ok()) out["decoded"] = ToBase64(back);
      else out["error"] = d.ToString();
    }
    std::cout << out.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) << "\n";
  }
  return 0;
}
