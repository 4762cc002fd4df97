package migration

import "fmt"

// postCopyFaster switches to post-copy after the first pass, while
// pre-copy still converges, when post-copy (which sends what is left
// exactly once) saves a noticeable share of the lower bound.
func (v *VirtkitPolicy) postCopyFaster(s *situation) (Action, bool) {
	p, e := s.p, s.e
	if !p.AllowPostCopy || !p.FirstPassDone || !s.pred.Converges {
		return Action{}, false
	}
	post := s.elapsed + e.remaining/e.bw
	gain := s.finish - post
	if gain <= v.opts.PostCopyGain*s.lowerBound {
		return Action{}, false
	}
	return Action{Kind: ActionSwitchPostCopy, Figures: s.f.add("postCopyFinish", post, "s"),
		Reason: fmt.Sprintf("first pass done; post-copy of the remaining %s finishes at %.0f s, %.0f s before pre-copy would", formatBytes(e.remaining), post, gain)}, true
}

// postCopyAfterFirstPass switches to post-copy after the first full pass
// when pre-copy does not finish within the budget: every page has moved
// once, what is left moves once more, at B.
func (v *VirtkitPolicy) postCopyAfterFirstPass(s *situation) (Action, bool) {
	p, e := s.p, s.e
	if !p.AllowPostCopy || !p.FirstPassDone {
		return Action{}, false
	}
	post := s.elapsed + e.remaining/e.bw
	if s.pred.Converges && post >= s.finish {
		return Action{}, false
	}
	return Action{Kind: ActionSwitchPostCopy, Figures: s.f.add("postCopyFinish", post, "s"),
		Reason: fmt.Sprintf("%s; post-copy of the remaining %s finishes at %.0f s", s.verdict(), formatBytes(e.remaining), post)}, true
}

// awaitFirstPass waits for the first pass to end when pre-copy cannot
// converge and post-copy is allowed.
func (v *VirtkitPolicy) awaitFirstPass(s *situation) (Action, bool) {
	if !s.p.AllowPostCopy || s.p.FirstPassDone {
		return Action{}, false
	}
	return Action{Kind: ActionContinue, Figures: s.f, Reason: "pre-copy cannot converge; post-copy once the first pass completes"}, true
}
