#include "loader/filter_expr.h"

#include <cctype>
#include <cstdlib>

namespace sluice::loader {

// An operand is a column or a literal; a node is a comparison or a boolean of nodes.
struct FilterExpr::Node {
  enum class Kind { kAnd, kOr, kNot, kCompare } kind = Kind::kCompare;
  bool grouped = false;  // written in parentheses: one reason, never split into its operands
  std::vector<std::unique_ptr<Node>> children;
  struct Operand {
    int column = -1;  // >= 0: a column; else the literal below
    FilterColumn::Type type = FilterColumn::Type::kNumber;
    double number = 0;
    std::string text;
  };
  Operand lhs, rhs;
  std::string op;
};

namespace {

using Node = FilterExpr::Node;
using Type = FilterColumn::Type;

class Parser {
 public:
  Parser(std::string_view text, const std::vector<FilterColumn>& columns, std::vector<bool>* used)
      : s_(text), columns_(columns), used_(used) {}

  Status Error(size_t at, const std::string& why) const {
    return Status::InvalidArgument("filter '" + std::string(s_) + "': at byte " +
                                   std::to_string(at) + ": " + why);
  }

  void Skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }

  // The identifier at pos_ ("" if none), without consuming it.
  std::string_view PeekWord() const {
    size_t e = pos_;
    if (e < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[e])) || s_[e] == '_')) {
      while (e < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[e])) || s_[e] == '_'))
        ++e;
    }
    return s_.substr(pos_, e - pos_);
  }

  bool Keyword(std::string_view word) {
    Skip();
    if (PeekWord() != word) return false;
    pos_ += word.size();
    return true;
  }

  Status Or(std::unique_ptr<Node>* out) {
    SLUICE_RETURN_IF_ERROR(And(out));
    while (Keyword("or")) {
      auto n = std::make_unique<Node>();
      n->kind = Node::Kind::kOr;
      n->children.push_back(std::move(*out));
      std::unique_ptr<Node> rhs;
      SLUICE_RETURN_IF_ERROR(And(&rhs));
      n->children.push_back(std::move(rhs));
      *out = std::move(n);
    }
    return Status::OK();
  }

  Status And(std::unique_ptr<Node>* out) {
    SLUICE_RETURN_IF_ERROR(Not(out));
    while (Keyword("and")) {
      auto n = std::make_unique<Node>();
      n->kind = Node::Kind::kAnd;
      n->children.push_back(std::move(*out));
      std::unique_ptr<Node> rhs;
      SLUICE_RETURN_IF_ERROR(Not(&rhs));
      n->children.push_back(std::move(rhs));
      *out = std::move(n);
    }
    return Status::OK();
  }

  Status Not(std::unique_ptr<Node>* out) {
    if (Keyword("not")) {
      auto n = std::make_unique<Node>();
      n->kind = Node::Kind::kNot;
      std::unique_ptr<Node> inner;
      SLUICE_RETURN_IF_ERROR(Not(&inner));
      n->children.push_back(std::move(inner));
      *out = std::move(n);
      return Status::OK();
    }
    return Atom(out);
  }

  Status Atom(std::unique_ptr<Node>* out) {
    Skip();
    if (pos_ < s_.size() && s_[pos_] == '(') {
      const size_t open = pos_++;
      SLUICE_RETURN_IF_ERROR(Or(out));
      (*out)->grouped = true;
      Skip();
      if (pos_ >= s_.size() || s_[pos_] != ')')
        return Error(pos_, "expected ')' closing the '(' at byte " + std::to_string(open));
      ++pos_;
      return Status::OK();
    }
    auto n = std::make_unique<Node>();
    const size_t at = pos_;
    SLUICE_RETURN_IF_ERROR(Operand(&n->lhs, false));
    Skip();
    const size_t op_at = pos_;
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (s_.substr(pos_).starts_with(op)) {
        n->op = op;
        pos_ += n->op.size();
        break;
      }
    }
    if (n->op.empty())
      return Error(op_at, pos_ < s_.size()
                              ? "expected a comparison (== != < <= > >=)"
                              : "expected a comparison (== != < <= > >=), got the end");
    const size_t rhs_at = (Skip(), pos_);
    SLUICE_RETURN_IF_ERROR(Operand(&n->rhs, true));
    if (n->lhs.type != n->rhs.type)
      return Error(at, "cannot compare " + Describe(n->lhs) + " with " + Describe(n->rhs) +
                           " (at byte " + std::to_string(rhs_at) + ")");
    *out = std::move(n);
    return Status::OK();
  }

  std::string Describe(const Node::Operand& o) const {
    const char* kind = o.type == Type::kNumber ? "number" : "string";
    if (o.column >= 0) return std::string(kind) + " column '" + columns_[o.column].name + "'";
    return std::string("a ") + kind;
  }

  // `compared_with`: the operand after the operator, where a bare word is often a string.
  Status Operand(Node::Operand* o, bool compared_with) {
    Skip();
    if (pos_ >= s_.size())
      return Error(pos_, "expected a column, a number or a string, got the end");
    const char c = s_[pos_];
    if (c == '"' || c == '\'') {
      const size_t open = pos_++;
      o->type = Type::kString;
      while (true) {
        if (pos_ >= s_.size())
          return Error(open, "string not closed (no matching " + std::string(1, c) + ")");
        char d = s_[pos_++];
        if (d == c) break;
        if (d == '\\') {
          if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\'' && s_[pos_] != '\\'))
            return Error(pos_ - 1, "unknown escape in a string (only \\\" \\' \\\\)");
          d = s_[pos_++];
        }
        o->text.push_back(d);
      }
      return Status::OK();
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.') {
      const std::string rest(s_.substr(pos_));
      char* end = nullptr;
      o->number = std::strtod(rest.c_str(), &end);
      const size_t n = static_cast<size_t>(end - rest.c_str());
      // strtod also reads "inf", "nan" and hex: a literal here is a plain decimal number.
      bool plain = n > 0;
      for (size_t i = 0; i < n; ++i) {
        const char d = rest[i];
        plain = plain && (std::isdigit(static_cast<unsigned char>(d)) || d == '.' || d == '-' ||
                          d == '+' || d == 'e' || d == 'E');
      }
      if (!plain) return Error(pos_, "not a number");
      pos_ += n;
      o->type = Type::kNumber;
      return Status::OK();
    }
    const std::string_view word = PeekWord();
    if (word.empty())
      return Error(pos_,
                   std::string("unexpected '") + c + "': expected a column, a number or a string");
    if (word == "and" || word == "or" || word == "not")
      return Error(pos_, "'" + std::string(word) + "' where a column, number or string belongs");
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (columns_[i].name == word) {
        o->column = static_cast<int>(i);
        o->type = columns_[i].type;
        (*used_)[i] = true;
        pos_ += word.size();
        return Status::OK();
      }
    }
    std::string names;
    for (const FilterColumn& col : columns_) names += (names.empty() ? "" : ", ") + col.name;
    return Error(pos_, "unknown column '" + std::string(word) + "' (the columns: " + names + ")" +
                           (compared_with ? ". HINT: strings are quoted: " + std::string(word) +
                                                " in quotes, \"" + std::string(word) + "\""
                                          : std::string()));
  }

  std::string_view s_;
  size_t pos_ = 0;
  const std::vector<FilterColumn>& columns_;
  std::vector<bool>* used_;
};

bool Compare(const std::string& op, int c) {
  if (op == "==") return c == 0;
  if (op == "!=") return c != 0;
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

bool Eval(const Node& n, const FilterRow& row) {
  switch (n.kind) {
    case Node::Kind::kAnd: return Eval(*n.children[0], row) && Eval(*n.children[1], row);
    case Node::Kind::kOr: return Eval(*n.children[0], row) || Eval(*n.children[1], row);
    case Node::Kind::kNot: return !Eval(*n.children[0], row);
    case Node::Kind::kCompare: break;
  }
  if (n.lhs.type == Type::kNumber) {
    const double a = n.lhs.column >= 0 ? row.numbers[n.lhs.column] : n.lhs.number;
    const double b = n.rhs.column >= 0 ? row.numbers[n.rhs.column] : n.rhs.number;
    // NaN (a derived value of an empty record) compares false with everything, != true.
    if (a != a || b != b) return n.op == "!=";
    return Compare(n.op, a < b ? -1 : a > b ? 1 : 0);
  }
  auto null = [&](int column) { return column >= 0 && !row.null.empty() && row.null[column] != 0; };
  if (null(n.lhs.column) || null(n.rhs.column)) return n.op == "!=";
  const std::string_view a =
      n.lhs.column >= 0 ? row.strings[n.lhs.column] : std::string_view(n.lhs.text);
  const std::string_view b =
      n.rhs.column >= 0 ? row.strings[n.rhs.column] : std::string_view(n.rhs.text);
  return Compare(n.op, a.compare(b));
}

// The top-level "and" operands of `n`, left to right.
void Conjuncts(std::unique_ptr<Node> n, std::vector<std::unique_ptr<Node>>* out) {
  if (n->kind == Node::Kind::kAnd && !n->grouped) {
    Conjuncts(std::move(n->children[0]), out);
    Conjuncts(std::move(n->children[1]), out);
  } else {
    out->push_back(std::move(n));
  }
}

std::string Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

FilterExpr::~FilterExpr() = default;

Status FilterExpr::Parse(std::string_view text, std::vector<FilterColumn> columns,
                         std::unique_ptr<FilterExpr>* out) {
  std::unique_ptr<FilterExpr> f(new FilterExpr());
  f->used_.assign(columns.size(), false);
  Parser p(text, columns, &f->used_);
  // The reasons are the text spans of the top-level operands: parse each "and" operand on its own
  // to know where it starts and ends.
  std::unique_ptr<Node> root;
  SLUICE_RETURN_IF_ERROR(p.Or(&root));
  p.Skip();
  if (p.pos_ < text.size())
    return p.Error(p.pos_, "unexpected '" + std::string(text.substr(p.pos_)) +
                               "' after a complete expression (join conditions with and/or)");
  Conjuncts(std::move(root), &f->conjuncts_);
  // Re-parse to get each conjunct's span: the same grammar, one "not" level at a time.
  Parser spans(text, columns, &f->used_);
  size_t start = 0;
  for (size_t i = 0; i < f->conjuncts_.size(); ++i) {
    if (f->conjuncts_.size() == 1) {
      f->reasons_.push_back(Trim(text));
      break;
    }
    spans.pos_ = start;
    std::unique_ptr<Node> unused;
    SLUICE_RETURN_IF_ERROR(spans.Not(&unused));
    f->reasons_.push_back(Trim(text.substr(start, spans.pos_ - start)));
    spans.Keyword("and");
    start = spans.pos_;
  }
  *out = std::move(f);
  return Status::OK();
}

int FilterExpr::Reject(const FilterRow& row) const {
  for (size_t i = 0; i < conjuncts_.size(); ++i)
    if (!Eval(*conjuncts_[i], row)) return static_cast<int>(i);
  return -1;
}

}  // namespace sluice::loader
