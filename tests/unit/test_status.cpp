// Error messages as the C API hands them out (common/status.h).
#include <gtest/gtest.h>

#include "common/status.h"

namespace pot {
namespace {

TEST(PrintableMessage, KeepsUtf8NewlinesAndTabs) {
  const std::string m = "step 3: w \xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n\tnext line";
  EXPECT_EQ(printable_message(m), m);
}

TEST(PrintableMessage, EscapesWhatIsNotUtf8OrIsAControlCharacter) {
  // A TorchScript parse error quoting a corrupted program record.
  EXPECT_EQ(printable_message("line 1\n_z\x98\xebU"), "line 1\n_z\\x98\\xebU");
  EXPECT_EQ(printable_message(std::string("a\0b\x1b[31m\x7f", 9)), "a\\x00b\\x1b[31m\\x7f");
  EXPECT_EQ(printable_message("\xc0\xaf"), "\\xc0\\xaf");              // overlong '/'
  EXPECT_EQ(printable_message("\xed\xa0\x80"), "\\xed\\xa0\\x80");     // a surrogate
  EXPECT_EQ(printable_message("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(printable_message("\xe2\x82"), "\\xe2\\x82");              // truncated at the end
  EXPECT_EQ(printable_message("\xe2(\xa1"), "\\xe2(\\xa1");            // broken in the middle
  EXPECT_EQ(printable_message(""), "");
}

}  // namespace
}  // namespace pot
