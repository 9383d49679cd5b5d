# Pods as `kubectl get pods -A -o json` prints them (finished ones too) -> a quota replay workload:
# KAI pods that started, arriving at creationTimestamp, each running as long as it ran
# (replay.fracpack.io/run-seconds; still running: to the end of the replay), unbound. docs/quota-tuning.md.
.items |= map(
  select(.spec.schedulerName == "kai-scheduler" and .status.startTime != null)
  | ([.status.containerStatuses[]?.state.terminated.finishedAt // empty] | max) as $finished
  | (if $finished then .metadata.annotations["replay.fracpack.io/run-seconds"] =
        ((($finished | fromdateiso8601) - (.status.startTime | fromdateiso8601)) | tostring)
     else . end)
  | del(.spec.nodeName, .status))
