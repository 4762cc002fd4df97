package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/virtkit/virtkit"
)

// cdiConfigName is the one CDIConfig CDI keeps.
const cdiConfigName = "config"

// cdiConfigPath is where the cdiconfigs resource lives.
var cdiConfigPath = "/apis/" + virtkit.CDISchemeGroupVersion.String() + "/cdiconfigs"

// cdiConfig is CDI's CDIConfig as virtkit reports it: only
// status.uploadProxyURL, which virtctl image-upload reads when it is not
// given --uploadproxy-url.
type cdiConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct{}        `json:"spec"`
	Status            cdiConfigStatus `json:"status"`
}

type cdiConfigStatus struct {
	UploadProxyURL string `json:"uploadProxyURL,omitempty"`
}

type cdiConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []cdiConfig `json:"items"`
}

// withCDIConfig answers get, list and watch of cdi.kubevirt.io cdiconfigs
// (the one named "config") ahead of the API handler, after the filter
// chain has authenticated and authorized the request.
func withCDIConfig(next http.Handler, uploadProxyURL string, started time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := strings.TrimSuffix(r.URL.Path, "/")
		if p != cdiConfigPath && !strings.HasPrefix(p, cdiConfigPath+"/") {
			next.ServeHTTP(w, r)
			return
		}
		gr := schema.GroupResource{Group: virtkit.CDIGroupName, Resource: "cdiconfigs"}
		if r.Method != http.MethodGet {
			writeStatus(w, apierrors.NewMethodNotSupported(gr, r.Method))
			return
		}
		cfg := cdiConfig{
			TypeMeta: metav1.TypeMeta{APIVersion: virtkit.CDISchemeGroupVersion.String(), Kind: "CDIConfig"},
			ObjectMeta: metav1.ObjectMeta{Name: cdiConfigName, UID: types.UID("cdiconfig-" + cdiConfigName),
				CreationTimestamp: metav1.NewTime(started), ResourceVersion: "1"},
			Status: cdiConfigStatus{UploadProxyURL: uploadProxyURL},
		}
		name := strings.TrimPrefix(p, cdiConfigPath)
		if q := r.URL.Query().Get("watch"); q == "true" || q == "1" {
			if name != "" && name != "/"+cdiConfigName {
				writeStatus(w, apierrors.NewNotFound(gr, strings.TrimPrefix(name, "/")))
				return
			}
			watchCDIConfig(w, r, &cfg)
			return
		}
		switch name {
		case "":
			writeJSONObject(w, http.StatusOK, &cdiConfigList{TypeMeta: metav1.TypeMeta{APIVersion: virtkit.CDISchemeGroupVersion.String(), Kind: "CDIConfigList"},
				ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []cdiConfig{cfg}})
		case "/" + cdiConfigName:
			writeJSONObject(w, http.StatusOK, &cfg)
		default:
			writeStatus(w, apierrors.NewNotFound(gr, strings.TrimPrefix(name, "/")))
		}
	})
}

// maxCDIConfigWatch bounds a CDIConfig watch, as kube-apiserver bounds
// every watch (its --min-request-timeout); clients watch again.
const maxCDIConfigWatch = 30 * time.Minute

// watchEvent is a watch event as the API streams it in JSON.
type watchEvent struct {
	Type   watch.EventType `json:"type"`
	Object any             `json:"object"`
}

// watchCDIConfig serves a watch of the CDIConfig, which never changes: a
// watch without a resourceVersion (or from "0", or asking for initial
// events) starts with it Added, followed, for a watch-list, by the
// bookmark that ends the initial events; then, as a watch resumed from a
// listed version, it has nothing to report and stays open until the
// client goes or its timeoutSeconds (at most 30 minutes) end it.
func watchCDIConfig(w http.ResponseWriter, r *http.Request, cfg *cdiConfig) {
	q := r.URL.Query()
	rv := q.Get("resourceVersion")
	initial := rv == "" || rv == "0"
	sendInitial := q.Get("sendInitialEvents")
	if sendInitial != "" {
		initial = sendInitial == "true"
	}
	timeout := maxCDIConfigWatch
	if s := q.Get("timeoutSeconds"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("timeoutSeconds: not a number of seconds: %q", s)))
			return
		}
		if n > 0 && time.Duration(n)*time.Second < timeout {
			timeout = time.Duration(n) * time.Second
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil { // the headers, so that the client's watch starts
		return
	}
	enc := json.NewEncoder(w)
	send := func(e watchEvent) bool {
		if enc.Encode(e) != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if initial && !send(watchEvent{Type: watch.Added, Object: cfg}) {
		return
	}
	if sendInitial == "true" && q.Get("allowWatchBookmarks") == "true" {
		b := cdiConfig{TypeMeta: cfg.TypeMeta, ObjectMeta: metav1.ObjectMeta{ResourceVersion: cfg.ResourceVersion,
			Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
		if !send(watchEvent{Type: watch.Bookmark, Object: &b}) {
			return
		}
	}
	<-ctx.Done()
}
