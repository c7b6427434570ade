// The loader's record filter (LoaderOptions::filter, docs/loader.md "Filters"): a small
// expression over a record's index columns, applied while the epoch is planned from the index,
// before order and rank split, so the kept records are the same in every epoch, on every rank and
// after a resume.
//
//   expr := or;  or := and ("or" and)*;  and := not ("and" not)*;  not := "not" not | atom
//   atom := "(" expr ")" | operand OP operand;  OP := == != < <= > >=
//   operand := column | number (-1.5, 20, 1e3) | string ("en" or 'en', \ escapes " ' \)
//
// Numbers compare with numbers and strings with strings (byte order); anything else, an unknown
// column or a syntax error is refused at parse time, naming the byte position in the expression.
// A column without a value (a NaN number, a null string) makes every comparison false but !=.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace sluice::loader {

struct FilterColumn {
  enum class Type { kNumber, kString };
  std::string name;
  Type type = Type::kNumber;
};

// One record's values, indexed like the columns the filter was parsed with (only the entry of
// each column's own type is read).
struct FilterRow {
  std::vector<double> numbers;  // NaN: no value
  std::vector<std::string_view> strings;
  // Per column, 1 where a string column has no value (a metadata column's null); may be empty.
  std::vector<uint8_t> null;
};

class FilterExpr {
 public:
  // Parses `text` over `columns`. InvalidArgument naming the position and the cause (and the
  // columns, for an unknown one).
  static Status Parse(std::string_view text, std::vector<FilterColumn> columns,
                      std::unique_ptr<FilterExpr>* out);
  ~FilterExpr();

  // The reasons a record is left out: the text of each top-level "and" operand, in order (one
  // reason, the whole expression, when it is not an "and").
  const std::vector<std::string>& reasons() const { return reasons_; }
  // Whether the expression reads column `i`.
  bool uses(size_t i) const { return i < used_.size() && used_[i]; }
  // -1 when the row is kept; else the index in reasons() of the first operand it fails.
  int Reject(const FilterRow& row) const;

  struct Node;

 private:
  FilterExpr() = default;
  std::vector<std::unique_ptr<Node>> conjuncts_;
  std::vector<std::string> reasons_;
  std::vector<bool> used_;
};

}  // namespace sluice::loader
