package apiserver

import (
	"net/http"
	"strings"
)

// serveOpenAPI answers /openapi/v3 and /openapi/v3/apis/GROUP/VERSION with
// a minimal OpenAPI v3 document per group version: the resources' paths,
// each operation tagged with its GroupVersionKind and the query parameters
// the server honours (fieldValidation, dryRun), so kubectl validates on the
// server (virtkit's strict decoding) instead of against schemas. It holds
// no schemas. false if the path is not an OpenAPI one.
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	if p == "/openapi/v3" {
		paths := map[string]any{}
		for _, gv := range s.groups {
			paths["apis/"+gv.String()] = map[string]string{"serverRelativeURL": "/openapi/v3/apis/" + gv.String()}
		}
		s.writeJSONValue(w, http.StatusOK, map[string]any{"paths": paths})
		return true
	}
	rest, ok := strings.CutPrefix(p, "/openapi/v3/apis/")
	if !ok {
		return false
	}
	for _, gv := range s.groups {
		if gv.String() != rest {
			continue
		}
		paths := map[string]any{}
		for _, res := range s.resources {
			if res.gvk.GroupVersion() != gv {
				continue
			}
			gvk := map[string]string{"group": res.gvk.Group, "version": res.gvk.Version, "kind": res.gvk.Kind}
			op := func(action string, params ...string) map[string]any {
				ps := []map[string]any{}
				for _, name := range params {
					ps = append(ps, map[string]any{"name": name, "in": "query", "schema": map[string]string{"type": "string"}})
				}
				return map[string]any{
					"operationId":                     action + res.gvk.Kind,
					"x-kubernetes-action":             action,
					"x-kubernetes-group-version-kind": gvk,
					"parameters":                      ps,
					"responses":                       map[string]any{"200": map[string]string{"description": "OK"}},
				}
			}
			base := "/apis/" + gv.String() + "/"
			if res.namespaced {
				base += "namespaces/{namespace}/"
			}
			paths[base+res.plural] = map[string]any{
				"get":  op("list", "labelSelector", "fieldSelector", "limit", "continue", "resourceVersion", "watch"),
				"post": op("post", "dryRun", "fieldValidation", "fieldManager"),
			}
			paths[base+res.plural+"/{name}"] = map[string]any{
				"get":    op("get"),
				"put":    op("put", "dryRun", "fieldValidation", "fieldManager"),
				"patch":  op("patch", "dryRun", "fieldValidation", "fieldManager"),
				"delete": op("delete", "dryRun"),
			}
		}
		s.writeJSONValue(w, http.StatusOK, map[string]any{
			"openapi": "3.0.0",
			"info":    map[string]string{"title": "virtkit", "version": gv.Version},
			"paths":   paths,
		})
		return true
	}
	return false
}
