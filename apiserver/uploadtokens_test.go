package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit/apiserver"
)

// issuer records what it issued tokens for.
type issuer struct{ issued []string }

func (i *issuer) Issue(ns, name string) (string, error) {
	i.issued = append(i.issued, ns+"/"+name)
	return "token-for-" + ns + "-" + name, nil
}

func TestUploadTokenRequests(t *testing.T) {
	iss := &issuer{}
	ts := startGeneric(t, apiserver.GenericOptions{UploadTokens: iss, UploadProxyURL: "https://127.0.0.1:8443",
		Authorizer: legacyAuthorizer(t, "rules:\n- user: alice\n  namespaces: [team-a]\n  verbs: [create]\n  resources: [uploadtokenrequests]\n")})
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(ts.admin()).CoreV1().RESTClient()
	post := func(c rest.Interface, ns, body string) ([]byte, error) {
		return c.Post().AbsPath("/apis/upload.cdi.kubevirt.io/v1beta1/namespaces", ns, "uploadtokenrequests").
			SetHeader("Content-Type", "application/json").Body([]byte(body)).DoRaw(ctx)
	}
	raw, err := post(admin, "default", `{"apiVersion":"upload.cdi.kubevirt.io/v1beta1","kind":"UploadTokenRequest","metadata":{"name":"t"},"spec":{"pvcName":"disk"}}`)
	require.NoError(t, err, "%s", raw)
	var got apiserver.UploadTokenRequest
	require.NoError(t, json.Unmarshal(raw, &got))
	assert.Equal(t, "token-for-default-disk", got.Status.Token)
	assert.Equal(t, "default", got.Namespace)
	assert.Equal(t, "UploadTokenRequest", got.Kind)
	assert.Equal(t, []string{"default/disk"}, iss.issued)

	tests := []struct {
		name, ns, body string
		check          func(error) bool
	}{
		{"no pvcName", "default", `{"spec":{}}`, apierrors.IsInvalid},
		{"bad pvcName", "default", `{"spec":{"pvcName":"Not_A_Name"}}`, apierrors.IsInvalid},
		{"other kind", "default", `{"kind":"Pod","spec":{"pvcName":"disk"}}`, apierrors.IsInvalid},
		{"other namespace", "default", `{"metadata":{"namespace":"x"},"spec":{"pvcName":"disk"}}`, apierrors.IsInvalid},
		{"not json", "default", `{`, apierrors.IsBadRequest},
		{"too large", "default", `{"spec":{"pvcName":"disk"},"x":"` + strings.Repeat("a", 70<<10) + `"}`, apierrors.IsRequestEntityTooLargeError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := post(admin, tt.ns, tt.body)
			require.True(t, tt.check(err), "%v", err)
		})
	}
	assert.Len(t, iss.issued, 1, "no token for a refused request")

	// Authorized as create uploadtokenrequests in the namespace.
	alice := kubernetes.NewForConfigOrDie(ts.cert(t, "alice")).CoreV1().RESTClient()
	_, err = post(alice, "team-a", `{"spec":{"pvcName":"disk"}}`)
	require.NoError(t, err)
	_, err = post(alice, "team-b", `{"spec":{"pvcName":"disk"}}`)
	require.True(t, apierrors.IsForbidden(err), "%v", err)

	// Only create is served.
	_, err = admin.Get().AbsPath("/apis/upload.cdi.kubevirt.io/v1beta1/namespaces/default/uploadtokenrequests/t").DoRaw(ctx)
	require.True(t, apierrors.IsMethodNotSupported(err), "%v", err)

	// Discovery lists the group.
	dc := discovery.NewDiscoveryClientForConfigOrDie(ts.admin())
	res, err := dc.ServerResourcesForGroupVersion("upload.cdi.kubevirt.io/v1beta1")
	require.NoError(t, err)
	require.Len(t, res.APIResources, 1)
	assert.Equal(t, "uploadtokenrequests", res.APIResources[0].Name)

	// CDIConfig names the upload proxy; it is read-only.
	raw, err = admin.Get().AbsPath("/apis/cdi.kubevirt.io/v1beta1/cdiconfigs/config").DoRaw(ctx)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"uploadProxyURL":"https://127.0.0.1:8443"`)
	raw, err = admin.Get().AbsPath("/apis/cdi.kubevirt.io/v1beta1/cdiconfigs").DoRaw(ctx)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"kind":"CDIConfigList"`)
	_, err = admin.Delete().AbsPath("/apis/cdi.kubevirt.io/v1beta1/cdiconfigs/config").DoRaw(ctx)
	require.True(t, apierrors.IsMethodNotSupported(err), "%v", err)
	// Without credentials, neither is served.
	resp, err := ts.anonymous(t).Post(ts.URL+"/apis/upload.cdi.kubevirt.io/v1beta1/namespaces/default/uploadtokenrequests",
		"application/json", bytes.NewReader([]byte(`{"spec":{"pvcName":"disk"}}`)))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, resp.StatusCode)
}

// Without UploadTokens the group is not served.
func TestUploadTokenRequestsOff(t *testing.T) {
	ts := startGeneric(t, apiserver.GenericOptions{})
	_, err := kubernetes.NewForConfigOrDie(ts.admin()).CoreV1().RESTClient().Post().
		AbsPath("/apis/upload.cdi.kubevirt.io/v1beta1/namespaces/default/uploadtokenrequests").
		SetHeader("Content-Type", "application/json").Body([]byte(`{"spec":{"pvcName":"disk"}}`)).DoRaw(context.Background())
	require.True(t, apierrors.IsNotFound(err), "%v", err)
}
