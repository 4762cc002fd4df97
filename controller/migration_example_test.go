package controller_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/controller"
)

// The policy that matches the most labels of the VMI and its namespace
// wins, and its fields go over the cluster configuration.
func ExampleMatchMigrationPolicy() {
	bw := resource.MustParse("64Mi")
	yes := true
	policies := []virtkit.MigrationPolicy{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "all-prod"},
			Spec: virtkit.MigrationPolicySpec{
				Selectors:         &virtkit.Selectors{NamespaceSelector: virtkit.LabelSelectorMap{"env": "prod"}},
				AllowAutoConverge: &yes,
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "prod-databases"},
			Spec: virtkit.MigrationPolicySpec{
				Selectors: &virtkit.Selectors{
					NamespaceSelector:              virtkit.LabelSelectorMap{"env": "prod"},
					VirtualMachineInstanceSelector: virtkit.LabelSelectorMap{"app": "db"},
				},
				BandwidthPerMigration: &bw,
				AllowPostCopy:         &yes,
			},
		},
	}
	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}}}
	p := controller.MatchMigrationPolicy(policies, vmi, map[string]string{"env": "prod"})
	cfg := controller.ResolveMigrationConfiguration(nil, p)
	fmt.Println("policy:", p.Name)
	fmt.Println("bandwidth:", cfg.BandwidthPerMigration.String())
	fmt.Println("post-copy:", *cfg.AllowPostCopy, "workload disruption:", *cfg.AllowWorkloadDisruption)
	fmt.Println("auto-converge:", *cfg.AllowAutoConverge, "(cluster default)")
	fmt.Println("completion timeout per GiB:", *cfg.CompletionTimeoutPerGiB)
	// Output:
	// policy: prod-databases
	// bandwidth: 64Mi
	// post-copy: true workload disruption: true
	// auto-converge: false (cluster default)
	// completion timeout per GiB: 150
}
