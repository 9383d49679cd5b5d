#include "fracpack/sim/quota/objective.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace fracpack::quota {
namespace {

struct Token {
  enum Kind { kWord, kNumber, kLessEqual, kLess, kGreaterEqual, kGreater, kPercent, kSeparator } kind = kWord;
  std::string text;
  double number = 0;
};

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.' || c == '\'';
}

/// "unexpected '=' at character 12 …": the whole UTF-8 character, counted in characters.
Status unexpected(std::string_view text, std::size_t at) {
  std::size_t length = 1;
  const auto lead = static_cast<unsigned char>(text[at]);
  if (lead >= 0xF0) length = 4;
  else if (lead >= 0xE0) length = 3;
  else if (lead >= 0xC0) length = 2;
  std::size_t chars = 1;
  for (std::size_t k = 0; k < at; ++k) chars += (static_cast<unsigned char>(text[k]) & 0xC0) != 0x80 ? 1 : 0;
  return invalid_argument("--objective: unexpected '{}' at character {}; comparisons are <=, <, >=, >, ≤, ≥, \"at most\", "
                          "\"at least\" and \"within\"",
                          text.substr(at, std::min(length, text.size() - at)), chars);
}

/// Splits the objective into tokens; `queues` are matched whole first, so "team-1" stays a word.
Result<std::vector<Token>> tokenize(std::string_view text, const std::set<std::string>& queues) {
  std::vector<Token> out;
  std::size_t i = 0;
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  while (i < text.size()) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      ++i;
      continue;
    }
    if (text.compare(i, 3, "\u2264") == 0 || text.compare(i, 2, "<=") == 0) {
      out.push_back({Token::kLessEqual, "<="});
      i += text.compare(i, 2, "<=") == 0 ? 2 : 3;
      continue;
    }
    if (text.compare(i, 3, "\u2265") == 0 || text.compare(i, 2, ">=") == 0) {
      out.push_back({Token::kGreaterEqual, ">="});
      i += text.compare(i, 2, ">=") == 0 ? 2 : 3;
      continue;
    }
    if (c == '<' || c == '>') {
      out.push_back({c == '<' ? Token::kLess : Token::kGreater, std::string(1, c)});
      ++i;
      continue;
    }
    if (c == '%') {
      out.push_back({Token::kPercent, "%"});
      ++i;
      continue;
    }
    if (c == ',' || c == ';') {
      out.push_back({Token::kSeparator, std::string(1, c)});
      ++i;
      continue;
    }
    if (!word_char(c)) return unexpected(text, i);
    std::size_t end = i;
    while (end < text.size() && word_char(text[end])) ++end;
    std::string run(text.substr(i, end - i));
    bool full_stop = false;  // "… 60s. Then …": a sentence ends a clause
    while (!run.empty() && (run.back() == '.' || run.back() == '\'')) {
      full_stop = full_stop || run.back() == '.';
      run.pop_back();
    }
    if (run.empty() || queues.count(run) != 0) {  // queue names are case-sensitive DNS labels
      if (!run.empty()) out.push_back({Token::kWord, run});
      if (full_stop) out.push_back({Token::kSeparator, "."});
      i = end;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-') {  // 60s → 60, s; -5; 1e3
      auto digit = [&](std::size_t n) { return n < text.size() && std::isdigit(static_cast<unsigned char>(text[n])) != 0; };
      std::size_t n = c == '-' ? i + 1 : i;
      while (digit(n) || (text[n] == '.' && digit(n + 1))) ++n;
      if (n < text.size() && (text[n] == 'e' || text[n] == 'E') &&
          (digit(n + 1) || ((text[n + 1] == '+' || text[n + 1] == '-') && digit(n + 2)))) {
        n += 2;
        while (digit(n)) ++n;
      }
      if (n == i) {  // a lone '.' before a word
        ++i;
        continue;
      }
      const std::string digits(text.substr(i, n - i));
      char* stop = nullptr;
      const double v = std::strtod(digits.c_str(), &stop);
      if (stop != digits.c_str() + digits.size() || !std::isfinite(v)) {
        return invalid_argument("--objective: {} is not a finite number", digits.size() > 40 ? digits.substr(0, 40) + "…" : digits);
      }
      if (v < 0) return invalid_argument("--objective: {}: bounds are ≥ 0 (every metric is)", digits);
      out.push_back({Token::kNumber, digits, v});
      i = n;
      continue;
    }
    out.push_back({Token::kWord, lower(run)});
    if (full_stop) out.push_back({Token::kSeparator, "."});
    i = end;
  }
  return out;
}

std::optional<double> time_unit(const std::string& w) {
  static const std::map<std::string, double> units{
      {"s", 1}, {"sec", 1}, {"secs", 1}, {"second", 1}, {"seconds", 1},
      {"m", 60}, {"min", 60}, {"mins", 60}, {"minute", 60}, {"minutes", 60},
      {"h", 3600}, {"hr", 3600}, {"hrs", 3600}, {"hour", 3600}, {"hours", 3600},
      {"d", 86400}, {"day", 86400}, {"days", 86400}};
  auto it = units.find(w);
  return it == units.end() ? std::nullopt : std::optional<double>(it->second);
}

bool is_pending(Metric m) {
  return m == Metric::kPendingP50 || m == Metric::kPendingP95 || m == Metric::kPendingP99 || m == Metric::kPendingMax;
}

/// Words the grammar gives a meaning to (besides fillers and units).
bool is_keyword(const std::string& w) {
  static const std::set<std::string> words{"maximise", "maximize", "minimise", "minimize", "p50", "p95", "p99", "max", "maximum",
                                           "median", "pending", "wait", "waiting", "never", "never-started", "preemptions",
                                           "preemption", "preempted", "gpu-hours", "over-quota", "share", "shares", "error",
                                           "within", "allocation", "allocated", "utilisation", "utilization", "at", "then"};
  return words.count(w) != 0;
}

constexpr std::string_view kMetricsHelp =
    "metrics: p50|p95|p99|max pending [of QUEUE], never started [of QUEUE], preemptions [of QUEUE], "
    "gpu-hours of QUEUE, over-quota hours [of QUEUE], share error [of QUEUE], allocation; "
    "or \"share within N% of weight\"";

/// One clause: a constraint or the goal.
struct Clause {
  std::optional<Constraint> constraint;
  std::optional<Goal> goal;
};

/// Reads one clause's tokens into what they name (metric, queue, comparison, bound, goal), then
/// checks that they make one constraint or one goal.
class ClauseParser {
 public:
  ClauseParser(const std::vector<Token>& tokens, const std::string& text, const std::set<std::string>& queues)
      : tokens_(tokens), text_(text), queues_(queues) {}

  Result<Clause> parse();

 private:
  /// The whole message for a clause that breaks the grammar: `why`, the clause, the leaf queues
  /// and the metrics there are. Every step returns plain reasons; parse() wraps the first.
  Status fail(const std::string& why) const {
    const std::string shown = text_.size() > 200 ? text_.substr(0, 200) + "…" : text_;
    return invalid_argument("--objective clause \"{}\": {} (leaf queues: {}; {})", shown, why, fmt::join(queues_, ", "), kMetricsHelp);
  }
  static Status reason(const std::string& why) { return invalid_argument("{}", why); }
  Status set_metric(Metric m) {
    if (metric_ && *metric_ != m) return invalid_argument("two metrics");
    metric_ = m;
    return {};
  }
  Status set_op(bool most) {
    if (at_most_) return invalid_argument("two comparisons");
    at_most_ = most;
    return {};
  }
  Status token(std::size_t& k);
  Status word(std::size_t& k);
  Status metric_word(const std::string& w, const std::string& next, std::size_t& k, bool& known);
  Status resolve_metric();
  Result<Clause> build() const;

  const std::vector<Token>& tokens_;
  const std::string& text_;
  const std::set<std::string>& queues_;
  std::optional<bool> maximise_;
  std::optional<std::string> quantile_;
  bool pending_ = false, share_ = false, within_ = false, error_word_ = false, percent_ = false;
  std::optional<Metric> metric_;
  std::optional<std::string> queue_;
  std::optional<bool> at_most_;
  bool strict_ = false;  // < or >
  std::optional<double> number_;
  double unit_ = 1;
  bool unit_given_ = false;
};

Status ClauseParser::token(std::size_t& k) {
  const Token& t = tokens_[k];
  switch (t.kind) {
    case Token::kLessEqual: return set_op(true);
    case Token::kLess: strict_ = true; return set_op(true);
    case Token::kGreaterEqual: return set_op(false);
    case Token::kGreater: strict_ = true; return set_op(false);
    case Token::kPercent: percent_ = true; return {};
    case Token::kNumber:
      if (number_) return reason(fmt::format("two numbers ({} and {})", *number_, t.text));
      number_ = t.number;
      return {};
    case Token::kSeparator: return {};
    case Token::kWord: return word(k);
  }
  return {};
}

Status ClauseParser::word(std::size_t& k) {
  static const std::set<std::string> fillers{"then", "of", "the", "its", "their", "every", "each", "queue's", "queues'",
                                             "queue", "queues", "time", "times", "for", "in", "is", "be", "should", "must",
                                             "keep", "to", "a", "all", "weight", "weights", "cluster", "gpu", "whole"};
  const std::string& w = tokens_[k].text;
  const std::string next = k + 1 < tokens_.size() && tokens_[k + 1].kind == Token::kWord ? tokens_[k + 1].text : "";
  const bool after_number = k > 0 && tokens_[k - 1].kind == Token::kNumber;
  const bool after_of = k > 0 && tokens_[k - 1].kind == Token::kWord && tokens_[k - 1].text == "of";
  // A word that is both a queue and a unit or metric word: a queue after "of", a unit right
  // after a number, else the metric word ("max pending <= 1 d" with a queue named d).
  const bool keyword = is_keyword(w) && !after_of;
  if (auto u = time_unit(w); u && after_number) {
    unit_ = *u;
    unit_given_ = true;
    return {};
  }
  if (queues_.count(w) != 0 && !keyword) {
    if (queue_ && *queue_ != w) return reason(fmt::format("two queues ({} and {}); write one clause per queue", *queue_, w));
    queue_ = w;
    return {};
  }
  bool known = true;
  Status st = metric_word(w, next, k, known);
  if (!known && fillers.count(w) == 0) return reason(fmt::format("\"{}\" is neither a queue nor a metric word", w));
  return st;
}

// The grammar's words; `known` false for a word that is none of them. Two-word phrases ("never
// started", "over-quota hours", "at most") take the next word too.
Status ClauseParser::metric_word(const std::string& w, const std::string& next, std::size_t& k, bool& known) {
  if (w == "maximise" || w == "maximize" || w == "minimise" || w == "minimize") {
    if (maximise_) return reason("two goals in one clause");
    maximise_ = w == "maximise" || w == "maximize";
  } else if (w == "p50" || w == "p95" || w == "p99" || w == "max" || w == "maximum" || w == "median") {
    if (quantile_) return reason(fmt::format("two percentiles ({} and {})", *quantile_, w));
    quantile_ = w;
  } else if (w == "pending" || w == "wait" || w == "waiting") {
    pending_ = true;
  } else if (w == "never" && (next == "started" || next == "start" || next == "starts")) {
    ++k;
    return set_metric(Metric::kNeverStarted);
  } else if (w == "never-started") {
    return set_metric(Metric::kNeverStarted);
  } else if (w == "preemptions" || w == "preemption" || w == "preempted") {
    return set_metric(Metric::kPreemptions);
  } else if (w == "gpu-hours") {
    if (!share_) return set_metric(Metric::kGpuHours);  // "share of gpu-hours": part of the share
  } else if (w == "over-quota" && (next == "hours" || next == "hour")) {
    ++k;
    return set_metric(Metric::kOverQuotaHours);
  } else if (w == "share" || w == "shares") {
    share_ = true;
    if (metric_ == Metric::kGpuHours) metric_.reset();  // "gpu-hours share"
  } else if (w == "error") {
    error_word_ = true;
  } else if (w == "within") {
    within_ = true;
  } else if (w == "allocation" || w == "allocated" || w == "utilisation" || w == "utilization") {
    return set_metric(Metric::kAllocation);
  } else if (w == "at" && (next == "most" || next == "least")) {
    ++k;
    return set_op(next == "most");
  } else {
    known = false;
  }
  return {};
}

// The metric the words add up to: a share (error), a pending-time percentile, or the one named.
Status ClauseParser::resolve_metric() {
  if (share_) {
    if (metric_) return reason("share and another metric in one clause");
    metric_ = Metric::kShareError;
    if (within_) {  // "share within N % of weight" = share error ≤ N
      if (at_most_) return reason("\"within\" already bounds the share; drop the comparison");
      at_most_ = true;
    }
  } else if (within_ || error_word_) {
    return reason("\"within\"/\"error\" apply to a share: \"share within 10% of weight\"");
  }
  if (pending_) {
    if (metric_) return reason("pending time and another metric in one clause");
    if (!quantile_) return reason("say which pending time: p50, p95, p99 or max pending");
    const std::string& q = *quantile_;
    metric_ = q == "p50" || q == "median" ? Metric::kPendingP50
              : q == "p95"                ? Metric::kPendingP95
              : q == "p99"                ? Metric::kPendingP99
                                          : Metric::kPendingMax;
  } else if (quantile_) {
    return reason(fmt::format("\"{}\" applies to pending time (\"{} pending of QUEUE\")", *quantile_, *quantile_));
  }
  if (!metric_) return reason("no metric");
  if (unit_given_ && !is_pending(*metric_)) return reason("a time unit applies only to pending times");
  if (percent_ && *metric_ != Metric::kAllocation && *metric_ != Metric::kShareError) return reason("% applies only to allocation and share");
  if (*metric_ == Metric::kAllocation && queue_) return reason("allocation is the cluster's; it has no queue");
  return {};
}

Result<Clause> ClauseParser::build() const {
  Clause out;
  const MetricRef ref{*metric_, queue_.value_or("")};
  if (maximise_) {
    if (at_most_ || number_) return reason("a goal (maximise/minimise) takes no bound; write the bound as its own clause");
    out.goal = Goal{ref, *maximise_, text_};
    return out;
  }
  if (!at_most_) return reason("no comparison: write <=, >=, \"at most\" or \"within\"");
  if (!number_) return reason("no bound: a comparison needs a number");
  out.constraint = Constraint{ref, *at_most_, *number_ * unit_, text_, strict_};
  return out;
}

Result<Clause> ClauseParser::parse() {
  for (std::size_t k = 0; k < tokens_.size(); ++k) {
    if (Status st = token(k); !st.is_ok()) return fail(st.message());
  }
  if (Status st = resolve_metric(); !st.is_ok()) return fail(st.message());
  auto clause = build();
  if (!clause) return fail(clause.status().message());
  return clause;
}

Result<Clause> parse_clause(const std::vector<Token>& tokens, const std::string& text, const std::set<std::string>& queues) {
  return ClauseParser(tokens, text, queues).parse();
}

/// Worst of `values`: the largest when larger is worse.
double worst(const std::vector<double>& values, bool larger_is_worse) {
  if (values.empty()) return 0;
  return larger_is_worse ? *std::max_element(values.begin(), values.end()) : *std::min_element(values.begin(), values.end());
}

double queue_value(const Objective& objective, Metric metric, std::size_t q, const QueueMetrics& m) {
  auto seconds = [](const std::optional<std::int64_t>& v) {
    if (!v) return 0.0;
    return *v == kWaitsForever ? std::numeric_limits<double>::infinity() : static_cast<double>(*v);
  };
  switch (metric) {
    case Metric::kPendingP50: return seconds(m.pending_p50);
    case Metric::kPendingP95: return seconds(m.pending_p95);
    case Metric::kPendingP99: return seconds(m.pending_p99);
    case Metric::kPendingMax: return seconds(m.pending_max);
    case Metric::kNeverStarted: return static_cast<double>(m.never_started);
    case Metric::kPreemptions: return static_cast<double>(m.preemptions);
    case Metric::kGpuHours: return m.gpu_hours;
    case Metric::kOverQuotaHours: return m.over_quota_hours;
    case Metric::kShareError: {
      const double target = q < objective.target_share.size() ? objective.target_share[q] : 0;
      const double share = m.share_pct / 100.0;
      return target > 0 ? 100.0 * std::abs(share - target) / target : m.share_pct;
    }
    case Metric::kAllocation: return 0;
  }
  return 0;
}

}  // namespace

Result<Objective> parse_objective(std::string_view text, const std::vector<std::string>& queues, const std::vector<double>& weights) {
  Objective out;
  out.text = std::string(text);
  out.queues = queues;
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  for (std::size_t q = 0; q < queues.size(); ++q) {
    out.target_share.push_back(sum > 0 && q < weights.size() ? weights[q] / sum : 1.0 / static_cast<double>(queues.size()));
  }
  const std::set<std::string> names(queues.begin(), queues.end());
  auto tokens = tokenize(text, names);
  if (!tokens) return tokens.status();
  // Clauses: split at , ; and the word "and".
  std::vector<std::vector<Token>> clauses(1);
  for (const auto& t : *tokens) {
    // "and" and "then" start a new clause too ("… <= 60s then maximise allocation"), unless a
    // queue has that name and "of" comes before it.
    const bool joiner = t.kind == Token::kWord && (t.text == "and" || t.text == "then") &&
                        !(names.count(t.text) != 0 && !clauses.back().empty() && clauses.back().back().text == "of");
    if (t.kind == Token::kSeparator || joiner) {
      clauses.emplace_back();
    } else {
      clauses.back().push_back(t);
    }
  }
  for (const auto& c : clauses) {
    if (c.empty()) continue;
    std::string clause_text;
    for (const auto& t : c) clause_text += (clause_text.empty() ? "" : " ") + t.text;
    auto parsed = parse_clause(c, clause_text, names);
    if (!parsed) return parsed.status();
    if (parsed->goal) {
      if (out.goal) return invalid_argument("--objective: two goals (\"{}\" and \"{}\"); keep one", out.goal->text, parsed->goal->text);
      out.goal = std::move(parsed->goal);
    } else {
      out.constraints.push_back(std::move(*parsed->constraint));
    }
  }
  if (out.constraints.empty() && !out.goal) return invalid_argument("--objective is empty ({})", kMetricsHelp);
  return out;
}

double value_of(const Objective& objective, const MetricRef& ref, const ReplayMetrics& m, bool larger_is_worse) {
  if (ref.metric == Metric::kAllocation) return m.allocation_pct;
  std::vector<double> values;
  for (std::size_t q = 0; q < m.queues.size(); ++q) {
    if (!ref.queue.empty() && m.queues[q].queue != ref.queue) continue;
    values.push_back(queue_value(objective, ref.metric, q, m.queues[q]));
  }
  return worst(values, larger_is_worse);
}

std::string metric_label(const MetricRef& ref) {
  std::string name;
  switch (ref.metric) {
    case Metric::kPendingP50: name = "p50 pending (s)"; break;
    case Metric::kPendingP95: name = "p95 pending (s)"; break;
    case Metric::kPendingP99: name = "p99 pending (s)"; break;
    case Metric::kPendingMax: name = "max pending (s)"; break;
    case Metric::kNeverStarted: name = "never started"; break;
    case Metric::kPreemptions: name = "preemptions"; break;
    case Metric::kGpuHours: name = "GPU-hours"; break;
    case Metric::kOverQuotaHours: name = "over-quota hours"; break;
    case Metric::kShareError: name = "share error (%)"; break;
    case Metric::kAllocation: return "allocation (%)";
  }
  return ref.queue.empty() ? name + ", worst queue" : fmt::format("{} of {}", name, ref.queue);
}

Score score(const Objective& objective, const ReplayMetrics& m) {
  Score s;
  for (const auto& c : objective.constraints) {
    const double v = value_of(objective, c.ref, m, c.at_most);
    double excess = c.at_most ? v - c.bound : c.bound - v;
    if (c.strict && excess == 0) excess = 1e-6 * std::max(std::abs(c.bound), 1.0);  // "< 100" is not met by 100
    if (excess > 0) s.violation += excess / std::max(std::abs(c.bound), 1.0);
  }
  if (objective.goal) s.goal = value_of(objective, objective.goal->ref, m, !objective.goal->maximise);
  return s;
}

namespace {
/// a and b equal up to rounding (infinities equal each other).
bool same(double a, double b) {
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b));
}
}  // namespace

bool better(const Objective& objective, const Score& a, const Score& b) {
  if (!same(a.violation, b.violation)) return a.violation < b.violation;
  if (!objective.goal || same(a.goal, b.goal)) return false;
  return objective.goal->maximise ? a.goal > b.goal : a.goal < b.goal;
}

std::vector<std::string> violations(const Objective& objective, const ReplayMetrics& m) {
  std::vector<std::string> out;
  for (const auto& c : objective.constraints) {
    const double v = value_of(objective, c.ref, m, c.at_most);
    const bool met = c.at_most ? (c.strict ? v < c.bound : v <= c.bound) : (c.strict ? v > c.bound : v >= c.bound);
    if (!met) {
      const std::string value = std::isinf(v) ? "never (pods that a node could hold never start)" : fmt::format("{:.4g}", v);
      const char* op = c.at_most ? (c.strict ? "≥" : ">") : (c.strict ? "≤" : "<");
      out.push_back(fmt::format("{}: {} {} {} {:.4g}", c.text, metric_label(c.ref), value, op, c.bound));
    }
  }
  return out;
}

}  // namespace fracpack::quota
