package domain_test

import (
	"fmt"

	"github.com/virtkit/virtkit/domain"
)

// A migration target prepared the guest's network on its own bridge; the
// source rewrites the domain XML it sends so the NIC attaches there.
func ExampleRetargetInterfaces() {
	src := `<domain type="qemu"><name>default_vm1</name><memory>131072</memory><devices>` +
		`<interface type="bridge"><mac address="52:54:00:aa:bb:cc"></mac><source bridge="vkmsource01"></source>` +
		`<alias name="ua-default"></alias></interface></devices></domain>`
	out, err := domain.RetargetInterfaces(src, map[string]domain.HostNetwork{
		"default": {Type: domain.AttachBridge, Source: "vkmtarget02"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// <domain type="qemu">
	//   <name>default_vm1</name>
	//   <memory>131072</memory>
	//   <devices>
	//     <interface type="bridge">
	//       <mac address="52:54:00:aa:bb:cc"></mac>
	//       <source bridge="vkmtarget02"></source>
	//       <alias name="ua-default"></alias>
	//     </interface>
	//   </devices>
	// </domain>
}
