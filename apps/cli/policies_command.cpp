// fracpack policies: the placement policies and what each does.
#include <fmt/format.h>

#include "commands.hpp"
#include "fracpack/binpack/fragmentation.hpp"
#include "fracpack/binpack/policy.hpp"

namespace fracpack::cli {
namespace {

class PoliciesCommand : public Command {
 public:
  explicit PoliciesCommand(CLI::App& app) { app_ = app.add_subcommand("policies", "List the placement policies"); }

  int run() override {
    for (auto n : policy_names()) fmt::print("{:<15} {}\n", n, (*make_policy(n))->summary());
    fmt::print("\nThe FGD study's policies and fgd-cpu and fgd-lp, ours (`fracpack bench density`; also `place`, and\n"
               "`serve` with --workload FILE, which fgd, fgd-cpu and fgd-lp need for their target workload):\n");
    PolicyOptions study;
    study.workload = std::make_shared<const std::vector<TypicalPod>>(1, TypicalPod{});
    for (auto n : study_policy_names()) fmt::print("{:<15} {}\n", n, (*make_policy(n, study))->summary());
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> add_policies(CLI::App& app) { return std::make_unique<PoliciesCommand>(app); }

}  // namespace fracpack::cli
