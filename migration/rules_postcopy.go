package migration

import (
	"fmt"
	"math"
)

// postCopyFinish is when post-copy would end if it began now: what is
// left moves once at the bandwidth. Before the first pass ends, the job's
// remaining bytes are only the pages not sent yet; the pages sent and
// dirtied since (at most what was sent, at most the dirty rate's worth)
// move too.
func postCopyFinish(s *situation) float64 {
	p, e := s.p, s.e
	left := e.remaining
	if !p.FirstPassDone {
		sent := math.Max(0, s.m-e.remaining)
		left += math.Min(sent, e.dirtyEff*s.elapsed)
	}
	return s.elapsed + left/e.bw
}

// postCopyFaster switches to post-copy while pre-copy still converges,
// when post-copy (which sends what is left exactly once) saves a
// noticeable share of the lower bound. It does not wait for the first
// pass: the sooner the switch, the less is sent twice.
func (v *VirtkitPolicy) postCopyFaster(s *situation) (Action, bool) {
	p := s.p
	if !p.AllowPostCopy || !s.pred.Converges {
		return Action{}, false
	}
	post := postCopyFinish(s)
	gain := s.finish - post
	if gain <= v.opts.PostCopyGain*s.lowerBound {
		return Action{}, false
	}
	when := "first pass done"
	if !p.FirstPassDone {
		when = "during the first pass"
	}
	return Action{Kind: ActionSwitchPostCopy, Figures: s.f.add("postCopyFinish", post, "s"),
		Reason: fmt.Sprintf("%s; post-copy of the remaining %s finishes at %.0f s, %.0f s before pre-copy would", when, formatBytes((post-s.elapsed)*s.e.bw), post, gain)}, true
}

// postCopyAfterFirstPass switches to post-copy when pre-copy does not
// finish within the budget: what is left moves once, at B. Before the
// first pass ends it switches as soon as the model, on the pre-start
// measurement or the job's own rate, says so: waiting for the pass only
// sends again what the guest dirtied meanwhile.
func (v *VirtkitPolicy) postCopyAfterFirstPass(s *situation) (Action, bool) {
	p, e := s.p, s.e
	if !p.AllowPostCopy {
		return Action{}, false
	}
	post := postCopyFinish(s)
	if s.pred.Converges && post >= s.finish {
		return Action{}, false
	}
	return Action{Kind: ActionSwitchPostCopy, Figures: s.f.add("postCopyFinish", post, "s"),
		Reason: fmt.Sprintf("%s; post-copy of the remaining %s finishes at %.0f s", s.verdict(), formatBytes((post-s.elapsed)*e.bw), post)}, true
}
