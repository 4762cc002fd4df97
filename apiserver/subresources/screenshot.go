package subresources

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/virtkit/virtkit/store"
)

// maxScreenshotBytes bounds a node's PNG screenshot (its display is at most
// 4096x4096 pixels).
const maxScreenshotBytes = 80 << 20

// parseScreenshot recognises .../namespaces/NS/virtualmachineinstances/
// NAME/vnc/screenshot; ok is false for other paths.
func parseScreenshot(path string) (streamRequest, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	// apis subresources.kubevirt.io v1 namespaces NS virtualmachineinstances NAME vnc screenshot
	if len(parts) != 9 || parts[0] != "apis" || parts[1] != GroupName || parts[2] != Version || parts[3] != "namespaces" || parts[5] != "virtualmachineinstances" ||
		parts[7] != "vnc" || parts[8] != "screenshot" {
		return streamRequest{}, false
	}
	return streamRequest{resource: parts[5], namespace: parts[4], name: parts[6], verb: "vnc/screenshot"}, true
}

// serveScreenshot answers a VMI's vnc/screenshot subresource with the PNG
// the node agent running it takes of its VNC display.
func (h *Handler) serveScreenshot(w http.ResponseWriter, r *http.Request, who user.Info, req streamRequest) {
	gr := schema.GroupResource{Group: GroupName, Resource: "virtualmachineinstances"}
	if !h.admitStreamGet(w, r, who, req) {
		return
	}
	q := url.Values{}
	switch mc := r.URL.Query().Get("moveCursor"); mc {
	case "", "false":
	case "true":
		q.Set("moveCursor", "true")
	default:
		h.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("moveCursor: %q is not true or false", mc)))
		return
	}
	if h.nodes == nil {
		h.writeError(w, r, apierrors.NewServiceUnavailable(req.verb+": this API server has no credentials for node agents"))
		return
	}
	u, err := h.nodeEndpoint(r.Context(), gr, store.Key{Namespace: req.namespace, Name: req.name}, "vnc", []string{"screenshot"})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	u.RawQuery = q.Encode()
	nreq, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		h.writeError(w, r, apierrors.NewInternalError(err))
		return
	}
	resp, err := h.nodes.http.Do(nreq)
	if err != nil {
		h.writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("%s: node endpoint %s: %v", req.verb, u.Host, err)))
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxScreenshotBytes+1))
	if err != nil {
		h.writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("%s: node endpoint %s: %v", req.verb, u.Host, err)))
		return
	}
	if resp.StatusCode != http.StatusOK {
		h.writeError(w, r, nodeError(gr, req.name, resp.StatusCode, body))
		return
	}
	if len(body) > maxScreenshotBytes || resp.Header.Get("Content-Type") != "image/png" {
		h.writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("%s: node endpoint %s: not a PNG of at most %d bytes", req.verb, u.Host, maxScreenshotBytes)))
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
