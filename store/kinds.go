package store

// DefaultKinds returns the kinds of the virtkit object model, which every
// store created with zero Options knows.
func DefaultKinds() []Kind {
	return []Kind{}
}
