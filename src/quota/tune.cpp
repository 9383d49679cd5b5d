#include "fracpack/quota/tune.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <thread>

#include <fmt/format.h>

#include "fracpack/cluster_state.hpp"
#include "fracpack/queues/charge.hpp"
#include "fracpack/queues/queue_tree.hpp"
#include "fracpack/quota/metrics.hpp"

namespace fracpack::quota {
namespace {

using queues::kUnlimited;
using queues::Resource;

constexpr std::int64_t kGpu = 1000;           // one GPU in milli-GPU
constexpr std::int64_t kMaxWeight = 64'000;   // over-quota weight 64

/// Leaf queue indices in the order replay() reports them (tree index order).
std::vector<std::size_t> leaf_indices(const queues::QueueTree& tree) {
  std::vector<std::size_t> out;
  for (std::size_t q = 0; q < tree.size(); ++q) {
    if (tree.is_leaf(q)) out.push_back(q);
  }
  return out;
}

std::int64_t whole_gpus(double milli) { return static_cast<std::int64_t>(std::llround(milli / kGpu)) * kGpu; }

/// A weight (thousandths) rounded to a tenth, at least 0.1: weights people can read.
std::int64_t tenths(double weight) { return std::max<std::int64_t>(100, std::llround(weight / 100.0) * 100); }

/// Quota as a number for distances and steps: unlimited counts as the whole cluster.
std::int64_t quota_value(std::int64_t quota, std::int64_t cluster) { return quota == kUnlimited ? cluster : quota; }

/// Strict, total order: one that may be recommended first, then the better score, then closer to
/// the input, then the settings themselves.
bool candidate_before(const Objective& objective, const Candidate& a, const Candidate& b) {
  if (a.not_allowed.empty() != b.not_allowed.empty()) return a.not_allowed.empty();
  if (better(objective, a.score, b.score)) return true;
  if (better(objective, b.score, a.score)) return false;
  if (a.distance != b.distance) return a.distance < b.distance;
  return a.settings < b.settings;
}

}  // namespace

Result<std::pair<std::vector<std::string>, std::vector<double>>> leaves_and_weights(const std::vector<queues::QueueSpec>& specs) {
  auto tree = queues::QueueTree::build(specs);
  if (!tree) return tree.status();
  std::vector<std::string> names;
  std::vector<double> weights, quotas;
  for (std::size_t q : leaf_indices(*tree)) {
    const auto& gpu = tree->queue(q).resource(Resource::kGpu);
    names.push_back(tree->queue(q).name);
    weights.push_back(static_cast<double>(gpu.over_quota_weight) / 1000.0);
    quotas.push_back(gpu.quota == kUnlimited ? 0.0 : static_cast<double>(gpu.quota) / 1000.0);
  }
  const bool any_weight = std::any_of(weights.begin(), weights.end(), [](double w) { return w > 0; });
  return std::make_pair(std::move(names), any_weight ? weights : quotas);
}

std::vector<queues::QueueSpec> apply_settings(const std::vector<queues::QueueSpec>& specs, const std::vector<std::string>& leaves,
                                              const std::vector<Setting>& settings, const std::vector<NodeSpec>& nodes,
                                              bool scale_cpu_memory) {
  std::int64_t cluster_gpu = 0, cluster_cpu = 0, cluster_memory = 0;
  for (const auto& n : nodes) {
    cluster_gpu += static_cast<std::int64_t>(n.gpus.size()) * kGpu;
    cluster_cpu += n.cpu.count();
    cluster_memory += n.memory.count();
  }
  std::vector<queues::QueueSpec> out = specs;
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < out.size(); ++i) index.emplace(out[i].name, i);
  for (std::size_t l = 0; l < leaves.size() && l < settings.size(); ++l) {
    auto it = index.find(leaves[l]);
    if (it == index.end()) continue;
    queues::QueueSpec& spec = out[it->second];
    auto& gpu = spec.resource(Resource::kGpu);
    gpu.quota = settings[l].gpu_quota;
    gpu.over_quota_weight = settings[l].gpu_weight;
    if (!scale_cpu_memory || cluster_gpu == 0 || gpu.quota == kUnlimited) continue;
    const double fraction = static_cast<double>(gpu.quota) / static_cast<double>(cluster_gpu);
    for (auto [r, total] : {std::pair{Resource::kCpu, cluster_cpu}, std::pair{Resource::kMemory, cluster_memory}}) {
      auto& term = spec.resource(r);
      // Whole millicores; whole megabytes (KAI's memory unit) for memory.
      const double unit = r == Resource::kMemory ? 1e6 : 1.0;
      if (term.quota != kUnlimited && term.quota > 0) {
        term.quota = static_cast<std::int64_t>(std::round(fraction * static_cast<double>(total) / unit) * unit);
      }
    }
  }
  // Parents with finite quotas hold the sum of their children's, bottom-up.
  auto tree = queues::QueueTree::build(out);
  if (!tree) return out;  // replay() reports the problem
  const auto& order = tree->top_down();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::size_t q = *it;
    if (tree->is_leaf(q)) continue;
    queues::QueueSpec& spec = out[index.at(tree->queue(q).name)];
    for (Resource r : queues::kResources) {
      if (spec.resource(r).quota == kUnlimited) continue;
      std::int64_t sum = 0;
      bool unlimited = false;
      for (std::size_t c : tree->children(q)) {
        const std::int64_t child = out[index.at(tree->queue(c).name)].resource(r).quota;
        unlimited = unlimited || child == kUnlimited;
        sum += child == kUnlimited ? 0 : child;
      }
      if (!unlimited) spec.resource(r).quota = sum;
    }
  }
  return out;
}

Result<TuneReport> tune(const std::vector<NodeSpec>& nodes, const std::vector<queues::QueueSpec>& specs, const TimedWorkload& workload,
                        const Objective& objective, const TuneOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
  auto tree = queues::QueueTree::build(specs);
  if (!tree) return tree.status();
  auto empty = ClusterState::create(nodes, options.replay.placement);
  if (!empty) return empty.status();
  const std::vector<std::size_t> leaves = leaf_indices(*tree);
  if (objective.queues.size() != leaves.size()) return invalid_argument("the objective was parsed for other queues");
  for (std::size_t l = 0; l < leaves.size(); ++l) {
    if (objective.queues[l] != tree->queue(leaves[l]).name) return invalid_argument("the objective was parsed for other queues");
  }

  TuneReport report;
  report.objective = objective;
  for (const auto& n : nodes) report.cluster_gpus += static_cast<std::int64_t>(n.gpus.size());
  const std::int64_t cluster = report.cluster_gpus * kGpu;

  std::vector<Setting> input;
  std::vector<std::int64_t> ceiling;  // per leaf: the quota may not pass the cluster or the queue's GPU limit
  for (std::size_t q : leaves) {
    const auto& gpu = tree->queue(q).resource(Resource::kGpu);
    input.push_back({gpu.quota, gpu.over_quota_weight});
    ceiling.push_back(gpu.limit == kUnlimited ? cluster : std::min(cluster, gpu.limit));
  }
  auto distance = [&](const std::vector<Setting>& s) {
    double d = 0;
    for (std::size_t l = 0; l < s.size(); ++l) {
      d += static_cast<double>(std::abs(quota_value(s[l].gpu_quota, cluster) - quota_value(input[l].gpu_quota, cluster))) / kGpu;
      d += static_cast<double>(std::abs(s[l].gpu_weight - input[l].gpu_weight)) / 1000.0;
    }
    return d;
  };

  auto quota_sum = [&](const std::vector<Setting>& s) {
    std::int64_t sum = 0;
    for (const auto& x : s) sum += quota_value(x.gpu_quota, cluster);
    return sum;
  };
  // Why a setting may not be recommended ("" when it may): a quota above its queue's limit or the
  // cluster, or quotas adding up to more than the cluster without --oversubscribe.
  auto not_allowed = [&](const std::vector<Setting>& s) -> std::string {
    for (std::size_t l = 0; l < s.size(); ++l) {
      if (quota_value(s[l].gpu_quota, cluster) > ceiling[l]) {
        return fmt::format("{}'s quota above {} GPUs, its limit or the cluster", objective.queues[l], ceiling[l] / kGpu);
      }
    }
    const std::int64_t sum = quota_sum(s);
    if (!options.oversubscribe && sum > cluster) {
      return fmt::format("quotas add up to {:g} GPUs, more than the cluster's {}", static_cast<double>(sum) / kGpu, cluster / kGpu);
    }
    return "";
  };
  ReplayOptions replay_options = options.replay;
  replay_options.timeline = false;
  std::map<std::vector<Setting>, Candidate> seen;
  // Replays every setting not seen before, `jobs` at a time; the first error stops the search.
  auto evaluate = [&](const std::vector<std::vector<Setting>>& batch, const std::string& origin) -> Status {
    std::vector<std::vector<Setting>> todo;
    for (const auto& s : batch) {
      if (seen.count(s) == 0 && std::find(todo.begin(), todo.end(), s) == todo.end()) todo.push_back(s);
    }
    std::vector<Result<ReplayReport>> results(todo.size(), invalid_argument("not run"));
    std::atomic<std::size_t> next{0};
    auto work = [&] {
      for (std::size_t k = next++; k < todo.size(); k = next++) {
        try {
          auto queue_specs = apply_settings(specs, objective.queues, todo[k], nodes, options.scale_cpu_memory);
          results[k] = replay(nodes, std::move(queue_specs), workload, replay_options);
        } catch (const std::exception& e) {
          results[k] = Status(Code::kInternal, fmt::format("replay of a candidate failed: {}", e.what()));
        }
      }
    };
    const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
    const auto threads = static_cast<unsigned>(std::min<std::size_t>(options.jobs == 0 ? hardware : options.jobs, std::max<std::size_t>(1, todo.size())));
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    for (std::size_t k = 0; k < todo.size(); ++k) {
      if (!results[k]) return results[k].status();
      Candidate c;
      c.settings = todo[k];
      c.metrics = metrics_of(*results[k], report.cluster_gpus);
      c.score = score(objective, c.metrics);
      c.distance = distance(c.settings);
      c.not_allowed = not_allowed(c.settings);
      c.origin = origin;
      seen.emplace(todo[k], std::move(c));
      ++report.evaluated;
    }
    return {};
  };
  auto best_of = [&](const std::vector<std::vector<Setting>>& batch) {
    const Candidate* best = nullptr;
    for (const auto& s : batch) {
      const Candidate& c = seen.at(s);
      if (best == nullptr || candidate_before(objective, c, *best)) best = &c;
    }
    return best->settings;
  };

  // Start: the input, and quotas proportional to each queue's GPU-hours of demand.
  std::vector<double> demand(leaves.size(), 0);
  std::int64_t last = 0;
  for (const auto& p : workload.pods) last = std::max(last, p.arrival);
  for (const auto& p : workload.pods) {
    auto q = tree->find(p.pod.queue);
    const auto leaf = q ? std::find(leaves.begin(), leaves.end(), *q) : leaves.end();
    if (leaf == leaves.end()) continue;  // replay() names the pod
    const double run = static_cast<double>(p.run_seconds.value_or(std::max<std::int64_t>(1, last - p.arrival)));
    demand[static_cast<std::size_t>(leaf - leaves.begin())] +=
        static_cast<double>(queues::charge_pending(p.pod, *empty)[Resource::kGpu]) * run;
  }
  const double demand_total = std::accumulate(demand.begin(), demand.end(), 0.0);
  std::vector<Setting> proportional = input;
  for (std::size_t l = 0; l < leaves.size(); ++l) {
    const double share = demand_total > 0 ? demand[l] / demand_total : 1.0 / static_cast<double>(leaves.size());
    proportional[l].gpu_quota = std::min(ceiling[l], static_cast<std::int64_t>(share * static_cast<double>(report.cluster_gpus)) * kGpu);
  }
  if (auto st = evaluate({input}, "input"); !st.is_ok()) return st;
  if (auto st = evaluate({proportional}, "demand"); !st.is_ok()) return st;
  report.input = seen.at(input);
  std::vector<Setting> current = best_of({input, proportional});

  // Queue l at its ceiling, the others scaled down (whole GPUs) so the sum stays within the cluster.
  auto with_all = [&](std::vector<Setting> s, std::size_t l) {
    s[l].gpu_quota = ceiling[l];
    const std::int64_t others = quota_sum(s) - ceiling[l];
    const std::int64_t room = std::max<std::int64_t>(0, cluster - ceiling[l]);
    if (options.oversubscribe || others <= room) return s;
    for (std::size_t k = 0; k < s.size(); ++k) {
      if (k == l) continue;
      const double scaled = static_cast<double>(quota_value(s[k].gpu_quota, cluster)) * static_cast<double>(room) / static_cast<double>(others);
      s[k].gpu_quota = static_cast<std::int64_t>(scaled / kGpu) * kGpu;
    }
    return s;
  };
  std::int64_t step = std::max(kGpu, whole_gpus(static_cast<double>(cluster) / 4.0));
  double factor = 2.0;
  while (true) {
    if (options.max_rounds > 0 && report.rounds >= options.max_rounds) break;
    if (options.budget_seconds > 0 && elapsed() >= options.budget_seconds) {
      report.budget_ran_out = true;
      break;
    }
    std::vector<std::vector<Setting>> batch{current};
    auto offer = [&](std::vector<Setting> s) {  // a neighbour, unless it could not be recommended
      if (s != current && not_allowed(s).empty()) batch.push_back(std::move(s));
    };
    for (std::size_t l = 0; l < leaves.size(); ++l) {
      const std::int64_t quota = quota_value(current[l].gpu_quota, cluster);
      for (std::int64_t q : {quota - step, quota + step}) {
        auto s = current;
        s[l].gpu_quota = std::clamp<std::int64_t>(q, 0, ceiling[l]);
        offer(std::move(s));
      }
      // Moves of `step` GPUs from another queue to this one: the way to raise a quota when the
      // quotas already add up to the cluster.
      for (std::size_t from = 0; from < leaves.size(); ++from) {
        const std::int64_t have = quota_value(current[from].gpu_quota, cluster);
        if (from == l || have == 0) continue;
        auto s = current;
        const std::int64_t moved = std::min({step, have, ceiling[l] - quota});
        if (moved <= 0) continue;
        s[l].gpu_quota = quota + moved;
        s[from].gpu_quota = have - moved;
        offer(std::move(s));
      }
      // The first round also tries each queue with no quota and with all it may have (the others
      // shrunk in proportion to fit): an objective can be flat near the start (pods that need 4
      // GPUs wait alike at quotas 1, 2 and 3).
      if (report.rounds == 0) {
        auto none = current;
        none[l].gpu_quota = 0;
        offer(std::move(none));
        offer(with_all(current, l));
      }
      const std::int64_t w = current[l].gpu_weight;
      const std::vector<std::int64_t> weights =
          w == 0 ? std::vector<std::int64_t>{kGpu}
                 : std::vector<std::int64_t>{tenths(static_cast<double>(w) * factor), tenths(static_cast<double>(w) / factor)};
      for (std::int64_t v : weights) {
        auto s = current;
        s[l].gpu_weight = std::clamp<std::int64_t>(v, 0, kMaxWeight);
        offer(std::move(s));
      }
    }
    ++report.rounds;
    if (auto st = evaluate(batch, fmt::format("round {}", report.rounds)); !st.is_ok()) return st;
    const std::vector<Setting> best = best_of(batch);
    if (options.on_round) options.on_round(report.rounds, report.evaluated, seen.at(best), elapsed());
    if (best != current) {
      current = best;
      continue;
    }
    if (step > kGpu) {
      step = std::max(kGpu, whole_gpus(static_cast<double>(step) / 2.0));
    } else if (factor > 1.5) {
      factor = 1.5;
    } else {
      report.converged = true;
      break;
    }
  }

  std::vector<const Candidate*> all;
  for (const auto& [s, c] : seen) all.push_back(&c);
  std::sort(all.begin(), all.end(), [&](const Candidate* a, const Candidate* b) { return candidate_before(objective, *a, *b); });
  for (const Candidate* c : all) report.candidates.push_back(*c);
  report.recommended = apply_settings(specs, objective.queues, report.candidates.front().settings, nodes, options.scale_cpu_memory);
  report.seconds = elapsed();
  return report;
}

}  // namespace fracpack::quota
