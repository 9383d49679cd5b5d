// What a job is charged against its queue (docs/queues.md rule 5), in queue units (queue.hpp).
//
//   whole GPUs      1 GPU each (1000 milli-GPU); device-plugin slots likewise, per slot
//   fractions       num-devices × ⌈request ÷ GPU memory × 100⌉ ÷ 100 GPU — hundredths of the GPU
//                   each device lands on (a gpu-fraction: its portion, rounded up to hundredths)
//   cpu, memory     the pod's effective requests
// Before placement a memory-sized fraction is charged against the smallest GPU among the nodes
// that could ever take it, never a placeholder (KAI issue 1847: a 100 MiB placeholder overcharged
// pending pods a hundredfold), and 2 devices × 60 % is 1.2 GPUs (KAI issue 1369).
#pragma once

#include <optional>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/queues/queue.hpp"
#include "fracpack/core/request.hpp"

namespace fracpack::queues {

/// The charge of `pod` when each of its fractional devices has `gpu_memory` (labelled MiB).
/// Without a known memory a memory-sized fraction is charged a whole GPU per device.
Amounts charge(const PodRequest& pod, std::optional<MiB> gpu_memory);

/// The charge of a placed pod: the GPUs it holds, each by its own memory.
Amounts charge_placed(const PodRequest& pod, const ClusterState& state, const Allocation& allocation);

/// The charge of a pending pod: the smallest GPU among the nodes that could ever take it.
Amounts charge_pending(const PodRequest& pod, const ClusterState& state);

/// The charge of an allocation, from what it holds (for reclaim: what a victim gives back).
Amounts charge_of_allocation(const ClusterState& state, const Allocation& allocation);

/// What queues divide: the GPUs (device-plugin slots count one GPU each, as they are charged),
/// CPU and memory of every node that is ready and schedulable, less what `foreign` pods hold
/// (KAI subtracts pods of other schedulers from the total).
Amounts cluster_total(const ClusterState& state, const Amounts& foreign = {});

}  // namespace fracpack::queues
