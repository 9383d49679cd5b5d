// Our results next to the FGD study's published ones (fgd-published/allo.csv).
#include <charconv>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "fracpack/sim/density.hpp"
#include "trace/csv_table.hpp"

namespace fracpack::density {

Result<std::string> compare_published(const std::filesystem::path& published_allo_csv, const std::string& workload,
                                      double tune, const std::vector<RunResult>& runs) {
  auto table = trace::read_csv(published_allo_csv);
  if (!table) return table.status();
  const int w = table->column("workload");
  const int p = table->column("sc_policy");
  const int at130 = table->column("130");
  const int tune_col = table->column("tune");
  if (w < 0 || p < 0 || at130 < 0 || tune_col < 0) {
    return invalid_argument("--published {}: not the published layout (columns workload, sc_policy, tune and 130 are required)",
                            table->file);
  }
  std::map<std::string, std::pair<double, int>> theirs;  // label → (sum, count)
  for (std::size_t r = 0; r < table->rows.size(); ++r) {
    const auto& row = table->rows[r];
    if (row[static_cast<std::size_t>(w)] != workload) continue;
    double row_tune = 0;
    const std::string& tune_text = row[static_cast<std::size_t>(tune_col)];
    std::from_chars(tune_text.data(), tune_text.data() + tune_text.size(), row_tune);
    if (std::abs(row_tune - tune) > 1e-9) continue;
    const std::string& text = row[static_cast<std::size_t>(at130)];
    double v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || ptr != text.data() + text.size()) {
      return invalid_argument("{}: column 130 \"{}\" is not a number", table->where(r), text);
    }
    auto& slot = theirs[row[static_cast<std::size_t>(p)]];
    slot.first += v;
    ++slot.second;
  }
  std::map<std::string, std::pair<double, int>> ours;
  std::vector<std::string> order;
  for (const auto& r : runs) {
    if (!ours.count(r.policy)) order.push_back(r.policy);
    auto& slot = ours[r.policy];
    if (!std::isnan(r.allocation[130])) {
      slot.first += r.allocation[130];
      ++slot.second;
    }
  }
  std::string out = fmt::format("Allocation at 130 % on {}, mean of seeds (ours, published):\n\n"
                                "| policy | published as | ours | published | ours − published |\n|---|---|---:|---:|---:|\n",
                                workload);
  for (const auto& policy : order) {
    const std::string label(published_label(policy));
    const auto& [sum, n] = ours[policy];
    const double mine = n > 0 ? sum / n : std::nan("");
    if (label.empty() || !theirs.count(label)) {
      out += fmt::format("| {} | — | {:.2f} | — | — |\n", policy, mine);
      continue;
    }
    const double pub = theirs[label].first / theirs[label].second;
    out += fmt::format("| {} | {} | {:.2f} | {:.2f} | {:+.2f} |\n", policy, label, mine, pub, mine - pub);
  }
  if (theirs.empty()) out += fmt::format("\n(no published rows for workload {} at --tune {})\n", workload, tune);
  return out;
}

}  // namespace fracpack::density
