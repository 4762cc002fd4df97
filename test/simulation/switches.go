package simulation

// DefaultDisabled is the operations switched off by default, each with
// why: known defects that are being fixed elsewhere, so that the default
// run (CI) passes while they are. Every entry is listed with every run.
func DefaultDisabled() map[string]string {
	return map[string]string{}
}
