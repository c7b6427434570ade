#include "features/pretokenize_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace sluice::features {
namespace {

// Unicode White_Space, the `\s` of Oniguruma and of Rust's regex crates.
constexpr const char* kWhiteSpace =
    "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}";

std::string Pcre2Message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

// One per thread: match data and a JIT stack (the default 32 KiB machine stack is too small for
// a `\s+(?!\S)` over a long whitespace run).
struct ThreadState {
  pcre2_match_data* data = pcre2_match_data_create(16, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(64 << 10, 8 << 20, nullptr);
  ThreadState() { pcre2_jit_stack_assign(context, nullptr, stack); }
  ~ThreadState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

ThreadState& State() {
  thread_local ThreadState state;
  return state;
}

}  // namespace

struct PretokenizeRegex::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Impl() { pcre2_code_free(code); }
};

PretokenizeRegex::~PretokenizeRegex() = default;

std::string RewriteWhitespaceClasses(std::string_view p) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[++i];
      if (n == 's') {
        out += in_class ? kWhiteSpace : std::string("[") + kWhiteSpace + "]";
      } else if (n == 'S' && !in_class) {
        out += std::string("[^") + kWhiteSpace + "]";
      } else {
        out += c;
        out += n;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // [:alpha:]
      const size_t end = p.find(":]", i + 2);
      if (end != std::string_view::npos) {
        out += p.substr(i, end + 2 - i);
        i = end + 1;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

Status PretokenizeRegex::Compile(std::string_view pattern, RegexDialect dialect,
                                 const std::string& where, std::unique_ptr<PretokenizeRegex>* out) {
  const std::string rewritten = RewriteWhitespaceClasses(pattern);
  uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK;
  options |= dialect == RegexDialect::kOniguruma ? PCRE2_MULTILINE : PCRE2_DOLLAR_ENDONLY;
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(),
                                   options, &error, &offset, nullptr);
  if (code == nullptr) {
    return Status::InvalidArgument(where + ": the regex \"" + std::string(pattern) +
                                   "\" does not compile with PCRE2: " + Pcre2Message(error) +
                                   " (at offset " + std::to_string(offset) +
                                   " of the pattern as rewritten: \"" + rewritten + "\")");
  }
  std::unique_ptr<PretokenizeRegex> r(new PretokenizeRegex);
  r->impl_ = std::make_unique<Impl>();
  r->impl_->code = code;
  // Without JIT (a CPU PCRE2 has no JIT for) the interpreter gives the same matches, slower.
  r->impl_->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  r->pattern_ = std::string(pattern);
  r->where_ = where;
  *out = std::move(r);
  return Status::OK();
}

Status PretokenizeRegex::CompileLiteral(std::string_view literal, const std::string& where,
                                        std::unique_ptr<PretokenizeRegex>* out) {
  std::string quoted;
  for (char c : literal) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          static_cast<unsigned char>(c) >= 0x80))
      quoted += '\\';
    quoted += c;
  }
  return Compile(quoted, RegexDialect::kFancyRegex, where, out);
}

int PretokenizeRegex::Find(std::string_view text, size_t start, size_t* b, size_t* e) const {
  ThreadState& st = State();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const int rc =
      impl_->jit ? pcre2_jit_match(impl_->code, subject, text.size(), start, 0, st.data, st.context)
                 : pcre2_match(impl_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK,
                               st.data, st.context);
  if (rc == PCRE2_ERROR_NOMATCH) return 0;
  if (rc < 0) return rc;
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
  *b = ov[0];
  *e = ov[1];
  return 1;
}

Status PretokenizeRegex::MatchError(std::string_view text, size_t pos, int code) const {
  return Status::InvalidArgument(where_ + ": matching the pre-tokenizer regex failed at byte " +
                                 std::to_string(pos) + " of a " + std::to_string(text.size()) +
                                 "-byte text: " + Pcre2Message(code) +
                                 " (hint: split the text into smaller records)");
}

size_t PretokenizeRegex::NextCharBoundary(std::string_view text, size_t i) {
  ++i;
  while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
  return i;
}

}  // namespace sluice::features
