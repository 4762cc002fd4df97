package subresources

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// Streams and node endpoints. These values are the node agent's (package
// node): the Node annotation with its endpoint URL, the client identity it
// accepts, the WebSocket subprotocol and the path prefix.
const (
	// NodeEndpointAnnotation is the Node annotation with the URL of the
	// node agent's endpoint.
	NodeEndpointAnnotation = "virtkit.io/node-endpoint"
	// NodeClientUser is the common name of the client certificate the API
	// server presents to node endpoints.
	NodeClientUser = "virtkit:apiserver"
	// StreamSubprotocol is KubeVirt's WebSocket subprotocol for console,
	// VNC and port-forward: binary frames carry raw bytes.
	StreamSubprotocol = "plain.kubevirt.io"
)

// Stream limits.
const (
	maxStreamMessageBytes = 1 << 20
	maxNodeReplyBytes     = 4 << 20
	nodeDialTimeout       = 30 * time.Second
)

// streamRequest is a stream subresource request.
type streamRequest struct {
	// resource is virtualmachineinstances, or virtualmachines for a VM's
	// portforward, forwarded to its VMI (of the same name).
	resource              string
	namespace, name, verb string
	rest                  []string // PORT[/PROTOCOL] of portforward
}

// parseStream recognises /apis/subresources.kubevirt.io/v1/namespaces/NS/
// virtualmachineinstances/NAME/{console,vnc,portforward/PORT[/PROTO]} and
// .../virtualmachines/NAME/portforward/PORT[/PROTO]; ok is false for other
// paths.
func parseStream(path string) (streamRequest, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	// apis subresources.kubevirt.io v1 namespaces NS virtualmachineinstances NAME VERB [PORT [PROTO]]
	if len(parts) < 8 || parts[0] != "apis" || parts[1] != GroupName || parts[2] != Version || parts[3] != "namespaces" {
		return streamRequest{}, false
	}
	req := streamRequest{resource: parts[5], namespace: parts[4], name: parts[6], verb: parts[7], rest: parts[8:]}
	if req.resource == "virtualmachines" {
		return req, req.verb == "portforward"
	}
	if req.resource != "virtualmachineinstances" {
		return streamRequest{}, false
	}
	switch req.verb {
	case "console", "vnc":
		return req, len(req.rest) == 0
	case "portforward":
		return req, true
	}
	return streamRequest{}, false
}

// LongRunning reports whether a request is a stream (console, vnc or
// portforward), which lasts as long as its client wants: a server leaves
// it out of its bound on requests in flight and of its request timeout.
// Its signature is request.LongRunningRequestCheck's, a generic server's
// Config.LongRunningFunc; requestInfo may be nil.
func LongRunning(r *http.Request, _ *apirequest.RequestInfo) bool {
	if r.Method != http.MethodGet {
		return false
	}
	_, ok := parseStream(r.URL.Path)
	return ok
}

// parsePortForward checks PORT[/tcp|udp].
func parsePortForward(rest []string) error {
	if len(rest) < 1 || len(rest) > 2 {
		return errors.New("want portforward/PORT[/tcp|udp]")
	}
	if p, err := strconv.Atoi(rest[0]); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("port %q: want 1-65535", rest[0])
	}
	if len(rest) == 2 && rest[1] != "tcp" && rest[1] != "udp" {
		return fmt.Errorf("protocol %q: want tcp or udp", rest[1])
	}
	return nil
}

// nodeClients are the API server's ways to its node agents' endpoints.
type nodeClients struct {
	http   *http.Client
	dialer *websocket.Dialer
}

func newNodeClients(cfg *tls.Config) *nodeClients {
	if cfg == nil {
		return nil
	}
	tr := &http.Transport{
		TLSClientConfig:       cfg.Clone(),
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: nodeDialTimeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       time.Minute,
	}
	return &nodeClients{
		http: &http.Client{Transport: tr, Timeout: nodeDialTimeout},
		dialer: &websocket.Dialer{
			TLSClientConfig: cfg.Clone(), HandshakeTimeout: nodeDialTimeout,
			Subprotocols: []string{StreamSubprotocol},
		},
	}
}

// nodeEndpoint returns the endpoint URL of the node running a VMI, with
// the VMI's path on it.
func (h *Handler) nodeEndpoint(ctx context.Context, gr schema.GroupResource, key store.Key, verb string, rest []string) (*url.URL, error) {
	vmi := &virtkit.VirtualMachineInstance{}
	if err := h.opts.Store.Get(ctx, key, vmi); err != nil {
		return nil, actionError(gr, key.Name, err)
	}
	if !vmi.IsRunning() || vmi.Status.NodeName == "" {
		return nil, apierrors.NewConflict(gr, key.Name, fmt.Errorf("VMI is not running (phase %q)", vmi.Status.Phase))
	}
	n := &virtkit.Node{}
	if err := h.opts.Store.Get(ctx, store.Key{Name: vmi.Status.NodeName}, n); err != nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("node %s of VMI %s/%s: %v", vmi.Status.NodeName, key.Namespace, key.Name, err))
	}
	raw := n.Annotations[NodeEndpointAnnotation]
	if raw == "" {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("node %s publishes no endpoint (annotation %s): its agent serves no streams",
			n.Name, NodeEndpointAnnotation))
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("node %s: endpoint %q is not an https URL", n.Name, raw))
	}
	elems := append([]string{"v1", "namespaces", key.Namespace, "virtualmachineinstances", key.Name, verb}, rest...)
	for i := range elems {
		elems[i] = url.PathEscape(elems[i])
	}
	u.Path = "/" + strings.Join(elems, "/")
	return u, nil
}

// nodeError maps a node endpoint's HTTP answer to an API error.
func nodeError(gr schema.GroupResource, name string, code int, body []byte) error {
	msg := strings.TrimSpace(string(body))
	switch code {
	case http.StatusNotFound:
		return apierrors.NewNotFound(gr, name)
	case http.StatusConflict:
		return apierrors.NewConflict(gr, name, errors.New(msg))
	case http.StatusNotImplemented:
		return apierrors.NewBadRequest(msg)
	case http.StatusTooManyRequests:
		return apierrors.NewTooManyRequests(msg, 1)
	case http.StatusUnauthorized, http.StatusForbidden:
		return apierrors.NewServiceUnavailable("node endpoint refused the API server: " + msg)
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("node endpoint answered %d: %s", code, msg))
}

// admitStreamGet lets through a GET of a VMI's stream subresource
// (console, vnc, portforward, vnc/screenshot) that the authorizer allows;
// otherwise it answers 405 or 403 and reports false.
func (h *Handler) admitStreamGet(w http.ResponseWriter, r *http.Request, who user.Info, req streamRequest) bool {
	gr := schema.GroupResource{Group: GroupName, Resource: "virtualmachineinstances"}
	if r.Method != http.MethodGet {
		h.writeError(w, r, apierrors.NewMethodNotSupported(gr, r.Method))
		return false
	}
	if err := h.authorize(r, who, "get", req.namespace, req.resource, req.verb, req.name); err != nil {
		h.writeError(w, r, err)
		return false
	}
	return true
}

// serveStream proxies a console, VNC or port-forward stream: the client's
// WebSocket to the node agent's.
func (h *Handler) serveStream(w http.ResponseWriter, r *http.Request, who user.Info, req streamRequest) {
	gr := schema.GroupResource{Group: GroupName, Resource: "virtualmachineinstances"}
	if !h.admitStreamGet(w, r, who, req) {
		return
	}
	if req.verb == "portforward" {
		if err := parsePortForward(req.rest); err != nil {
			h.writeError(w, r, apierrors.NewBadRequest("portforward: "+err.Error()))
			return
		}
	}
	if !websocket.IsWebSocketUpgrade(r) {
		h.writeError(w, r, apierrors.NewBadRequest(req.verb+": a WebSocket upgrade request (subprotocol "+StreamSubprotocol+") is required"))
		return
	}
	if h.nodes == nil {
		h.writeError(w, r, apierrors.NewServiceUnavailable(req.verb+": this API server has no credentials for node agents"))
		return
	}
	release, err := h.streams.Acquire(who.GetName())
	if err != nil {
		h.writeError(w, r, apierrors.NewTooManyRequests(req.verb+": "+err.Error(), 1))
		return
	}
	defer release()
	u, err := h.nodeEndpoint(r.Context(), gr, store.Key{Namespace: req.namespace, Name: req.name}, req.verb, req.rest)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	u.Scheme = "wss"
	dctx, cancel := context.WithTimeout(r.Context(), nodeDialTimeout)
	nodeWS, resp, err := h.nodes.dialer.DialContext(dctx, u.String(), nil)
	cancel()
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			_ = resp.Body.Close()
			h.writeError(w, r, nodeError(gr, req.name, resp.StatusCode, body))
			return
		}
		h.writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("%s: node endpoint %s: %v", req.verb, u.Host, err)))
		return
	}
	defer nodeWS.Close()
	up := websocket.Upgrader{
		Subprotocols: []string{StreamSubprotocol},
		// Clients authenticate with certificates or bearer tokens, never
		// cookies, so a browser page of another origin holds nothing to
		// replay: every origin may connect.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	client, err := up.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	defer client.Close()
	client.SetReadLimit(maxStreamMessageBytes)
	nodeWS.SetReadLimit(maxStreamMessageBytes)
	if err := bridge(r.Context(), client, nodeWS); err != nil {
		h.log.Debug("stream ended", "vmi", req.namespace+"/"+req.name, "verb", req.verb, "err", err)
	}
}

// nodeGuestInfo answers a guest-agent subresource through the node agent.
func (h *Handler) nodeGuestInfo(ctx context.Context, verb string, key store.Key) (any, error) {
	gr := schema.GroupResource{Group: GroupName, Resource: "virtualmachineinstances"}
	u, err := h.nodeEndpoint(ctx, gr, key, verb, nil)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	resp, err := h.nodes.http.Do(req)
	if err != nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("%s: node endpoint %s: %v", verb, u.Host, err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxNodeReplyBytes+1))
	if err != nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("%s: node endpoint %s: %v", verb, u.Host, err))
	}
	if len(body) > maxNodeReplyBytes {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("%s: node endpoint %s: reply larger than %d bytes", verb, u.Host, maxNodeReplyBytes))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nodeError(gr, key.Name, resp.StatusCode, body)
	}
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("%s: node endpoint %s: %v", verb, u.Host, err))
	}
	return v, nil
}
