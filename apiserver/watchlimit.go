package apiserver

import (
	"fmt"
	"math"
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	genericfilters "k8s.io/apiserver/pkg/server/filters"

	"github.com/virtkit/virtkit/apiserver/subresources"
)

// WatchesRefusedMetric is the counter of watches the server refused,
// labelled by reason (WatchRefusedUserLimit): registered into
// GenericOptions.Registerer.
const WatchesRefusedMetric = "virtkit_apiserver_watches_refused_total"

// WatchRefusedUserLimit is the reason label of a watch refused because its
// user had MaxWatchesPerUser watches open.
const WatchRefusedUserLimit = "user_limit"

// newWatchesRefused builds the refused-watches counter and registers it
// into reg (nil: kept unregistered, still counted).
func newWatchesRefused(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: WatchesRefusedMetric,
		Help: "Watches the API server refused with 429 Too Many Requests, by reason (user_limit: the user had its bound of watches open).",
	}, []string{"reason"})
	// Exported at 0 before the first refusal, so a rate() over it starts from a sample.
	c.WithLabelValues(WatchRefusedUserLimit)
	if reg == nil {
		return c, nil
	}
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("%w: Registerer: %w", ErrOptions, err)
	}
	return c, nil
}

// DefaultMaxWatchesPerUser bounds one user's watches open at once
// (GenericOptions.MaxWatchesPerUser): far above what a client-go or
// controller-runtime process opens (one watch per informer, a few dozen
// kinds at most), even with several replicas sharing one identity.
const DefaultMaxWatchesPerUser = 256

// watchRetryAfter is the Retry-After, in seconds, of a watch refused for
// being over its user's bound: client-go retries it after that long.
const watchRetryAfter = 1

// isWatch is the library's long-running check for the watch verb alone:
// streams have their own bound (MaxStreamsPerUser).
var isWatch = genericfilters.BasicLongRunningRequestCheck(sets.NewString("watch"), sets.NewString())

// withWatchLimit bounds the watches each user has open at once to
// maxPerUser: one more is answered 429 Too Many Requests (a
// metav1.Status of reason TooManyRequests, with Retry-After) and its slot
// is freed when a watch ends. It runs after authentication, impersonation
// and authorization, so a user is who the request acts as and a watch it
// may not make takes no slot. Members of AdminGroup (the server's own
// loopback among them) are not counted, as the library's max-in-flight
// bound does not count them. Each refusal is counted in refused.
func withWatchLimit(next http.Handler, maxPerUser int, s runtime.NegotiatedSerializer, refused *prometheus.CounterVec) http.Handler {
	watches := subresources.NewLimiter(math.MaxInt, maxPerUser, "watches")
	userLimit := refused.WithLabelValues(WatchRefusedUserLimit)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		ri, ok := request.RequestInfoFrom(ctx)
		if !ok || !isWatch(r, ri) {
			next.ServeHTTP(w, r)
			return
		}
		u, ok := request.UserFrom(ctx)
		if !ok || slices.Contains(u.GetGroups(), AdminGroup) {
			next.ServeHTTP(w, r)
			return
		}
		release, err := watches.Acquire(u.GetName())
		if err != nil {
			userLimit.Inc()
			responsewriters.ErrorNegotiated(apierrors.NewTooManyRequests("watch: "+err.Error(), watchRetryAfter), s,
				schema.GroupVersion{Group: ri.APIGroup, Version: ri.APIVersion}, w, r)
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}
