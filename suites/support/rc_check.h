// RapidCheck in GoogleTest with a bounded number of runs, for properties whose every
// run is expensive (it traces and trains a program).
#pragma once

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>

namespace passcheck::testing {

/// Like RC_GTEST_PROP, but with `runs` successes instead of RapidCheck's default 100.
/// RC_PARAMS still sets the seed (and max_success, if smaller, wins).
template <typename Testable>
void check_n(int runs, Testable&& testable) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  rc::detail::TestMetadata metadata;
  metadata.id = std::string(info->test_case_name()) + "/" + info->name();
  metadata.description = info->name();
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  params.maxSuccess = std::min(params.maxSuccess, runs);
  const auto result = rc::detail::checkTestable(std::forward<Testable>(testable), metadata, params);
  std::ostringstream message;
  rc::detail::printResultMessage(result, message);
  if (result.template is<rc::detail::SuccessResult>()) std::cout << message.str() << std::endl;
  else FAIL() << message.str();
}

}  // namespace passcheck::testing
