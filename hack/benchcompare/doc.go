// Command benchcompare summarises the runs hack/bench-compare.sh made: the
// JSON results of `virtkit bench scale` from an old and a new tree, RUNS of
// each, as one line per run and fleet size and the ratios new/old of the
// medians (time, CPU per VM, peak RSS, writes and reconciles per VM).
//
//	go run ./hack/benchcompare DIR RUNS
//
// DIR holds old-1.json ... old-RUNS.json and new-1.json ... new-RUNS.json.
package main
