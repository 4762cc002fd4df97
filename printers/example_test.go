package printers_test

import (
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/printers"
)

// The Table kubectl receives for VirtualMachines, printed as kubectl
// prints it.
func Example() {
	created := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	vm := &virtkit.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", CreationTimestamp: metav1.NewTime(created)},
		Status: virtkit.VirtualMachineStatus{PrintableStatus: virtkit.VirtualMachineStatusRunning,
			Conditions: []virtkit.Condition{{Type: virtkit.VirtualMachineReady, Status: virtkit.ConditionTrue}}},
	}
	table := printers.NewTable(printers.Columns(virtkit.KindVirtualMachine), []virtkit.Object{vm},
		printers.TableOptions{Now: created.Add(5 * time.Minute)})
	p := printers.Printer{W: os.Stdout, WithNamespace: true}
	_ = p.Print(table)
	// Output:
	// NAMESPACE   NAME   AGE   STATUS    READY
	// default     web    5m    Running   True
}
