// How well any placement could pack a set of single-GPU shares: the cutting-stock LP's bound
// (Gilmore & Gomory 1961; src/binpack/share_prices.hpp has the LP). bench density reports it as
// the allocation ceiling of the pods a policy placed.
#pragma once

#include <cstdint>
#include <map>

namespace fracpack::binpack {

/// A lower bound, in GPUs, on the capacity left free on the GPUs that hold `shares` (how many
/// single-GPU shares of each size, in milli-GPU, 0 < size < 1000), however they are packed: the LP's
/// GPU count (Σ count · price, weak duality, so valid even if the LP stopped early) minus their
/// demand. Every other GPU can at best be full, so 1 − bound / GPUs caps the allocation of any
/// placement of these shares. 0 for no shares. More than 64 distinct sizes are rounded down to
/// steps of 10 milli-GPU for the LP (a weaker bound, still valid).
double packing_waste_bound(const std::map<std::int64_t, std::int64_t>& shares);

/// A price y(s) ≥ 0, in GPUs, for each size in `shares` (milli-GPU, 0 < size < 1000; `count` copies
/// of each weight the LP), such that the shares any one GPU can hold together are worth at most 1:
/// the cutting-stock LP's dual, feasible however the LP ended. Σ y(s) over any set of these shares
/// is then a lower bound on the GPUs that hold them, whatever the packing (capacity_ceiling.hpp
/// uses it). Sizes outside (0, 1000) and counts ≤ 0 get no price. More than 64 distinct sizes are
/// priced by their size rounded down to 10 milli-GPU (still feasible: rounding down keeps every
/// GPU's shares within one GPU).
std::map<std::int64_t, double> share_prices(const std::map<std::int64_t, std::int64_t>& shares);

}  // namespace fracpack::binpack
