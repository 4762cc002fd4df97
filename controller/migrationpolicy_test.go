package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
)

func policy(name string, vmiSel, nsSel map[string]string) virtkit.MigrationPolicy {
	p := virtkit.MigrationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if vmiSel != nil || nsSel != nil {
		p.Spec.Selectors = &virtkit.Selectors{VirtualMachineInstanceSelector: vmiSel, NamespaceSelector: nsSel}
	}
	return p
}

func TestMatchMigrationPolicy(t *testing.T) {
	vmiLabels := map[string]string{"app": "db", "tier": "gold", "team": "a"}
	nsLabels := map[string]string{"env": "prod", "region": "eu"}
	empty := map[string]string{}
	tests := []struct {
		name     string
		policies []virtkit.MigrationPolicy
		vmi      map[string]string
		ns       map[string]string
		want     string // "" = no policy
	}{
		{name: "no policies", vmi: vmiLabels, ns: nsLabels},
		{name: "nil selectors never match",
			policies: []virtkit.MigrationPolicy{policy("a", nil, nil)}, vmi: vmiLabels, ns: nsLabels},
		{name: "empty selectors match with score zero",
			policies: []virtkit.MigrationPolicy{policy("a", empty, empty)}, vmi: vmiLabels, ns: nsLabels, want: "a"},
		{name: "a missing VMI key does not match",
			policies: []virtkit.MigrationPolicy{policy("a", map[string]string{"app": "db", "zone": "x"}, nil)}, vmi: vmiLabels, ns: nsLabels},
		{name: "a different VMI value does not match",
			policies: []virtkit.MigrationPolicy{policy("a", map[string]string{"app": "web"}, nil)}, vmi: vmiLabels, ns: nsLabels},
		{name: "a missing namespace key does not match",
			policies: []virtkit.MigrationPolicy{policy("a", nil, map[string]string{"env": "dev"})}, vmi: vmiLabels, ns: nsLabels},
		{name: "more matched labels win",
			policies: []virtkit.MigrationPolicy{
				policy("one", map[string]string{"app": "db"}, nil),
				policy("two", map[string]string{"app": "db", "tier": "gold"}, nil),
			}, vmi: vmiLabels, ns: nsLabels, want: "two"},
		{name: "namespace labels count towards the total",
			policies: []virtkit.MigrationPolicy{
				policy("vmi2", map[string]string{"app": "db", "tier": "gold"}, nil),
				policy("mixed3", map[string]string{"app": "db"}, map[string]string{"env": "prod", "region": "eu"}),
			}, vmi: vmiLabels, ns: nsLabels, want: "mixed3"},
		{name: "equal totals: more VMI labels win",
			policies: []virtkit.MigrationPolicy{
				policy("ns-heavy", map[string]string{"app": "db"}, map[string]string{"env": "prod"}),
				policy("vmi-heavy", map[string]string{"app": "db", "tier": "gold"}, nil),
			}, vmi: vmiLabels, ns: nsLabels, want: "vmi-heavy"},
		{name: "full tie: smallest name wins",
			policies: []virtkit.MigrationPolicy{
				policy("zeta", map[string]string{"app": "db"}, nil),
				policy("alpha", map[string]string{"tier": "gold"}, nil),
				policy("mid", map[string]string{"team": "a"}, nil),
			}, vmi: vmiLabels, ns: nsLabels, want: "alpha"},
		{name: "a VMI without labels skips both selectors (KubeVirt quirk)",
			policies: []virtkit.MigrationPolicy{
				policy("b", map[string]string{"app": "db"}, map[string]string{"env": "dev"}),
				policy("a", map[string]string{"app": "web"}, nil),
			}, vmi: nil, ns: nsLabels, want: "a"},
		{name: "namespace selector against a namespace without labels",
			policies: []virtkit.MigrationPolicy{policy("a", nil, map[string]string{"env": "prod"})}, vmi: vmiLabels, ns: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Labels: tt.vmi}}
			got := MatchMigrationPolicy(tt.policies, vmi, tt.ns)
			if tt.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tt.want, got.Name)
		})
	}
}

func TestClusterMigrationConfigurationDefaults(t *testing.T) {
	cfg := virtkit.ClusterMigrationConfiguration(nil)
	assert.Equal(t, uint32(5), *cfg.ParallelMigrationsPerCluster)
	assert.Equal(t, uint32(2), *cfg.ParallelOutboundMigrationsPerNode)
	assert.True(t, cfg.BandwidthPerMigration.IsZero())
	assert.Equal(t, "0", cfg.BandwidthPerMigration.String())
	assert.Equal(t, int64(150), *cfg.CompletionTimeoutPerGiB)
	assert.Equal(t, int64(150), *cfg.ProgressTimeout)
	assert.Equal(t, uint64(900), *cfg.MaxDowntimeMs)
	assert.False(t, *cfg.AllowAutoConverge)
	assert.False(t, *cfg.AllowPostCopy)
	assert.False(t, *cfg.AllowWorkloadDisruption, "follows allowPostCopy")
	assert.False(t, *cfg.UnsafeMigrationOverride)
	assert.Nil(t, cfg.DisableTLS)
	assert.Nil(t, cfg.Network)

	// A cluster override replaces only what it sets.
	over := virtkit.ClusterMigrationConfiguration(&virtkit.MigrationConfiguration{
		ParallelMigrationsPerCluster: ptrTo[uint32](9), AllowPostCopy: ptrTo(true),
	})
	assert.Equal(t, uint32(9), *over.ParallelMigrationsPerCluster)
	assert.Equal(t, uint32(2), *over.ParallelOutboundMigrationsPerNode)
	assert.True(t, *over.AllowWorkloadDisruption, "follows allowPostCopy when unset")
}

func TestResolveMigrationConfiguration(t *testing.T) {
	bw := resource.MustParse("64Mi")
	tests := []struct {
		name    string
		cluster *virtkit.MigrationConfiguration
		spec    *virtkit.MigrationPolicySpec
		check   func(t *testing.T, c *virtkit.MigrationConfiguration)
	}{
		{name: "no policy: cluster defaults", check: func(t *testing.T, c *virtkit.MigrationConfiguration) {
			assert.Equal(t, int64(150), *c.CompletionTimeoutPerGiB)
			assert.False(t, *c.AllowPostCopy)
		}},
		{name: "policy fields override", spec: &virtkit.MigrationPolicySpec{
			AllowAutoConverge: ptrTo(true), BandwidthPerMigration: &bw, CompletionTimeoutPerGiB: ptrTo[int64](10), MaxDowntimeMs: ptrTo[uint64](50),
		}, check: func(t *testing.T, c *virtkit.MigrationConfiguration) {
			assert.True(t, *c.AllowAutoConverge)
			assert.Equal(t, int64(64<<20), c.BandwidthPerMigration.Value())
			assert.Equal(t, int64(10), *c.CompletionTimeoutPerGiB)
			assert.Equal(t, uint64(50), *c.MaxDowntimeMs)
			assert.Equal(t, int64(150), *c.ProgressTimeout, "a policy cannot change progressTimeout")
		}},
		{name: "allowWorkloadDisruption follows the policy's allowPostCopy", spec: &virtkit.MigrationPolicySpec{AllowPostCopy: ptrTo(true)},
			check: func(t *testing.T, c *virtkit.MigrationConfiguration) {
				assert.True(t, *c.AllowPostCopy)
				assert.True(t, *c.AllowWorkloadDisruption)
			}},
		{name: "an explicit allowWorkloadDisruption wins", spec: &virtkit.MigrationPolicySpec{AllowPostCopy: ptrTo(true), AllowWorkloadDisruption: ptrTo(false)},
			check: func(t *testing.T, c *virtkit.MigrationConfiguration) {
				assert.True(t, *c.AllowPostCopy)
				assert.False(t, *c.AllowWorkloadDisruption)
			}},
		{name: "the completion extension is off by default", check: func(t *testing.T, c *virtkit.MigrationConfiguration) {
			assert.Nil(t, c.VirtkitMaxCompletionTimeoutPerGiB)
		}},
		{name: "the cluster's completion extension applies under a policy that sets no timeout",
			cluster: &virtkit.MigrationConfiguration{VirtkitMaxCompletionTimeoutPerGiB: ptrTo[int64](800)},
			spec:    &virtkit.MigrationPolicySpec{AllowAutoConverge: ptrTo(true)},
			check: func(t *testing.T, c *virtkit.MigrationConfiguration) {
				assert.Equal(t, int64(150), *c.CompletionTimeoutPerGiB)
				require.NotNil(t, c.VirtkitMaxCompletionTimeoutPerGiB)
				assert.Equal(t, int64(800), *c.VirtkitMaxCompletionTimeoutPerGiB)
			}},
		{name: "a policy's explicit completion timeout is final",
			cluster: &virtkit.MigrationConfiguration{VirtkitMaxCompletionTimeoutPerGiB: ptrTo[int64](800)},
			spec:    &virtkit.MigrationPolicySpec{CompletionTimeoutPerGiB: ptrTo[int64](20)},
			check: func(t *testing.T, c *virtkit.MigrationConfiguration) {
				assert.Equal(t, int64(20), *c.CompletionTimeoutPerGiB)
				assert.Nil(t, c.VirtkitMaxCompletionTimeoutPerGiB, "no extension past the policy's timeout")
			}},
		{name: "a policy cannot change parallelism", cluster: &virtkit.MigrationConfiguration{ParallelMigrationsPerCluster: ptrTo[uint32](1)},
			spec: &virtkit.MigrationPolicySpec{AllowPostCopy: ptrTo(false)},
			check: func(t *testing.T, c *virtkit.MigrationConfiguration) {
				assert.Equal(t, uint32(1), *c.ParallelMigrationsPerCluster)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p *virtkit.MigrationPolicy
			if tt.spec != nil {
				p = &virtkit.MigrationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: *tt.spec}
			}
			before := p.DeepCopy()
			got := ResolveMigrationConfiguration(tt.cluster, p)
			tt.check(t, got)
			assert.Equal(t, before, p, "the policy is not modified")
		})
	}
}
