package kubestorage_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver/kubestorage"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

// podKind registers the example API's internal Pod, which the
// k8s.io/apiserver storage conformance suites store, as a store kind.
func podKind() store.Kind {
	return store.Kind{Name: "Pod", Object: &example.Pod{}, List: &example.PodList{}}
}

// harness is one backend under the conformance suites.
type harness struct {
	backend kubestorage.Backend
	// compact discards the backend's history up to (at least) a version.
	compact storagetesting.Compaction
	// exactCompaction is false when compact discards all history rather
	// than that up to the version.
	exactCompaction bool
}

func (h harness) storage(t *testing.T) *kubestorage.Storage {
	t.Helper()
	s, err := kubestorage.New(h.backend, "/pods",
		func() runtime.Object { return &example.Pod{} },
		func() runtime.Object { return &example.PodList{} })
	require.NoError(t, err)
	return s
}

// increaseRV writes an object of another kind: the store's version moves,
// the pods do not change.
func (h harness) increaseRV(ctx context.Context, t *testing.T) int64 {
	vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "bump-"}}
	require.NoError(t, h.backend.Create(ctx, vm))
	rv, err := strconv.ParseInt(vm.ResourceVersion, 10, 64)
	require.NoError(t, err)
	return rv
}

// keyValidation checks that an object the storage wrote at key is what
// the store itself returns for that key (uid and resourceVersion agree).
func (h harness) keyValidation(s *kubestorage.Storage) storagetesting.KeyValidation {
	return func(ctx context.Context, t *testing.T, key string) {
		viaStorage := &example.Pod{}
		require.NoError(t, s.Get(ctx, key, storage.GetOptions{}, viaStorage))
		viaStore := &example.Pod{}
		require.NoError(t, h.backend.Get(ctx, store.KeyOf(viaStorage), viaStore))
		require.Equal(t, viaStorage.UID, viaStore.UID)
		require.Equal(t, viaStorage.ResourceVersion, viaStore.ResourceVersion)
		require.Equal(t, "Pod", viaStore.Kind, "the store stamps the kind")
	}
}

// noCallsValidation stands for the etcd3 suite's count of etcd range
// requests and transformer reads, which are particular to that
// implementation; the suites' checks of the listed data still run.
func noCallsValidation(*testing.T, uint64, uint64) {}

// suite is one conformance suite; skip, when set, says why it does not
// apply to these stores.
type suite struct {
	name string
	run  func(ctx context.Context, t *testing.T, h harness, s *kubestorage.Storage)
	skip string
}

const (
	skipTransformer = "needs a value transformer (encryption at rest) between the storage and its backend; the stores have none"
	skipTTL         = "needs objects with a time to live; the stores keep objects until deleted and Create refuses a ttl"
	skipCorrupt     = "needs undecodable values and unsafe deletion of corrupt objects; the stores report corrupt values (store.ErrCorrupt) and are repaired in the backend"
	skipProgress    = "needs watch progress notifications; the storage sends no progress bookmarks"
	skipCompaction  = "needs compaction up to a given version; the memory store can only drop its whole history"
	skipClusterKeys = "stores cluster-scoped and namespaced keys of one resource; a store kind is either namespaced or cluster-scoped"
	skipSizes       = "checks estimated object sizes; the storage estimates none"
	skipFreeKeys    = "stores objects at keys their metadata does not name (or renames them in an update); a store keys every object by its namespace and name"
)

func suites() []suite {
	return []suite{
		{name: "Create", run: func(ctx context.Context, t *testing.T, h harness, s *kubestorage.Storage) {
			storagetesting.RunTestCreate(ctx, t, s, h.keyValidation(s))
		}},
		{name: "CreateWithTTL", skip: skipTTL},
		{name: "CreateWithKeyExist", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestCreateWithKeyExist(ctx, t, s)
		}},
		{name: "Get", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestGet(ctx, t, s)
		}},
		{name: "UnconditionalDelete", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestUnconditionalDelete(ctx, t, s)
		}},
		{name: "ConditionalDelete", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestConditionalDelete(ctx, t, s)
		}},
		{name: "DeleteWithSuggestion", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestDeleteWithSuggestion(ctx, t, s)
		}},
		{name: "DeleteWithSuggestionAndConflict", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestDeleteWithSuggestionAndConflict(ctx, t, s)
		}},
		{name: "DeleteWithSuggestionOfDeletedObject", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestDeleteWithSuggestionOfDeletedObject(ctx, t, s)
		}},
		{name: "ValidateDeletionWithSuggestion", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestValidateDeletionWithSuggestion(ctx, t, s)
		}},
		{name: "ValidateDeletionWithOnlySuggestionValid", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestValidateDeletionWithOnlySuggestionValid(ctx, t, s)
		}},
		{name: "DeleteWithConflict", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestDeleteWithConflict(ctx, t, s)
		}},
		{name: "DeleteWithConflictAndMissingExpectedTransformOrDecodeError", skip: skipCorrupt},
		{name: "DeleteExpectedTransformOrDecodeError", skip: skipCorrupt},
		{name: "DeleteWithSuggestionAndMissingExpectedTransformOrDecodeError", skip: skipCorrupt},
		{name: "PreconditionalDeleteWithSuggestion", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestPreconditionalDeleteWithSuggestion(ctx, t, s)
		}},
		{name: "PreconditionalDeleteWithOnlySuggestionPass", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestPreconditionalDeleteWithOnlySuggestionPass(ctx, t, s)
		}},
		{name: "ListPaging", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestListPaging(ctx, t, s)
		}},
		{name: "GetListNonRecursive", run: func(ctx context.Context, t *testing.T, h harness, s *kubestorage.Storage) {
			storagetesting.RunTestGetListNonRecursive(ctx, t, h.increaseRV, s)
		}},
		{name: "GetListRecursivePrefix", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestGetListRecursivePrefix(ctx, t, s)
		}},
		{name: "KeySchema", skip: skipFreeKeys},
		{name: "GetListWithErrorAggregation", skip: skipTransformer},
		{name: "GetListWithoutErrorAggregation", skip: skipTransformer},
		{name: "GuaranteedUpdate", skip: skipTransformer},
		{name: "GuaranteedUpdateWithTTL", skip: skipTTL},
		{name: "GuaranteedUpdateChecksStoredData", skip: skipTransformer},
		{name: "GuaranteedUpdateWithConflict", skip: skipFreeKeys},
		{name: "GuaranteedUpdateWithSuggestionAndConflict", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestGuaranteedUpdateWithSuggestionAndConflict(ctx, t, s)
		}},
		{name: "TransformationFailure", skip: skipTransformer},
		{name: "List", run: func(ctx context.Context, t *testing.T, h harness, s *kubestorage.Storage) {
			if !h.exactCompaction {
				t.Skip(skipCompaction)
			}
			storagetesting.RunTestList(ctx, t, s, h.compact, false, nil)
		}},
		{name: "ConsistentList", run: func(ctx context.Context, t *testing.T, h harness, s *kubestorage.Storage) {
			storagetesting.RunTestConsistentList(ctx, t, s, h.increaseRV, false, true, false)
		}},
		{name: "CompactRevision", skip: "checks the compacted revision the etcd3 storage observes; these stores do not report one (CompactRevision is 0)"},
		{name: "ListContinuation", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestListContinuation(ctx, t, s, noCallsValidation)
		}},
		{name: "ListPaginationRareObject", skip: skipFreeKeys},
		{name: "ListContinuationWithFilter", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestListContinuationWithFilter(ctx, t, s, noCallsValidation)
		}},
		{name: "NamespaceScopedList", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestNamespaceScopedList(ctx, t, s)
		}},
		{name: "ListInconsistentContinuation", skip: skipFreeKeys},
		{name: "ListResourceVersionMatch", skip: skipTransformer},
		{name: "Stats", skip: skipSizes},
		{name: "Watch", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestWatch(ctx, t, s)
		}},
		{name: "ClusterScopedWatch", skip: skipClusterKeys},
		{name: "NamespaceScopedWatch", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestNamespaceScopedWatch(ctx, t, s)
		}},
		{name: "DeleteTriggerWatch", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestDeleteTriggerWatch(ctx, t, s)
		}},
		{name: "WatchFromZero", run: func(ctx context.Context, t *testing.T, h harness, s *kubestorage.Storage) {
			storagetesting.RunTestWatchFromZero(ctx, t, s, h.compact)
		}},
		{name: "WatchFromNonZero", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestWatchFromNonZero(ctx, t, s)
		}},
		{name: "DelayedWatchDelivery", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestDelayedWatchDelivery(ctx, t, s)
		}},
		{name: "WatchError", skip: skipTransformer},
		{name: "WatchContextCancel", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestWatchContextCancel(ctx, t, s)
		}},
		{name: "WatcherTimeout", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestWatcherTimeout(ctx, t, s)
		}},
		{name: "WatchDeleteEventObjectHaveLatestRV", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestWatchDeleteEventObjectHaveLatestRV(ctx, t, s)
		}},
		{name: "WatchInitializationSignal", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestWatchInitializationSignal(ctx, t, s)
		}},
		{name: "ProgressNotify", skip: skipProgress},
		{name: "WatchWithUnsafeDelete", skip: skipCorrupt},
		{name: "WatchDispatchBookmarkEvents", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunTestWatchDispatchBookmarkEvents(ctx, t, s, false)
		}},
		{name: "SendInitialEventsBackwardCompatibility", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunSendInitialEventsBackwardCompatibility(ctx, t, s)
		}},
		{name: "WatchSemantics", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunWatchSemantics(ctx, t, s)
		}},
		{name: "WatchSemanticInitialEventsExtended", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunWatchSemanticInitialEventsExtended(ctx, t, s)
		}},
		{name: "WatchListMatchSingle", run: func(ctx context.Context, t *testing.T, _ harness, s *kubestorage.Storage) {
			storagetesting.RunWatchListMatchSingle(ctx, t, s)
		}},
		{name: "WatchErrorIsBlockingFurtherEvents", skip: skipTransformer},
	}
}

// runSuites runs every suite against a fresh backend from newHarness.
func runSuites(t *testing.T, newHarness func(t *testing.T) harness) {
	for _, su := range suites() {
		t.Run(su.name, func(t *testing.T) {
			if su.skip != "" {
				t.Skip(su.skip)
			}
			h := newHarness(t)
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			su.run(ctx, t, h, h.storage(t))
		})
	}
}

func newMemoryHarness(t *testing.T) harness {
	m, err := store.NewMemoryWithOptions(store.Options{Kinds: []store.Kind{podKind()}, StartResourceVersion: 1})
	require.NoError(t, err)
	return harness{
		backend: m,
		compact: func(ctx context.Context, t *testing.T, _ string) {
			require.NoError(t, m.Compact(ctx))
		},
	}
}

func TestConformanceMemory(t *testing.T) {
	runSuites(t, newMemoryHarness)
}

func newEtcdHarness(t *testing.T) harness {
	endpoints := etcdtest.StartServer(t)
	ctx := context.Background()
	st, err := etcd.New(ctx, etcd.Options{Endpoints: endpoints, Kinds: []store.Kind{podKind()}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return harness{
		backend:         st,
		exactCompaction: true,
		// As the etcd3 storage's compaction: compact etcd's history up to
		// the version, then write a key outside the store's prefix (the
		// compaction record), which moves the revision by one.
		compact: func(ctx context.Context, t *testing.T, resourceVersion string) {
			rev, err := strconv.ParseInt(resourceVersion, 10, 64)
			require.NoError(t, err)
			_, err = st.Client().Compact(ctx, rev, clientv3.WithCompactPhysical())
			require.NoError(t, err)
			_, err = st.Client().Put(ctx, "compact_rev_key", resourceVersion)
			require.NoError(t, err)
		},
	}
}

func TestConformanceEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded etcd per suite")
	}
	runSuites(t, newEtcdHarness)
}
