package virtkit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The admission parity tests compare virtkit's verdict on a manifest with
// KubeVirt's. KubeVirt's verdicts are golden data: one JSON object a line,
// {file, doc, kind, allowed, error, causes: [{field, type, message}],
// mutated}, produced by running KubeVirt's own mutating and validating
// admission code (built from its public source, outside this module) over
// the same files. With -update and VIRTKIT_KUBEVIRT_ORACLE naming that
// program, the golden files are regenerated from it; without the program
// -update leaves them alone.

// oracleEnv names the KubeVirt admission oracle binary used by -update.
const oracleEnv = "VIRTKIT_KUBEVIRT_ORACLE"

type oracleCause struct {
	Field   string `json:"field"`
	Type    string `json:"type"`
	Message string `json:"message,omitempty"`
}

type oracleVerdict struct {
	File    string          `json:"file"`
	Doc     int             `json:"doc"`
	Kind    string          `json:"kind"`
	Allowed bool            `json:"allowed"`
	Error   string          `json:"error,omitempty"`
	Causes  []oracleCause   `json:"causes,omitempty"`
	Mutated json.RawMessage `json:"mutated,omitempty"`
}

// schemaPathRE finds the field an OpenAPI schema error names ("spec.template
// in body is required"); KubeVirt reports those causes without a field.
var schemaPathRE = regexp.MustCompile(`^([A-Za-z0-9_.\[\]]+) in body`)

// normaliseVerdict keeps what the tests compare: each cause's field path
// (taken from a schema error's text when the cause names none) and kind,
// not KubeVirt's wording; an oracle failure is kept as such.
func normaliseVerdict(v oracleVerdict) oracleVerdict {
	paths := v.paths()
	var causes []oracleCause
	for i, c := range v.Causes {
		f := c.Field
		if f == "" && i < len(paths) {
			if m := schemaPathRE.FindStringSubmatch(c.Message); m != nil {
				f = m[1]
			}
		}
		causes = append(causes, oracleCause{Field: f, Type: c.Type})
	}
	if len(v.Causes) == 0 && len(paths) > 0 {
		causes = append(causes, oracleCause{Field: paths[0], Type: "FieldValueInvalid"})
	}
	v.Causes = causes
	switch {
	case v.oracleFailed():
		v.Error = "oracle-panic: the oracle has no cluster objects for this manifest"
	case v.Error != "":
		v.Error = "rejected without a field"
	}
	return v
}

// oracleFailed says the oracle could not give a verdict: the manifest
// needs objects of a cluster it does not have (an instancetype, say).
func (v oracleVerdict) oracleFailed() bool {
	return strings.HasPrefix(v.Error, "oracle-panic:")
}

// paths returns the field paths of KubeVirt's causes, taking a schema
// error's path from its message; causes without any path are left out.
func (v oracleVerdict) paths() []string {
	var out []string
	for _, c := range v.Causes {
		p := c.Field
		if p == "" {
			if m := schemaPathRE.FindStringSubmatch(c.Message); m != nil {
				p = m[1]
			}
		}
		if p == "" && v.Error != "" {
			if m := schemaPathRE.FindStringSubmatch(v.Error); m != nil {
				p = m[1]
			}
		}
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(v.Causes) == 0 && v.Error != "" {
		if m := schemaPathRE.FindStringSubmatch(v.Error); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// splitOracleDocs splits a manifest file into documents the way the
// oracle does: at lines starting with "---", skipping documents with
// nothing but comments and blank lines.
func splitOracleDocs(data []byte) [][]byte {
	var out [][]byte
	for _, part := range bytes.Split(append([]byte("\n"), data...), []byte("\n---")) {
		empty := true
		for _, l := range bytes.Split(part, []byte("\n")) {
			if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
				empty = false
				break
			}
		}
		if !empty {
			out = append(out, part)
		}
	}
	return out
}

// virtkitVerdict runs one manifest document through what virtkit does on a
// user's create: strict decode, SetDefaults, Validate and AdmitCreate. It
// returns whether the object is admitted and every error's field path.
func virtkitVerdict(doc []byte) (allowed bool, paths []string, notSupported bool) {
	objs, err := DecodeBytes(doc)
	if err != nil {
		var joined interface{ Unwrap() []error }
		errs := []error{err}
		if errors.As(err, &joined) {
			errs = joined.Unwrap()
		}
		for _, e := range errs {
			var de *DecodeError
			if errors.As(e, &de) {
				paths = append(paths, de.Path)
			}
		}
		return false, paths, errors.Is(err, ErrNotSupported)
	}
	for _, obj := range objs {
		SetDefaults(obj)
		errs := Validate(obj)
		errs = append(errs, AdmitCreate(obj)...)
		// KubeVirt's default configuration, which the oracle ran with.
		errs = append(errs, AdmitFeatureGates(obj, FeatureGates{})...)
		for _, e := range errs {
			paths = append(paths, e.Field)
		}
	}
	return len(paths) == 0, paths, false
}

// indexRE matches list indexes and map keys in a field path.
var indexRE = regexp.MustCompile(`\[[^\]]*\]`)

// kubevirtPathSlips rewrite the field paths KubeVirt's admitters build
// wrongly (a missing parent, a doubled prefix, an object that does not
// exist) into the field they are about, which is what virtkit reports.
var kubevirtPathSlips = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`^nameservers$`), "spec.dnsConfig.nameservers"},
	{regexp.MustCompile(`^options$`), "spec.dnsConfig.options"},
	{regexp.MustCompile(`^spec\.(podAffinity|podAntiAffinity|nodeAffinity)\b`), "spec.affinity.$1"},
	{regexp.MustCompile(`^spec\[(\d+)\]\.bootOrder$`), "spec.domain.devices.interfaces[$1].bootOrder"},
	{regexp.MustCompile(`^spec\.domain\.devices\.disks\.domain\.devices\.disks\.disk\[(\d+)\]`), "spec.domain.devices.disks[$1].disk"},
	{regexp.MustCompile(`^spec\.domain\.devices\.disks\.domain\.devices\.disks\[(\d+)\]`), "spec.domain.devices.disks[$1]"},
	{regexp.MustCompile(`^spec\.interfaces$`), "spec.networks"},
	{regexp.MustCompile(`^spec\.HostDevices$`), "spec.domain.devices.hostDevices"},
}

// normalisePath applies kubevirtPathSlips; ok says whether one applied.
func normalisePath(p string) (string, bool) {
	for _, s := range kubevirtPathSlips {
		if s.re.MatchString(p) {
			return s.re.ReplaceAllString(p, s.repl), true
		}
	}
	return p, false
}

// pathAgrees says whether virtkit reported KubeVirt's path want: the same
// path, or the same once virtkit's list indexes and map keys are dropped
// (KubeVirt's schema errors have no indexes; its label errors name the
// map, virtkit's the key). A path KubeVirt builds wrongly is compared
// after normalisePath.
func pathAgrees(want string, got []string) bool {
	want, _ = normalisePath(want)
	for _, g := range got {
		if g == want || indexRE.ReplaceAllString(g, "") == want {
			return true
		}
	}
	return false
}

// parityCase is one manifest document with KubeVirt's and virtkit's
// verdicts.
type parityCase struct {
	name    string // file#metadata.name
	kv      oracleVerdict
	allowed bool
	paths   []string
	// notSupported: virtkit refused a KubeVirt field it does not model.
	notSupported bool
}

// parityFigures counts agreement as the issue measures it.
type parityFigures struct {
	kvAccepts, bothAccept int
	kvRejects, bothReject int
	withPath, pathAgree   int
	pathExact             int // without normalising KubeVirt's slips
}

func (f *parityFigures) add(c parityCase, kvPaths []string) {
	if c.kv.Allowed {
		f.kvAccepts++
		if c.allowed {
			f.bothAccept++
		}
		return
	}
	f.kvRejects++
	if !c.allowed {
		f.bothReject++
	}
	if len(kvPaths) > 0 {
		f.withPath++
		if !c.allowed && pathAgrees(kvPaths[0], c.paths) {
			f.pathAgree++
			if _, slip := normalisePath(kvPaths[0]); !slip {
				f.pathExact++
			}
		}
	}
}

func (f parityFigures) String() string {
	return "accepted " + ratio(f.bothAccept, f.kvAccepts) + " of what KubeVirt accepts, rejected " +
		ratio(f.bothReject, f.kvRejects) + " of what it rejects, KubeVirt's field path on " + ratio(f.pathAgree, f.withPath) +
		" (" + ratio(f.pathExact, f.withPath) + " character for character)"
}

func ratio(a, b int) string { return fmt.Sprintf("%d/%d", a, b) }

func itoa(n int) string { return strconv.Itoa(n) }

// loadVerdicts reads golden oracle output, regenerating it first under
// -update when the oracle binary is available.
func loadVerdicts(t *testing.T, dir, golden string) map[string]oracleVerdict {
	t.Helper()
	if *update {
		if bin := os.Getenv(oracleEnv); bin != "" {
			out, err := exec.Command(bin, dir).Output()
			require.NoError(t, err, "running the KubeVirt oracle %s", bin)
			var norm bytes.Buffer
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(make([]byte, 1<<20), 16<<20)
			for sc.Scan() {
				var v oracleVerdict
				require.NoError(t, json.Unmarshal(sc.Bytes(), &v))
				line, err := json.Marshal(normaliseVerdict(v))
				require.NoError(t, err)
				norm.Write(append(line, '\n'))
			}
			require.NoError(t, sc.Err())
			require.NoError(t, os.WriteFile(golden, norm.Bytes(), 0o644))
		} else {
			t.Logf("-update: %s not set, keeping %s", oracleEnv, golden)
		}
	}
	f, err := os.Open(golden)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]oracleVerdict{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var v oracleVerdict
		require.NoError(t, json.Unmarshal(sc.Bytes(), &v))
		out[filepath.Base(v.File)+"#"+itoa(v.Doc)] = v
	}
	require.NoError(t, sc.Err())
	return out
}

// runParity evaluates every document of every manifest in dir against
// KubeVirt's golden verdicts.
func runParity(t *testing.T, dir, golden string) ([]parityCase, parityFigures) {
	t.Helper()
	verdicts := loadVerdicts(t, dir, golden)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	sort.Strings(files)
	var cases []parityCase
	var fig parityFigures
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for i, doc := range splitOracleDocs(data) {
			key := filepath.Base(f) + "#" + itoa(i)
			kv, ok := verdicts[key]
			require.True(t, ok, "no KubeVirt verdict for %s: regenerate %s", key, golden)
			allowed, paths, notSupported := virtkitVerdict(doc)
			c := parityCase{name: filepath.Base(f) + "#" + docName(doc, i), kv: kv, allowed: allowed, paths: paths, notSupported: notSupported}
			if !kv.oracleFailed() {
				fig.add(c, kv.paths())
			}
			cases = append(cases, c)
		}
	}
	return cases, fig
}

var docNameRE = regexp.MustCompile(`(?m)^  name: (\S+)$`)

func docName(doc []byte, i int) string {
	if m := docNameRE.FindSubmatch(doc); m != nil {
		return string(m[1])
	}
	return itoa(i)
}

// admissionExceptions are the cases where virtkit differs from KubeVirt on
// purpose, each with the reason (CONFORMANCE.md lists them too).
var admissionExceptions = map[string]string{
	"vmi-network.yaml#sriov-pod":               "an SR-IOV VF cannot be bound to the pod network; KubeVirt accepts it and fails when it starts the VMI, virtkit refuses it on create",
	"vmi-network.yaml#mac-multicast":           "libvirt refuses a multicast MAC address; KubeVirt accepts it and fails when it starts the VMI, virtkit refuses it on create",
	"vmi-platform.yaml#firmware-uuid-bad":      "libvirt needs a UUID for the domain; KubeVirt accepts a malformed one and fails when it starts the VMI, virtkit refuses it on create",
	"vmi-platform.yaml#hyperv-spinlocks-low":   "QEMU needs at least 4095 spinlock retries; KubeVirt accepts fewer and fails when it starts the VMI, virtkit refuses it on create",
	"vmi-resources.yaml#resource-unknown-name": "virtkit schedules CPU and memory only: an extended resource (a device plugin's) is refused as not supported",
}

// TestAdmissionParityKubeVirtCases runs the cases of testdata/admission
// (manifests written after KubeVirt's admission tests) and requires
// virtkit to accept what KubeVirt accepts and to reject what it rejects
// with KubeVirt's field path, except for admissionExceptions.
func TestAdmissionParityKubeVirtCases(t *testing.T) {
	dir := filepath.Join("testdata", "admission")
	cases, fig := runParity(t, dir, filepath.Join(dir, "kubevirt-verdicts.golden.jsonl"))
	require.GreaterOrEqual(t, len(cases), 100)
	for _, c := range cases {
		require.False(t, c.kv.oracleFailed(), "%s: the oracle gave no verdict: %s", c.name, c.kv.Error)
		kvPaths := c.kv.paths()
		agree := c.kv.Allowed == c.allowed && (c.allowed || len(kvPaths) == 0 || pathAgrees(kvPaths[0], c.paths))
		if reason, ok := admissionExceptions[c.name]; ok {
			assert.False(t, agree, "%s agrees with KubeVirt now: drop its exception (%s)", c.name, reason)
			continue
		}
		assert.True(t, agree, "%s: KubeVirt allowed=%v paths=%v; virtkit allowed=%v paths=%v",
			c.name, c.kv.Allowed, kvPaths, c.allowed, c.paths)
	}
	t.Logf("%d cases: %s", len(cases), fig)
}

// docsNotModelled are the manifests in KubeVirt's documented shapes that
// use a feature virtkit does not model, with the field Decode names in its
// NotSupported error.
var docsNotModelled = map[string]string{}

// docsNeedCluster are documented manifests KubeVirt admits only against
// objects of a cluster (an instancetype), which the oracle does not have.
// The object alone must be valid; cluster.Apply checks the rest against
// its store (see the cluster package's instancetype tests).
var docsNeedCluster = map[string]string{
	"vm-instancetype.yaml#it": "spec.instancetype",
}

// docsExceptions are the documented manifests on which virtkit differs
// from KubeVirt on purpose.
var docsExceptions = map[string]string{}

// TestAdmissionParityDocsManifests runs KubeVirt's example manifests
// (testdata/kubevirt-examples) and manifests in the shapes of its user
// guide (testdata/kubevirt-docs) through virtkit and compares with
// KubeVirt's verdicts. A manifest using a feature virtkit does not model
// must be refused with a NotSupported error naming that field.
func TestAdmissionParityDocsManifests(t *testing.T) {
	var all []parityCase
	var total parityFigures
	for _, d := range []struct{ dir, golden string }{
		{filepath.Join("testdata", "kubevirt-examples"), filepath.Join("testdata", "admission", "kubevirt-examples-verdicts.golden.jsonl")},
		{filepath.Join("testdata", "kubevirt-docs"), filepath.Join("testdata", "kubevirt-docs", "kubevirt-verdicts.golden.jsonl")},
	} {
		cases, fig := runParity(t, d.dir, d.golden)
		all = append(all, cases...)
		total.kvAccepts += fig.kvAccepts
		total.bothAccept += fig.bothAccept
		total.kvRejects += fig.kvRejects
		total.bothReject += fig.bothReject
		total.withPath += fig.withPath
		total.pathAgree += fig.pathAgree
		total.pathExact += fig.pathExact
	}
	notModelled := 0
	for _, c := range all {
		if want, ok := docsNotModelled[c.name]; ok {
			notModelled++
			assert.True(t, c.notSupported, "%s: want a NotSupported error, got allowed=%v paths=%v", c.name, c.allowed, c.paths)
			assert.Contains(t, c.paths, want, c.name)
			continue
		}
		assert.False(t, c.notSupported, "%s: refused as not supported: %v", c.name, c.paths)
		if _, ok := docsNeedCluster[c.name]; ok {
			assert.True(t, c.allowed, "%s: the VM alone is valid; got paths %v", c.name, c.paths)
			continue
		}
		if c.kv.oracleFailed() {
			t.Errorf("%s: no KubeVirt verdict (%s) and no expectation", c.name, c.kv.Error)
			continue
		}
		kvPaths := c.kv.paths()
		agree := c.kv.Allowed == c.allowed && (c.allowed || len(kvPaths) == 0 || pathAgrees(kvPaths[0], c.paths))
		if reason, ok := docsExceptions[c.name]; ok {
			assert.False(t, agree, "%s agrees with KubeVirt now: drop its exception (%s)", c.name, reason)
			continue
		}
		assert.True(t, agree, "%s: KubeVirt allowed=%v paths=%v; virtkit allowed=%v paths=%v",
			c.name, c.kv.Allowed, kvPaths, c.allowed, c.paths)
	}
	t.Logf("%d manifests, %d use a feature virtkit does not model: %s", len(all), notModelled, total)
}
