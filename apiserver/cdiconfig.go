package apiserver

import (
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

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

// withCDIConfig answers get and list of cdi.kubevirt.io cdiconfigs (the
// one named "config") ahead of the API handler, after the filter chain has
// authenticated and authorized the request.
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
		switch name := strings.TrimPrefix(p, cdiConfigPath); name {
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
