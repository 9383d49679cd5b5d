// Progress lines for long commands: the bar, the rate and the time left, for replay and bench
// density (ProgressBar) and quota tune (its rounds, against the budget and --max-rounds).
#include <doctest/doctest.h>

#include "fracpack/core/progress.hpp"
#include "jobs/quota_output.hpp"

namespace fracpack::test {

TEST_CASE("progress: the bar, the count, the rate and the ETA at this pace") {
  CHECK(progress_line(0, 3000, 0, "pods") == "[" + std::string(40, ' ') + "] 0/3000 pods");  // no rate before the first
  CHECK(progress_line(150, 3000, 10, "pods") == "[==" + std::string(38, ' ') + "] 150/3000 pods  15.0/s  ETA 3m10s");
  CHECK(progress_line(3000, 3000, 200, "pods") == "[" + std::string(40, '=') + "] 3000/3000 pods  15.0/s  ETA 0s");
  CHECK(progress_line(5, 4, 1, "runs").starts_with("[" + std::string(40, '=') + "] 5/4 runs"));  // never past the bar
  CHECK(human_duration(42.4) == "42s");
  CHECK(human_duration(59.6) == "1m00s");
  CHECK(human_duration(3720) == "1h02m");
  CHECK(human_duration(-3) == "0s");
}

TEST_CASE("quota tune's progress: rounds, candidates per second, and the sooner end of the budget and --max-rounds") {
  quota::Candidate met;
  CHECK(tune_progress_line(3, 120, met, 15, 300, 10) ==
        "round 3 of 10: 120 candidates replayed (8.0/s), best so far met; ETA at most 35s");  // 7 rounds of 5 s
  CHECK(tune_progress_line(3, 120, met, 15, 20, 10).ends_with("ETA at most 5s"));       // the budget ends first
  CHECK(tune_progress_line(3, 120, met, 15, 0, 0) == "round 3: 120 candidates replayed (8.0/s), best so far met");
}

}  // namespace fracpack::test
