// Tentative changes to the ledger (ClusterState) during a search, undone in reverse order: the
// ledger-level half of KAI's Statement, for searches that try placements and evictions and keep
// none of them (consolidation plans, victim searches). What a search decides is then applied to
// the scheduling state through a Statement (fracpack/queues/statement.hpp). Internal to src/queues.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "fracpack/binpack/cluster_state.hpp"

namespace fracpack::queues {

class LedgerJournal {
 public:
  explicit LedgerJournal(ClusterState& state) : state_(state) {}
  ~LedgerJournal() { rollback(0); }
  LedgerJournal(const LedgerJournal&) = delete;
  LedgerJournal& operator=(const LedgerJournal&) = delete;

  /// Takes `key`'s allocation off the ledger (nothing when it holds none).
  void take(const std::string& key) {
    if (auto a = state_.take(key)) entries_.push_back({Kind::kTaken, std::move(*a), {}});
  }
  /// Puts back an allocation taken outside this journal; undone by taking it again.
  void restore(const Allocation& a) {
    state_.restore(a);
    entries_.push_back({Kind::kRestored, a, {}});
  }
  [[nodiscard]] bool reserve(const PodRequest& pod, std::size_t node, const GpuChoice& choice) {
    if (!state_.reserve(pod, node, choice).is_ok()) return false;
    entries_.push_back({Kind::kReserved, std::nullopt, pod.key()});
    return true;
  }
  /// Undoes the take() of `key` alone, when only takes followed it: the pod is back where it was.
  /// False (nothing changed) when no take of `key` is held.
  [[nodiscard]] bool put_back(const std::string& key) {
    auto it = std::find_if(entries_.rbegin(), entries_.rend(),
                           [&](const Entry& e) { return e.kind == Kind::kTaken && e.allocation->pod == key; });
    if (it == entries_.rend()) return false;
    state_.restore(std::move(*it->allocation));
    entries_.erase(std::next(it).base());
    return true;
  }
  [[nodiscard]] std::size_t mark() const { return entries_.size(); }
  void rollback(std::size_t mark) {
    while (entries_.size() > mark) {
      Entry e = std::move(entries_.back());
      entries_.pop_back();
      switch (e.kind) {
        case Kind::kTaken:
          state_.restore(std::move(*e.allocation));
          break;
        case Kind::kRestored:
          (void)state_.take(e.allocation->pod);
          break;
        case Kind::kReserved:
          state_.release(e.reserved);
          break;
      }
    }
  }

 private:
  enum class Kind : std::uint8_t { kTaken, kRestored, kReserved };
  struct Entry {
    Kind kind;
    std::optional<Allocation> allocation;  ///< kTaken: to restore; kRestored: to take again
    std::string reserved;                  ///< kReserved: to release
  };
  ClusterState& state_;
  std::vector<Entry> entries_;
};

}  // namespace fracpack::queues
