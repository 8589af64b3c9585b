#include "util/text/markdown.h"

#include <string>

#include <gtest/gtest.h>

namespace ftbench::text {
namespace {

TEST(MarkdownLiteral, LinksTagsEmphasisAndCodeAreEscaped) {
  EXPECT_EQ(markdown_literal("[x](http://e.com) <img src=x> *a* _b_ `c` ~d~ \\"),
            "\\[x\\](http://e.com) \\<img src=x\\> \\*a\\* \\_b\\_ \\`c\\` \\~d\\~ \\\\");
  EXPECT_EQ(markdown_literal("run\x1b[2J"), "run\\\\x1B\\[2J");
  EXPECT_EQ(markdown_literal("h100-reference (cuda)"), "h100-reference (cuda)");
  // An entity is text too: "&lt;b&gt;" shows as typed, not as "<b>".
  EXPECT_EQ(markdown_literal("&lt;b&gt; & &#60;"), "\\&lt;b\\&gt; \\& \\&#60;");
}

// Longer than kMaxMarkdownText bytes: cut at a character's start, saying how long it was.
TEST(MarkdownLiteral, LongTextIsCutAndSaysSo) {
  EXPECT_EQ(markdown_literal(std::string(299, 'a') + "\xC3\xA9"
                                                     "b"),
            std::string(299, 'a') + "… (302 bytes in all)");
  EXPECT_EQ(markdown_literal(std::string(300, 'a')), std::string(300, 'a'));
}

}  // namespace
}  // namespace ftbench::text

namespace ftbench::text {
namespace {

// ftbench's own lines (a compare verdict with the one-run caveat is 426 bytes) were cut at a file
// string's 300 bytes (a hostile review of issue 39): they take kMaxMarkdownLine.
TEST(MarkdownLiteral, OwnLinesAreCutOnlyAtTheLineLimit) {
  const std::string verdict(426, 'v');
  EXPECT_EQ(markdown_literal(verdict, kMaxMarkdownLine), verdict);
  EXPECT_EQ(markdown_literal(std::string(5000, 'v'), kMaxMarkdownLine),
            std::string(4096, 'v') + "… (5000 bytes in all)");
}

}  // namespace
}  // namespace ftbench::text
