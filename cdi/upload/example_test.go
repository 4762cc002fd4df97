package upload_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/virtkit/virtkit/cdi/upload"
)

// printReceiver stands for the node storage an upload goes to
// (cluster.Cluster or importer.Worker).
type printReceiver struct{}

func (printReceiver) ReceiveUpload(_ context.Context, ns, name string, body io.Reader) (func(context.Context) error, error) {
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	return func(context.Context) error {
		fmt.Printf("%d bytes into %s/%s\n", len(b), ns, name)
		return nil
	}, nil
}

// The API server issues a token for a claim (uploadtokenrequests); the
// upload proxy takes an upload presenting it.
func Example() {
	key, err := upload.NewKey()
	if err != nil {
		panic(err)
	}
	tokens := &upload.Tokens{Key: key}
	proxy, err := upload.NewProxy(upload.ProxyOptions{Tokens: tokens, Receiver: printReceiver{}})
	if err != nil {
		panic(err)
	}
	defer proxy.Close()
	srv := httptest.NewTLSServer(proxy)
	defer srv.Close()

	token, err := tokens.Issue("default", "fedora")
	if err != nil {
		panic(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+upload.PathUpload, strings.NewReader("disk image bytes"))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := srv.Client().Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output:
	// 16 bytes into default/fedora
	// 200 OK
}
