// Kubernetes objects sent to the extender (Apply, the state file, the watch) staged as one change
// of the scheduling state and of the store, decoded and checked object by object before anything
// is applied. Internal to src/plugin_api/.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/core/config.hpp"
#include "fracpack/queues/scheduling_state.hpp"
#include "plugin_api/store.hpp"

namespace fracpack::api {

struct StagedObjects {
  ObjectChange change;                              ///< for SchedulingState::validate and apply
  StoreChange store;                                ///< the same objects for the state file (bodies point into the input)
  std::map<std::string, nlohmann::json> node_objects;  ///< v1 Nodes by name, as received
};

/// Decodes Node, Queue, PodGroup and PriorityClass objects into `staged`. The first object that
/// does not decode is kInvalidArgument naming its index ("objects[3]: ..."), and `staged` is then
/// as it was; objects of other kinds are skipped with a warning.
Status stage_objects(const std::vector<nlohmann::json>& objects, const DecodeConfig& decode, StagedObjects& staged,
                     std::vector<std::string>* warnings);

}  // namespace fracpack::api
