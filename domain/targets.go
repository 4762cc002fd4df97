package domain

// targetAllocator hands out disk target names the way KubeVirt (and the
// Linux sd driver) does: per prefix, index 0.. maps to a..z, aa, ab, ...,
// skipping names already taken (for example by targets recorded in the
// VMI status, which stay stable across hotplug).
type targetAllocator struct {
	taken map[string]bool
	next  map[string]int
}

func newTargetAllocator(reserved ...string) *targetAllocator {
	a := &targetAllocator{taken: map[string]bool{}, next: map[string]int{}}
	for _, r := range reserved {
		a.taken[r] = true
	}
	return a
}

// allocate returns the next free name with prefix ("vd", "sd") and its index.
func (a *targetAllocator) allocate(prefix string) (string, int) {
	for {
		i := a.next[prefix]
		a.next[prefix] = i + 1
		name := prefix + diskLetters(i)
		if !a.taken[name] {
			a.taken[name] = true
			return name, i
		}
	}
}

// reserve marks name as used; it reports false when it already was.
func (a *targetAllocator) reserve(name string) bool {
	if a.taken[name] {
		return false
	}
	a.taken[name] = true
	return true
}

// diskLetters maps 0->a, 25->z, 26->aa, 27->ab, 701->zz, 702->aaa.
func diskLetters(i int) string {
	var b []byte
	for i++; i > 0; i = (i - 1) / 26 {
		b = append([]byte{byte('a' + (i-1)%26)}, b...)
	}
	return string(b)
}
