// `fracpack serve` and `fracpack replay`.
#pragma once

#include <optional>
#include <string>

#include "fracpack/extender.hpp"

namespace fracpack {

struct ServeOptions {
  ExtenderOptions core;
  std::optional<std::string> http;          ///< "host:port" of the kube-scheduler JSON front
  std::optional<std::string> grpc;          ///< "host:port" of the gRPC front
  std::optional<std::string> cluster_file;  ///< Nodes, Queues, PodGroups, PriorityClasses to apply
  std::size_t max_body = 8u << 20;          ///< bytes per HTTP request
};

/// Opens the state, applies the cluster file (its running pods only when the state holds no
/// bindings yet: on a restart the state, not the file, knows what was acknowledged), starts the
/// fronts and serves until SIGINT or SIGTERM. Returns the process exit status.
int serve(const ServeOptions& options);

struct ReplayOptions {
  std::string server;      ///< "http://host:port"
  std::string pods_file;   ///< Pods to drive through Filter → Prioritize → Bind, in file order
  bool node_names = true;  ///< nodeCacheCapable (NodeNames) or not
  bool progress = true;    ///< a progress bar on stderr
};

/// Drives a running server like kube-scheduler does, one pod at a time, prints each placement and
/// the throughput. Returns the process exit status (0 even when pods do not fit).
int replay(const ReplayOptions& options);

}  // namespace fracpack
