// Between the gRPC messages (proto/fracpack/v1) and the extender core's types.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fracpack/server/extender.hpp"
#include "fracpack/v1/cluster.pb.h"
#include "fracpack/v1/extender.pb.h"
#include "plugin_api/json_object.hpp"

namespace fracpack::api {

void to_proto(const FilterAnswer& answer, v1::ExtenderFilterResult* out);
void to_proto(const BindAnswer& answer, v1::Allocation* out);
void to_proto(const Explanation& explanation, v1::ExplainResponse* out);
void to_proto(const LedgerSnapshot& snapshot, v1::SnapshotResponse* out);

v1::FitCode fit_code(Code code);
v1::GpuHold gpu_hold(GpuHold hold);
v1::ComputeMode compute_mode(ComputeMode mode);
v1::GpuState gpu_state(GpuState state);

}  // namespace fracpack::api
