package metrics

import (
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves g in the Prometheus exposition format (content
// negotiation by promhttp). A collector error is logged by promhttp's
// defaults and the rest is served, so one bad series cannot blank the
// whole page.
func Handler(g prometheus.Gatherer) http.Handler {
	if g == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, errNilGatherer.Error(), http.StatusInternalServerError)
		})
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

var errNilGatherer = errors.New("metrics: Handler: nil Gatherer")
