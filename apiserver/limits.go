package apiserver

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit/apiserver/subresources"
)

// Request bounds by default, as kube-apiserver's.
const (
	// DefaultMaxRequestsInFlight bounds the requests served at once
	// (kube-apiserver's --max-requests-inflight); watches and streams are
	// counted apart.
	DefaultMaxRequestsInFlight = 400
	// DefaultMaxWatches bounds the watches open at once.
	DefaultMaxWatches = 4096
	// DefaultMaxWatchesPerUser bounds one user's watches open at once.
	DefaultMaxWatchesPerUser = 256
	// DefaultMaxConnections bounds the connections open at once; a
	// connection over the bound is closed as soon as it is accepted.
	DefaultMaxConnections = 4096
	// DefaultRequestBodyTimeout bounds the reading of a request body.
	DefaultRequestBodyTimeout = time.Minute
)

// inFlight counts the requests being served, refusing those over a bound.
type inFlight struct {
	slots chan struct{}
}

func newInFlight(n int) *inFlight { return &inFlight{slots: make(chan struct{}, n)} }

// acquire takes a slot, or answers false when every slot is taken.
func (f *inFlight) acquire() (release func(), ok bool) {
	select {
	case f.slots <- struct{}{}:
		return func() { <-f.slots }, true
	default:
		return nil, false
	}
}

// longRunning reports whether a request lasts as long as its client wants
// (a watch or a stream), which max-in-flight does not count.
func longRunning(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	if q := r.URL.Query().Get("watch"); q == "true" || q == "1" {
		return true
	}
	return subresources.LongRunning(r, nil)
}

// tooManyRequests is the answer to a request over a bound.
func tooManyRequests(what string) error {
	return apierrors.NewTooManyRequests(what, 1)
}

// bodyMediaTypes are the Content-Types of create and update bodies:
// virtkit's decoder reads JSON and YAML.
var bodyMediaTypes = []string{"application/json", "application/yaml", "application/x-yaml", "text/yaml"}

// checkBodyType answers 415 Unsupported Media Type for a create or update
// body that is neither JSON nor YAML; no Content-Type is JSON, as in
// kube-apiserver.
func checkBodyType(r *http.Request, info *requestInfo) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil {
		for _, ok := range bodyMediaTypes {
			if mt == ok {
				return nil
			}
		}
	}
	return apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, info.verb,
		info.res.groupResource(), info.name,
		fmt.Sprintf("the body of the request was in an unknown format %q: accepted media types are %s",
			ct, strings.Join(bodyMediaTypes, ", ")), 0, false)
}

// strategicMergeError answers a strategic merge patch: as for custom
// resources, kube-apiserver refuses it, since the kinds carry no patch
// strategies.
func strategicMergeError(info *requestInfo) error {
	return apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch",
		info.res.groupResource(), info.name,
		fmt.Sprintf("strategic merge patch (%s) is not supported for %s: use %s or %s",
			types.StrategicMergePatchType, info.res.groupResource(), types.MergePatchType, types.JSONPatchType), 0, false)
}

// setBodyDeadline bounds the time the handler may spend reading the body
// of r: a client trickling a body holds a goroutine and a connection.
func (s *Server) setBodyDeadline(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || longRunning(r) {
		return
	}
	// A ResponseWriter that cannot set deadlines (httptest's recorder)
	// leaves the body unbounded in time, but not in size.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.opts.RequestBodyTimeout))
}

// limitListener closes the connections it accepts over max open at once.
type limitListener struct {
	net.Listener
	mu   sync.Mutex
	open int
	max  int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if l.open >= l.max {
			l.mu.Unlock()
			_ = c.Close()
			continue
		}
		l.open++
		l.mu.Unlock()
		return &limitConn{Conn: c, l: l}, nil
	}
}

type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return err
}
