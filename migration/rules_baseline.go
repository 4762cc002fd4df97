package migration

// Rule names of the engine's own decisions and of the baseline policies
// ([KubeVirtPolicy], [NovaPolicy], [StallPolicy]); see [Action.Rule].
// A baseline rule shares its name with the virtkit rule of the same
// meaning where there is one.
const (
	// RuleNoDirectThrottle: the engine notes that the job cannot be
	// throttled and QEMU's auto-converge was not enabled at the start.
	RuleNoDirectThrottle = "NoDirectThrottle"
	// RuleAbortRequested: the caller aborted the job ([Engine.Abort]).
	RuleAbortRequested = "AbortRequested"
	// RuleCancelled: the caller's context ended.
	RuleCancelled = "Cancelled"

	// RuleStart: a baseline starts the job with its fixed parameters.
	RuleStart = "Start"
	// RuleCompletionTimeoutPostCopy: the completion budget ran out and
	// post-copy is allowed: switch to it.
	RuleCompletionTimeoutPostCopy = "CompletionTimeoutPostCopy"
	// RuleCompletionTimeout: the completion budget ran out: abort.
	RuleCompletionTimeout = "CompletionTimeout"
	// RuleProgressTimeout: no progress for KubeVirt's progress timeout.
	RuleProgressTimeout = "ProgressTimeout"
	// RuleWithinBudget: nothing to do before the completion budget ends.
	RuleWithinBudget = "WithinBudget"
	// RuleDowntimeStep: the next step of Nova's downtime ramp.
	RuleDowntimeStep = "DowntimeStep"

	// The stall detector's rules.
	RuleSwitchoverTimeout   = "SwitchoverTimeout"
	RuleSwitchoverUnderway  = "SwitchoverUnderway"
	RuleAwaitIteration      = "AwaitIteration"
	RuleIterationProgressed = "IterationProgressed"
	RuleAwaitLocalMinimum   = "AwaitLocalMinimum"
	RuleStallNoBandwidth    = "StallNoBandwidth"
	RuleStallOverBudget     = "StallOverBudget"
	RuleStallPostCopy       = "StallPostCopy"
	RuleStallStopAndCopy    = "StallStopAndCopy"
	RuleStallAbort          = "StallAbort"
)
