// metav1.Duration in Go's time.ParseDuration syntax (the answers are Go's own).
#include <chrono>

#include <doctest/doctest.h>

#include "fracpack/k8s/time.hpp"

namespace fracpack::test {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST_CASE("parse_go_duration: Go's syntax and values") {
  CHECK(k8s::parse_go_duration("0") == nanoseconds(0));
  CHECK(k8s::parse_go_duration("20s") == seconds(20));
  CHECK(k8s::parse_go_duration("10m") == minutes(10));
  CHECK(k8s::parse_go_duration("1.5h") == minutes(90));
  CHECK(k8s::parse_go_duration("2h45m30.5s") == hours(2) + minutes(45) + milliseconds(30'500));
  CHECK(k8s::parse_go_duration("300ms") == milliseconds(300));
  CHECK(k8s::parse_go_duration("1us") == nanoseconds(1'000));
  CHECK(k8s::parse_go_duration("1\u00b5s") == nanoseconds(1'000));
  CHECK(k8s::parse_go_duration("1\u03bcs") == nanoseconds(1'000));
  CHECK(k8s::parse_go_duration("7ns") == nanoseconds(7));
  CHECK(k8s::parse_go_duration(".5s") == milliseconds(500));
  CHECK(k8s::parse_go_duration("1.s") == seconds(1));
  CHECK(k8s::parse_go_duration("-1m") == seconds(-60));
  CHECK(k8s::parse_go_duration("+1m") == seconds(60));
  CHECK(k8s::parse_go_duration("9223372036854775807ns") == nanoseconds(INT64_MAX));
  CHECK(k8s::parse_go_duration("-9223372036854775808ns") == nanoseconds(INT64_MIN));
}

TEST_CASE("parse_go_duration: what Go refuses") {
  for (const char* bad : {"", "-", "s", ".s", "10", "1d", "1 s", "1s ", "1.5", "1h-1m", "9223372036854775808ns", "2562048h",
                          "1e3s", "0.0.1s", "--1s"}) {
    CAPTURE(bad);
    CHECK_FALSE(k8s::parse_go_duration(bad).has_value());
  }
}

}  // namespace
}  // namespace fracpack::test
