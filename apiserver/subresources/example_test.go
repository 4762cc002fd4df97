package subresources_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/virtkit/virtkit/apiserver/subresources"
	"github.com/virtkit/virtkit/store"
)

// A server mounts the handler under /apis/subresources.kubevirt.io/ behind
// its authentication, which puts the user in the request's context (here
// a stand-in for a generic API server's filter chain).
func ExampleNew() {
	h, err := subresources.New(subresources.Options{Store: store.NewMemory()})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/apis/subresources.kubevirt.io/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
		h.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), u)))
	}))

	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodPut, "/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachines/vm-0/start", nil))
	fmt.Println(w.Code)
	w = httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodPut, "/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachines/vm-0/addvolume", nil))
	fmt.Println(w.Code)
	fmt.Println(subresources.APIGroup().PreferredVersion.GroupVersion)
	// Output:
	// 404
	// 400
	// subresources.kubevirt.io/v1
}
