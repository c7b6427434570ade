// LoaderOptions::filter's expressions: the grammar, the reasons a record is counted under, and
// errors that name the byte where the expression goes wrong.
#include "loader/filter_expr.h"

#include <gtest/gtest.h>

#include "assert_ok.h"

namespace sluice::loader {
namespace {

using T = FilterColumn::Type;
const std::vector<FilterColumn> kColumns = {
    {"duration", T::kNumber}, {"tokens", T::kNumber}, {"lang", T::kString}};

std::unique_ptr<FilterExpr> Parse(const std::string& text) {
  std::unique_ptr<FilterExpr> f;
  Status st = FilterExpr::Parse(text, kColumns, &f);
  EXPECT_OK(st) << text;
  return f;
}

std::string ErrorOf(const std::string& text) {
  std::unique_ptr<FilterExpr> f;
  Status st = FilterExpr::Parse(text, kColumns, &f);
  EXPECT_TRUE(st.IsInvalidArgument()) << text << " parsed";
  return st.message();
}

FilterRow Row(double duration, double tokens, std::string_view lang) {
  return FilterRow{{duration, tokens, 0}, {{}, {}, lang}};
}

TEST(FilterExpr, ComparesNumbersAndStringsWithAndOrNotAndParentheses) {
  auto f = Parse(R"(lang == "en" and duration < 20)");
  EXPECT_EQ(f->Reject(Row(3, 0, "en")), -1);
  EXPECT_EQ(f->Reject(Row(3, 0, "de")), 0);
  EXPECT_EQ(f->Reject(Row(25, 0, "en")), 1);
  EXPECT_EQ(f->Reject(Row(25, 0, "de")), 0);  // counted under the first reason it fails

  // and binds tighter than or; not tighter than and.
  f = Parse("duration >= 10 or tokens > 5 and not lang != 'fr'");
  EXPECT_EQ(f->Reject(Row(10, 0, "de")), -1);
  EXPECT_EQ(f->Reject(Row(1, 6, "fr")), -1);
  EXPECT_EQ(f->Reject(Row(1, 6, "de")), 0);
  EXPECT_EQ(f->Reject(Row(1, 5, "fr")), 0);
  f = Parse("(duration >= 10 or tokens > 5) and lang <= \"en\"");
  EXPECT_EQ(f->Reject(Row(1, 6, "fr")), 1);
  EXPECT_EQ(f->Reject(Row(1, 6, "de")), -1);
  f = Parse("-1.5e1 < duration and duration != 2 and tokens == 0.5e1");
  EXPECT_EQ(f->Reject(Row(-15, 5, "")), 0);
  EXPECT_EQ(f->Reject(Row(2, 5, "")), 1);
  EXPECT_EQ(f->Reject(Row(3, 5, "")), -1);
  f = Parse(R"(lang == "it's \"x\" \\")");
  EXPECT_EQ(f->Reject(Row(0, 0, R"(it's "x" \)")), -1);
}

TEST(FilterExpr, ReasonsAreTheTopLevelAndOperands) {
  EXPECT_EQ(
      Parse(R"( lang == "en"  and (duration < 20 or tokens > 3) and not tokens == 0 )")->reasons(),
      (std::vector<std::string>{R"(lang == "en")", "(duration < 20 or tokens > 3)",
                                "not tokens == 0"}));
  EXPECT_EQ(Parse("duration < 1 or tokens > 2")->reasons(),
            std::vector<std::string>{"duration < 1 or tokens > 2"});
  auto f = Parse("tokens > 1");
  EXPECT_TRUE(f->uses(1));
  EXPECT_FALSE(f->uses(0));
  EXPECT_FALSE(f->uses(2));
}

TEST(FilterExpr, NaNComparesFalseExceptNotEqual) {
  auto f = Parse("duration < 1 or duration >= 1");
  EXPECT_EQ(f->Reject(Row(std::numeric_limits<double>::quiet_NaN(), 0, "")), 0);
  EXPECT_EQ(Parse("duration != 1")->Reject(Row(std::numeric_limits<double>::quiet_NaN(), 0, "")),
            -1);
}

TEST(FilterExpr, NullStringComparesFalseExceptNotEqual) {
  // A metadata column without a value (no language given): as a NaN, only != holds.
  FilterRow null_lang = Row(1, 0, "");
  null_lang.null = {0, 0, 1};
  for (const char* text : {R"(lang == "")", R"(lang < "zz")", R"(lang >= "")", R"("" == lang)"})
    EXPECT_EQ(Parse(text)->Reject(null_lang), 0) << text;
  EXPECT_EQ(Parse(R"(lang != "en")")->Reject(null_lang), -1);
  EXPECT_EQ(Parse(R"(not lang == "en")")->Reject(null_lang), -1);
  // An empty string that is a value compares as one.
  EXPECT_EQ(Parse(R"(lang == "")")->Reject(Row(1, 0, "")), -1);
}

TEST(FilterExpr, UnknownColumnIsRefusedNamingItsPositionAndTheColumns) {
  EXPECT_EQ(ErrorOf(R"(lang == "en" and durration < 20)"),
            R"(filter 'lang == "en" and durration < 20': at byte 17: unknown column 'durration' )"
            R"((the columns: duration, tokens, lang))");
  EXPECT_EQ(ErrorOf("lang == en"),
            "filter 'lang == en': at byte 8: unknown column 'en' (the columns: duration, tokens, "
            "lang). HINT: strings are quoted: en in quotes, \"en\"");
}

TEST(FilterExpr, SyntaxAndTypeErrorsNameTheirByte) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "at byte 0: expected a column, a number or a string, got the end"},
      {"duration", "at byte 8: expected a comparison (== != < <= > >=), got the end"},
      {"duration = 3", "at byte 9: expected a comparison"},
      {"duration < ", "at byte 11: expected a column, a number or a string, got the end"},
      {"(duration < 3", "at byte 13: expected ')' closing the '(' at byte 0"},
      {"duration < 3 tokens > 1",
       "at byte 13: unexpected 'tokens > 1' after a complete expression"},
      {"lang == 'en", "at byte 8: string not closed"},
      {"lang == 'e\\n'", "at byte 10: unknown escape"},
      {"lang < 3", "at byte 0: cannot compare string column 'lang' with a number (at byte 7)"},
      {"duration == \"3\"", "at byte 0: cannot compare number column 'duration' with a string"},
      {"duration < inf", "unknown column 'inf'"},
      {"duration < 0x10", "at byte 11: not a number"},
      {"duration < 1 and and", "at byte 17: 'and' where a column, number or string belongs"},
      {"duration < 1 ; x", "at byte 13: unexpected '; x'"},
  };
  for (const auto& [text, says] : cases)
    EXPECT_NE(ErrorOf(text).find(says), std::string::npos) << text << " -> " << ErrorOf(text);
}

}  // namespace
}  // namespace sluice::loader
