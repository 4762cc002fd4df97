package store

import "sort"

// sortByKey sorts s by the string key returns, stably.
func sortByKey[T any](s []T, key func(T) string) {
	sort.SliceStable(s, func(i, j int) bool { return key(s[i]) < key(s[j]) })
}
