//go:build prometheus

package prometheus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/internal/proctest"
)

// process is one command the test started.
type process struct {
	cmd  *exec.Cmd
	out  *proctest.Output
	done chan struct{}
	err  error // valid once done is closed
}

// start runs bin with args; the process is killed at the end of the test
// if it is still running, and its output is logged when the test failed.
func start(t *testing.T, name, bin string, args ...string) *process {
	t.Helper()
	p := &process{out: &proctest.Output{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	require.NoError(t, p.cmd.Start(), "starting %s", name)
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(5 * time.Second)
		if t.Failed() {
			t.Logf("--- %s output ---\n%s", name, tail(p.out.String(), 4000))
		}
	})
	return p
}

// stop interrupts the process and kills it if it has not exited within
// grace.
func (p *process) stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "...\n" + s[len(s)-n:]
}

// freeAddr returns a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

var forClause = regexp.MustCompile(`(?m)^(\s+)for: \S+\s*$`)

// writeConfig writes a Prometheus configuration into dir that scrapes
// target as job virtkit-controller every two seconds (a scrape may take
// that long on a loaded machine) and evaluates rulesFile every second,
// with every alert's `for` shortened to forDuration.
func writeConfig(t *testing.T, dir, rulesFile, target string, forDuration time.Duration) string {
	t.Helper()
	rules, err := os.ReadFile(rulesFile)
	require.NoError(t, err)
	require.True(t, forClause.Match(rules), "no `for:` clause found in %s", rulesFile)
	rules = forClause.ReplaceAll(rules, []byte("${1}for: "+forDuration.String()))
	rulesPath := filepath.Join(dir, "rules.yaml")
	require.NoError(t, os.WriteFile(rulesPath, rules, 0o600))

	config := fmt.Sprintf(`global:
  scrape_interval: 2s
  scrape_timeout: 2s
  evaluation_interval: 1s
rule_files:
  - %s
scrape_configs:
  - job_name: virtkit-controller
    static_configs:
      - targets: [%q]
`, rulesPath, target)
	path := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(path, []byte(config), 0o600))
	return path
}

// api is a client of Prometheus's HTTP API.
type api struct {
	base   string
	client *http.Client
}

// maxResponse bounds a response body read from Prometheus.
const maxResponse = 16 << 20

func (a *api) get(ctx context.Context, path string, params url.Values, data any) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	u := a.base + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return err
	}
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("GET %s: status %s: %w", path, resp.Status, err)
	}
	if env.Status != "success" {
		return fmt.Errorf("GET %s: %s", path, env.Error)
	}
	if data == nil {
		return nil
	}
	return json.Unmarshal(env.Data, data)
}

// ready reports whether the server answers /-/ready with 200.
func (a *api) ready(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/-/ready", nil)
	if err != nil {
		return false
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// series is one series of a query result, with its values as strings.
type series struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`  // instant: [time, "v"]
	Values [][]any           `json:"values"` // range: [[time, "v"], ...]
}

// query evaluates expr at the current time.
func (a *api) query(ctx context.Context, expr string) ([]series, error) {
	var data struct {
		ResultType string   `json:"resultType"`
		Result     []series `json:"result"`
	}
	if err := a.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: result type %s, want vector", expr, data.ResultType)
	}
	return data.Result, nil
}

// queryRange evaluates expr from start to end every step.
func (a *api) queryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]series, error) {
	var data struct {
		Result []series `json:"result"`
	}
	params := url.Values{
		"query": {expr},
		"start": {strconv.FormatInt(start.Unix(), 10)},
		"end":   {strconv.FormatInt(end.Unix(), 10)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	if err := a.get(ctx, "/api/v1/query_range", params, &data); err != nil {
		return nil, err
	}
	return data.Result, nil
}

// scalar evaluates expr and returns its one value.
func (a *api) scalar(ctx context.Context, expr string) (float64, error) {
	res, err := a.query(ctx, expr)
	if err != nil {
		return 0, err
	}
	if len(res) != 1 || len(res[0].Value) != 2 {
		return 0, fmt.Errorf("query %q: %d series, want 1", expr, len(res))
	}
	s, ok := res[0].Value[1].(string)
	if !ok {
		return 0, errors.New("query " + expr + ": value is not a string")
	}
	return strconv.ParseFloat(s, 64)
}

// alert is one entry of /api/v1/alerts.
type alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// alertState returns the state of the alert named name ("inactive" when
// it is neither pending nor firing).
func (a *api) alertState(ctx context.Context, name string) (string, error) {
	var data struct {
		Alerts []alert `json:"alerts"`
	}
	if err := a.get(ctx, "/api/v1/alerts", nil, &data); err != nil {
		return "", err
	}
	state := "inactive"
	for _, al := range data.Alerts {
		if al.Labels["alertname"] != name {
			continue
		}
		if al.State == "firing" {
			return "firing", nil
		}
		state = al.State
	}
	return state, nil
}
