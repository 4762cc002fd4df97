package domain_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

func ExampleBuildXML() {
	off := false
	guest := resource.MustParse("128Mi")
	vmi := &virtkit.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "tiny", UID: "0f4c5bd6-3c8a-4cba-9c55-4c1d0f5e8a01"},
		Spec: virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{
			Firmware: &virtkit.Firmware{UUID: "5d307ca9-b3ef-428c-8861-06e72d69f223"},
			Memory:   &virtkit.Memory{Guest: &guest},
			Devices: virtkit.Devices{
				AutoattachGraphicsDevice: &off,
				AutoattachSerialConsole:  &off,
				AutoattachMemBalloon:     &off,
			},
		}},
	}
	doc, err := domain.BuildXML(vmi, domain.Options{RuntimeDir: "/run/vk"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(doc)
	// Output:
	// <domain type="qemu">
	//   <name>demo_tiny</name>
	//   <uuid>5d307ca9-b3ef-428c-8861-06e72d69f223</uuid>
	//   <metadata><kubevirt xmlns="http://kubevirt.io"><uid>0f4c5bd6-3c8a-4cba-9c55-4c1d0f5e8a01</uid><namespace>demo</namespace><name>tiny</name><graceperiod><deletionGracePeriodSeconds>30</deletionGracePeriodSeconds></graceperiod></kubevirt></metadata>
	//   <memory unit="b">134217728</memory>
	//   <vcpu placement="static">1</vcpu>
	//   <sysinfo type="smbios">
	//     <system>
	//       <entry name="manufacturer">KubeVirt</entry>
	//       <entry name="product">None</entry>
	//       <entry name="uuid">5d307ca9-b3ef-428c-8861-06e72d69f223</entry>
	//       <entry name="family">KubeVirt</entry>
	//     </system>
	//   </sysinfo>
	//   <os>
	//     <type arch="x86_64" machine="q35">hvm</type>
	//     <smbios mode="sysinfo"></smbios>
	//   </os>
	//   <features>
	//     <acpi></acpi>
	//     <vmport state="off"></vmport>
	//   </features>
	//   <cpu mode="host-model">
	//     <topology sockets="1" cores="1" threads="1"></topology>
	//   </cpu>
	//   <clock offset="utc"></clock>
	//   <devices>
	//     <controller type="usb" index="0" model="none"></controller>
	//     <controller type="scsi" index="0" model="virtio-non-transitional"></controller>
	//     <channel type="unix">
	//       <source mode="bind" path="/run/vk/0f4c5bd6-3c8a-4cba-9c55-4c1d0f5e8a01/qga.sock"></source>
	//       <target type="virtio" name="org.qemu.guest_agent.0"></target>
	//     </channel>
	//     <memballoon model="none"></memballoon>
	//   </devices>
	// </domain>
}
