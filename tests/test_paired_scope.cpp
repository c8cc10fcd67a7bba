// PairedScope: the begin/end discipline every capture and allocator routing relies on, tested
// with fake actions (no GPU needed): end runs once on the normal path, abandon runs once when an
// exception leaves the scope, nested scopes unwind innermost first, and a failing begin or end
// never leaves the pair half open.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "condbench/paired_scope.h"

namespace condbench::testing {
namespace {

struct Log {
  std::vector<std::string> events;
  PairedScope::Action add(std::string event) {
    return [this, event] { events.push_back(event); };
  }
};

TEST(PairedScope, EndsOnceOnTheNormalPath) {
  Log log;
  {
    PairedScope scope(log.add("begin"), log.add("end"), log.add("abandon"));
    EXPECT_TRUE(scope.open());
    scope.close();
    EXPECT_FALSE(scope.open());
    scope.close();  // a second close does nothing
  }
  EXPECT_EQ(log.events, (std::vector<std::string>{"begin", "end"}));
}

TEST(PairedScope, AbandonsOnceWhenAnExceptionLeavesTheScope) {
  Log log;
  EXPECT_THROW(
      {
        PairedScope scope(log.add("begin"), log.add("end"), log.add("abandon"));
        throw std::runtime_error("the body failed");
      },
      std::runtime_error);
  EXPECT_EQ(log.events, (std::vector<std::string>{"begin", "abandon"}));
}

TEST(PairedScope, NestedScopesUnwindInnermostFirst) {
  Log log;
  EXPECT_THROW(
      {
        PairedScope capture(log.add("capture begin"), log.add("capture end"), log.add("capture abandon"));
        PairedScope routing(log.add("routing begin"), log.add("routing end"), log.add("routing abandon"));
        PairedScope body(log.add("body begin"), log.add("body end"), log.add("body abandon"));
        body.close();
        throw std::runtime_error("failed after the body");
      },
      std::runtime_error);
  EXPECT_EQ(log.events, (std::vector<std::string>{"capture begin", "routing begin", "body begin", "body end",
                                                  "routing abandon", "capture abandon"}));
}

TEST(PairedScope, AFailingBeginLeavesNothingToEnd) {
  Log log;
  EXPECT_THROW(PairedScope([] { throw std::runtime_error("begin failed"); }, log.add("end"), log.add("abandon")),
               std::runtime_error);
  EXPECT_TRUE(log.events.empty());
}

TEST(PairedScope, AFailingEndIsTidiedUpAndReported) {
  Log log;
  PairedScope scope(
      log.add("begin"), [] { throw std::runtime_error("end failed halfway"); }, log.add("abandon"));
  EXPECT_THROW(scope.close(), std::runtime_error);
  EXPECT_FALSE(scope.open());
  EXPECT_EQ(log.events, (std::vector<std::string>{"begin", "abandon"}));
}

}  // namespace
}  // namespace condbench::testing
