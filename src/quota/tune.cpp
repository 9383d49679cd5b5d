#include "fracpack/sim/quota/tune.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "core/parallel.hpp"
#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/queues/charge.hpp"
#include "fracpack/queues/queue_tree.hpp"
#include "fracpack/sim/quota/metrics.hpp"

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

namespace {

/// One search: a compass search over each leaf queue's GPU quota and over-quota weight, from the
/// input and from quotas proportional to demand, halving the step when no neighbour improves.
class Tuner {
 public:
  using Settings = std::vector<Setting>;

  Tuner(const std::vector<NodeSpec>& nodes, const std::vector<queues::QueueSpec>& specs, const TimedWorkload& workload,
        const Objective& objective, const TuneOptions& options)
      : nodes_(nodes), specs_(specs), workload_(workload), objective_(objective), options_(options) {}

  Result<TuneReport> run();

 private:
  Status prepare();
  [[nodiscard]] double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  }
  [[nodiscard]] double distance(const Settings& s) const;
  [[nodiscard]] std::int64_t quota_sum(const Settings& s) const;
  [[nodiscard]] std::string not_allowed(const Settings& s) const;
  Status evaluate(const std::vector<Settings>& batch, const std::string& origin);
  [[nodiscard]] Settings best_of(const std::vector<Settings>& batch) const;
  [[nodiscard]] Settings proportional_to_demand() const;
  [[nodiscard]] Settings with_all(Settings s, std::size_t l) const;
  [[nodiscard]] std::vector<Settings> neighbours(const Settings& current) const;
  /// Halves the quota step, then narrows the weight factor; false when neither is left.
  bool narrow();
  [[nodiscard]] bool out_of_rounds();
  TuneReport finish();

  const std::vector<NodeSpec>& nodes_;
  const std::vector<queues::QueueSpec>& specs_;
  const TimedWorkload& workload_;
  const Objective& objective_;
  const TuneOptions& options_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::optional<queues::QueueTree> tree_;
  std::optional<ClusterState> empty_;
  std::vector<std::size_t> leaves_;
  Settings input_;
  std::vector<std::int64_t> ceiling_;  ///< per leaf: the quota may not pass the cluster or the queue's GPU limit
  std::int64_t cluster_ = 0;           ///< the cluster's GPUs, in milli-GPU
  ReplayOptions replay_options_;
  std::map<Settings, Candidate> seen_;
  TuneReport report_;
  std::int64_t step_ = 0;  ///< quota step, milli-GPU (whole GPUs)
  double factor_ = 2.0;    ///< weight step: × and ÷ this
};

Status Tuner::prepare() {
  auto tree = queues::QueueTree::build(specs_);
  if (!tree) return tree.status();
  tree_ = std::move(*tree);
  auto empty = ClusterState::create(nodes_, options_.replay.placement);
  if (!empty) return empty.status();
  empty_ = std::move(*empty);
  leaves_ = leaf_indices(*tree_);
  if (objective_.queues.size() != leaves_.size()) return invalid_argument("the objective was parsed for other queues");
  for (std::size_t l = 0; l < leaves_.size(); ++l) {
    if (objective_.queues[l] != tree_->queue(leaves_[l]).name) return invalid_argument("the objective was parsed for other queues");
  }
  report_.objective = objective_;
  for (const auto& n : nodes_) report_.cluster_gpus += static_cast<std::int64_t>(n.gpus.size());
  cluster_ = report_.cluster_gpus * kGpu;
  for (std::size_t q : leaves_) {
    const auto& gpu = tree_->queue(q).resource(Resource::kGpu);
    input_.push_back({gpu.quota, gpu.over_quota_weight});
    ceiling_.push_back(gpu.limit == kUnlimited ? cluster_ : std::min(cluster_, gpu.limit));
  }
  replay_options_ = options_.replay;
  replay_options_.timeline = false;
  step_ = std::max(kGpu, whole_gpus(static_cast<double>(cluster_) / 4.0));
  return Status::ok();
}

double Tuner::distance(const Settings& s) const {
  double d = 0;
  for (std::size_t l = 0; l < s.size(); ++l) {
    d += static_cast<double>(std::abs(quota_value(s[l].gpu_quota, cluster_) - quota_value(input_[l].gpu_quota, cluster_))) / kGpu;
    d += static_cast<double>(std::abs(s[l].gpu_weight - input_[l].gpu_weight)) / 1000.0;
  }
  return d;
}

std::int64_t Tuner::quota_sum(const Settings& s) const {
  std::int64_t sum = 0;
  for (const auto& x : s) sum += quota_value(x.gpu_quota, cluster_);
  return sum;
}

// Why a setting may not be recommended ("" when it may): a quota above its queue's limit or the
// cluster, or quotas adding up to more than the cluster without --oversubscribe.
std::string Tuner::not_allowed(const Settings& s) const {
  for (std::size_t l = 0; l < s.size(); ++l) {
    if (quota_value(s[l].gpu_quota, cluster_) > ceiling_[l]) {
      return fmt::format("{}'s quota above {} GPUs, its limit or the cluster", objective_.queues[l], ceiling_[l] / kGpu);
    }
  }
  const std::int64_t sum = quota_sum(s);
  if (!options_.oversubscribe && sum > cluster_) {
    return fmt::format("quotas add up to {:g} GPUs, more than the cluster's {}", static_cast<double>(sum) / kGpu, cluster_ / kGpu);
  }
  return "";
}

// Replays every setting not seen before, `jobs` at a time; the first error stops the search.
Status Tuner::evaluate(const std::vector<Settings>& batch, const std::string& origin) {
  std::vector<Settings> todo;
  for (const auto& s : batch) {
    if (seen_.count(s) == 0 && std::find(todo.begin(), todo.end(), s) == todo.end()) todo.push_back(s);
  }
  std::vector<Result<ReplayReport>> results(todo.size(), invalid_argument("not run"));
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  parallel_for(todo.size(), options_.jobs == 0 ? hardware : options_.jobs, [&](std::size_t k) {
    try {
      auto queue_specs = apply_settings(specs_, objective_.queues, todo[k], nodes_, options_.scale_cpu_memory);
      results[k] = replay(nodes_, std::move(queue_specs), workload_, replay_options_);
    } catch (const std::exception& e) {
      results[k] = Status(Code::kInternal, fmt::format("replay of a candidate failed: {}", e.what()));
    }
  });
  for (std::size_t k = 0; k < todo.size(); ++k) {
    if (!results[k]) return results[k].status();
    Candidate c;
    c.settings = todo[k];
    c.metrics = metrics_of(*results[k], report_.cluster_gpus);
    c.score = score(objective_, c.metrics);
    c.distance = distance(c.settings);
    c.not_allowed = not_allowed(c.settings);
    c.origin = origin;
    seen_.emplace(todo[k], std::move(c));
    ++report_.evaluated;
  }
  return Status::ok();
}

Tuner::Settings Tuner::best_of(const std::vector<Settings>& batch) const {
  const Candidate* best = nullptr;
  for (const auto& s : batch) {
    const Candidate& c = seen_.at(s);
    if (best == nullptr || candidate_before(objective_, c, *best)) best = &c;
  }
  return best->settings;
}

// Quotas proportional to each queue's GPU-hours of demand (a pod without a run time runs to the
// last arrival).
Tuner::Settings Tuner::proportional_to_demand() const {
  std::vector<double> demand(leaves_.size(), 0);
  std::int64_t last = 0;
  for (const auto& p : workload_.pods) last = std::max(last, p.arrival);
  for (const auto& p : workload_.pods) {
    auto q = tree_->find(p.pod.queue);
    const auto leaf = q ? std::find(leaves_.begin(), leaves_.end(), *q) : leaves_.end();
    if (leaf == leaves_.end()) continue;  // replay() names the pod
    const double run = static_cast<double>(p.run_seconds.value_or(std::max<std::int64_t>(1, last - p.arrival)));
    demand[static_cast<std::size_t>(leaf - leaves_.begin())] +=
        static_cast<double>(queues::charge_pending(p.pod, *empty_)[Resource::kGpu]) * run;
  }
  const double demand_total = std::accumulate(demand.begin(), demand.end(), 0.0);
  Settings proportional = input_;
  for (std::size_t l = 0; l < leaves_.size(); ++l) {
    const double share = demand_total > 0 ? demand[l] / demand_total : 1.0 / static_cast<double>(leaves_.size());
    proportional[l].gpu_quota = std::min(ceiling_[l], static_cast<std::int64_t>(share * static_cast<double>(report_.cluster_gpus)) * kGpu);
  }
  return proportional;
}

// Queue l at its ceiling, the others scaled down (whole GPUs) so the sum stays within the cluster.
Tuner::Settings Tuner::with_all(Settings s, std::size_t l) const {
  s[l].gpu_quota = ceiling_[l];
  const std::int64_t others = quota_sum(s) - ceiling_[l];
  const std::int64_t room = std::max<std::int64_t>(0, cluster_ - ceiling_[l]);
  if (options_.oversubscribe || others <= room) return s;
  for (std::size_t k = 0; k < s.size(); ++k) {
    if (k == l) continue;
    const double scaled = static_cast<double>(quota_value(s[k].gpu_quota, cluster_)) * static_cast<double>(room) / static_cast<double>(others);
    s[k].gpu_quota = static_cast<std::int64_t>(scaled / kGpu) * kGpu;
  }
  return s;
}

// `current` and its neighbours that could be recommended: each quota ± step, `step` GPUs moved
// from another queue, each weight × and ÷ factor; the first round also each queue with none and
// with all it may have.
std::vector<Tuner::Settings> Tuner::neighbours(const Settings& current) const {
  std::vector<Settings> batch{current};
  auto offer = [&](Settings s) {
    if (s != current && not_allowed(s).empty()) batch.push_back(std::move(s));
  };
  for (std::size_t l = 0; l < leaves_.size(); ++l) {
    const std::int64_t quota = quota_value(current[l].gpu_quota, cluster_);
    for (std::int64_t q : {quota - step_, quota + step_}) {
      auto s = current;
      s[l].gpu_quota = std::clamp<std::int64_t>(q, 0, ceiling_[l]);
      offer(std::move(s));
    }
    // Moves of `step` GPUs from another queue to this one: the way to raise a quota when the
    // quotas already add up to the cluster.
    for (std::size_t from = 0; from < leaves_.size(); ++from) {
      const std::int64_t have = quota_value(current[from].gpu_quota, cluster_);
      if (from == l || have == 0) continue;
      auto s = current;
      const std::int64_t moved = std::min({step_, have, ceiling_[l] - quota});
      if (moved <= 0) continue;
      s[l].gpu_quota = quota + moved;
      s[from].gpu_quota = have - moved;
      offer(std::move(s));
    }
    // An objective can be flat near the start (pods that need 4 GPUs wait alike at quotas 1, 2
    // and 3): the extremes get the search off it.
    if (report_.rounds == 0) {
      auto none = current;
      none[l].gpu_quota = 0;
      offer(std::move(none));
      offer(with_all(current, l));
    }
    const std::int64_t w = current[l].gpu_weight;
    const std::vector<std::int64_t> weights =
        w == 0 ? std::vector<std::int64_t>{kGpu}
               : std::vector<std::int64_t>{tenths(static_cast<double>(w) * factor_), tenths(static_cast<double>(w) / factor_)};
    for (std::int64_t v : weights) {
      auto s = current;
      s[l].gpu_weight = std::clamp<std::int64_t>(v, 0, kMaxWeight);
      offer(std::move(s));
    }
  }
  return batch;
}

bool Tuner::narrow() {
  if (step_ > kGpu) {
    step_ = std::max(kGpu, whole_gpus(static_cast<double>(step_) / 2.0));
  } else if (factor_ > 1.5) {
    factor_ = 1.5;
  } else {
    return false;
  }
  return true;
}

bool Tuner::out_of_rounds() {
  if (options_.max_rounds > 0 && report_.rounds >= options_.max_rounds) return true;
  if (options_.budget_seconds > 0 && elapsed() >= options_.budget_seconds) {
    report_.budget_ran_out = true;
    return true;
  }
  return false;
}

TuneReport Tuner::finish() {
  std::vector<const Candidate*> all;
  for (const auto& [s, c] : seen_) all.push_back(&c);
  std::sort(all.begin(), all.end(), [&](const Candidate* a, const Candidate* b) { return candidate_before(objective_, *a, *b); });
  for (const Candidate* c : all) report_.candidates.push_back(*c);
  report_.recommended = apply_settings(specs_, objective_.queues, report_.candidates.front().settings, nodes_, options_.scale_cpu_memory);
  report_.seconds = elapsed();
  return std::move(report_);
}

Result<TuneReport> Tuner::run() {
  if (auto st = prepare(); !st.is_ok()) return st;
  const Settings proportional = proportional_to_demand();
  if (auto st = evaluate({input_}, "input"); !st.is_ok()) return st;
  if (auto st = evaluate({proportional}, "demand"); !st.is_ok()) return st;
  report_.input = seen_.at(input_);
  Settings current = best_of({input_, proportional});
  while (!out_of_rounds()) {
    const std::vector<Settings> batch = neighbours(current);
    ++report_.rounds;
    if (auto st = evaluate(batch, fmt::format("round {}", report_.rounds)); !st.is_ok()) return st;
    const Settings best = best_of(batch);
    if (options_.on_round) options_.on_round(report_.rounds, report_.evaluated, seen_.at(best), elapsed());
    if (best != current) {
      current = best;
    } else if (!narrow()) {
      report_.converged = true;
      break;
    }
  }
  return finish();
}

}  // namespace

Result<TuneReport> tune(const std::vector<NodeSpec>& nodes, const std::vector<queues::QueueSpec>& specs, const TimedWorkload& workload,
                        const Objective& objective, const TuneOptions& options) {
  return Tuner(nodes, specs, workload, objective, options).run();
}

}  // namespace fracpack::quota
