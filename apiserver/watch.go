package apiserver

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	restwatch "k8s.io/client-go/rest/watch"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// InitialEventsEndAnnotation marks the bookmark that ends a watch's initial
// events (sendInitialEvents=true), as the Kubernetes API server sets it.
const InitialEventsEndAnnotation = "k8s.io/initial-events-end"

// watcher streams one watch request.
type watcher struct {
	s       *Server
	w       http.ResponseWriter
	r       *http.Request
	res     *resource
	enc     *restwatch.Encoder
	flush   func()
	table   bool
	columns bool // the next Table event carries the column definitions
	fs      fields.Selector
	// matched remembers, under a field selector, which objects the client
	// was last told about, so a change in or out of the selection becomes
	// ADDED or DELETED.
	matched map[store.Key]bool
	// complete: matched holds every object the client knows (the watch
	// began with the initial state), so an unknown object is a new one.
	complete bool
	lastRV   string
}

func (s *Server) watch(w http.ResponseWriter, r *http.Request, info *requestInfo) {
	ls, fs, err := s.selectors(r, info.res)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if info.name != "" {
		byName := fields.OneTermEqualSelector("metadata.name", info.name)
		if fs == nil {
			fs = byName
		} else {
			fs = fields.AndSelectors(fs, byName)
		}
	}
	q := r.URL.Query()
	timeout := s.opts.MaxWatchTimeout
	if v := q.Get("timeoutSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.writeError(w, r, apierrors.NewBadRequest("timeoutSeconds: "+strconv.Quote(v)+" is not a non-negative integer"))
			return
		}
		if d := time.Duration(n) * time.Second; n > 0 && d < timeout {
			timeout = d
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	rv := q.Get("resourceVersion")
	sendInitial := rv == "" || rv == "0"
	if q.Has("sendInitialEvents") {
		sendInitial = q.Get("sendInitialEvents") == "true"
	}
	bookmarks := q.Get("allowWatchBookmarks") == "true"
	var initial []virtkit.Object
	if sendInitial {
		objs, listRV, err := s.listObjects(r.WithContext(ctx), info, ls, fs)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		initial, rv = objs, listRV
	} else if rv == "0" {
		rv = ""
	}
	ch, err := s.opts.Store.Watch(ctx, info.res.newList(), store.WatchOptions{
		Namespace: info.namespace, LabelSelector: ls, ResourceVersion: rv,
	})
	if err != nil {
		s.writeError(w, r, storeError(info.res, "", err))
		return
	}
	flusher, _ := w.(http.Flusher)
	wt := &watcher{
		s: s, w: w, r: r, res: info.res, fs: fs, table: wantsTable(r), columns: true,
		enc:      restwatch.NewEncoder(streaming.NewEncoder(w, s.codec), s.codec),
		matched:  map[store.Key]bool{},
		complete: sendInitial,
		lastRV:   rv,
		flush: func() {
			if flusher != nil {
				flusher.Flush()
			}
		},
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	wt.flush()
	for _, o := range initial {
		wt.matched[store.KeyOf(o)] = true
		if !wt.send(watch.Added, o) {
			return
		}
	}
	if sendInitial && q.Get("sendInitialEvents") == "true" && bookmarks {
		if !wt.bookmark(true) {
			return
		}
	}
	wt.flush()
	var tick <-chan time.Time
	if bookmarks {
		t := time.NewTicker(s.opts.BookmarkInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			if !wt.bookmark(false) {
				return
			}
			wt.flush()
		case ev, ok := <-ch:
			if !ok {
				return
			}
			if !wt.event(ev) {
				return
			}
			// Drain what is already queued before flushing.
			for more := true; more; {
				select {
				case ev, ok := <-ch:
					if !ok || !wt.event(ev) {
						wt.flush()
						return
					}
				default:
					more = false
				}
			}
			wt.flush()
		}
	}
}

// event forwards one store event; false ends the watch.
func (wt *watcher) event(ev store.Event) bool {
	if ev.Type == store.Error {
		var st metav1.Status
		if errors.Is(ev.Err, store.ErrExpired) {
			st = apierrors.NewResourceExpired(ev.Err.Error()).Status()
		} else {
			st = statusOf(storeError(wt.res, "", ev.Err))
		}
		st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		_ = wt.enc.Encode(&watch.Event{Type: watch.Error, Object: &st})
		return false
	}
	obj := ev.Object
	wt.lastRV = obj.GetResourceVersion()
	t := watch.EventType(ev.Type)
	if wt.fs != nil && !wt.fs.Empty() {
		key := store.KeyOf(obj)
		now := ev.Type != store.Deleted && wt.fs.Matches(wt.res.fieldSet(obj))
		was, known := wt.matched[key]
		known = known || wt.complete
		switch {
		case ev.Type == store.Deleted:
			delete(wt.matched, key)
			if !(was || (!known && wt.fs.Matches(wt.res.fieldSet(obj)))) {
				return true
			}
		case now && known && !was:
			t = watch.Added
		case !now && was:
			t = watch.Deleted
		case !now:
			wt.matched[key] = false
			return true
		}
		if ev.Type != store.Deleted {
			wt.matched[key] = now
		}
	}
	return wt.send(t, obj)
}

// send encodes one event; false when the client is gone.
func (wt *watcher) send(t watch.EventType, obj virtkit.Object) bool {
	out := wt.res.out(obj)
	switch {
	case wt.table:
		tbl, err := wt.s.table(wt.r, wt.res, []virtkit.Object{obj}, wt.columns)
		if err != nil {
			return false
		}
		tbl.ResourceVersion = obj.GetResourceVersion()
		wt.columns = false
		out = tbl
	case wantsMetadata(wt.r):
		out = partialMetadata(obj)
	}
	return wt.enc.Encode(&watch.Event{Type: t, Object: out}) == nil
}

// bookmark sends a BOOKMARK at the last resourceVersion delivered.
func (wt *watcher) bookmark(initialEnd bool) bool {
	if wt.lastRV == "" {
		return true
	}
	obj := wt.res.newObject()
	obj.SetResourceVersion(wt.lastRV)
	if initialEnd {
		obj.SetAnnotations(map[string]string{InitialEventsEndAnnotation: "true"})
	}
	return wt.enc.Encode(&watch.Event{Type: watch.Bookmark, Object: wt.res.out(obj)}) == nil
}
