package metrics

// PromtoolCheck lets the external tests reuse the promtool helper.
var PromtoolCheck = promtoolCheck
