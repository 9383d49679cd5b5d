package main

// sourceFiles lists the KAI action test files whose scenario tables are
// converted, relative to the KAI checkout root. This is the one place to edit
// when more KAI test tables should be replayed by the C++ conformance test.
var sourceFiles = []string{
	"pkg/scheduler/actions/allocate/allocate_test.go",
	"pkg/scheduler/actions/allocate/allocateFractionalGpu_test.go",
	"pkg/scheduler/actions/allocate/allocateGpuMemory_test.go",
	"pkg/scheduler/actions/allocate/allocateGang_test.go",
	"pkg/scheduler/actions/allocate/allocate_subgroups_test.go",
	"pkg/scheduler/actions/allocate/allocateTopology_test.go",
	"pkg/scheduler/actions/allocate/allocateElastic_test.go",

	"pkg/scheduler/actions/reclaim/reclaim_test.go",
	"pkg/scheduler/actions/reclaim/reclaimDepartments_test.go",
	"pkg/scheduler/actions/reclaim/reclaimGang_test.go",
	"pkg/scheduler/actions/reclaim/reclaimGpuMemory_test.go",
	"pkg/scheduler/actions/reclaim/reclaim_elastic_test.go",
	"pkg/scheduler/actions/reclaim/reclaim_sub_group_test.go",

	"pkg/scheduler/actions/preempt/preempt_test.go",
	"pkg/scheduler/actions/preempt/preemptGang_test.go",
	"pkg/scheduler/actions/preempt/preemptGpuMemory_test.go",
	"pkg/scheduler/actions/preempt/preempt_elastic_test.go",
	"pkg/scheduler/actions/preempt/preempt_subgroups_test.go",

	"pkg/scheduler/actions/consolidation/consolidation_test.go",
	"pkg/scheduler/actions/consolidation/consolidationGpuMemory_test.go",
}
