package virtkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ErrVMPatch wraps the failures of applying a restore's or a clone's
// patches to the VirtualMachine it makes.
var ErrVMPatch = errors.New("VirtualMachine patch")

// vmPatchPrefixes are the paths a restore or clone patch may touch, as
// KubeVirt's restore admission allows: the VM's labels and annotations
// and anything under its spec.
var vmPatchPrefixes = []string{"/spec/", "/metadata/labels/", "/metadata/annotations/"}

// vmPatchOps are the JSON patch (RFC 6902) operations.
var vmPatchOps = []string{"add", "remove", "replace", "move", "copy", "test"}

// vmPatchOp is one JSON patch operation as written in a patch string.
type vmPatchOp struct {
	Op    string           `json:"op"`
	Path  *string          `json:"path"`
	From  *string          `json:"from"`
	Value *json.RawMessage `json:"value"`
}

// ValidateVMPatches checks the patches of a VirtualMachineRestore or a
// VirtualMachineClone: each is one JSON patch operation (a JSON object
// such as {"op": "replace", "path": "/spec/template/metadata/labels/app",
// "value": "x"}) whose path (and from, for move and copy) lies under
// /spec/, /metadata/labels/ or /metadata/annotations/, as KubeVirt's
// restore admission allows (a clone is restored through the same rule).
func ValidateVMPatches(patches []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, raw := range patches {
		ip := p.Index(i)
		var op vmPatchOp
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&op); err != nil {
			errs = append(errs, field.Invalid(ip, raw, fmt.Sprintf("must be one JSON patch operation, a JSON object with op, path and value: %v", err)))
			continue
		}
		if dec.More() {
			errs = append(errs, field.Invalid(ip, raw, "must be a single JSON patch operation"))
			continue
		}
		if !containsString(vmPatchOps, op.Op) {
			errs = append(errs, field.NotSupported(ip.Child("op"), op.Op, vmPatchOps))
			continue
		}
		if op.Path == nil {
			errs = append(errs, field.Required(ip.Child("path"), "the JSON pointer the operation applies to"))
		} else if !vmPatchPathAllowed(*op.Path) {
			errs = append(errs, field.Invalid(ip.Child("path"), *op.Path, "patching is valid only under /spec/, /metadata/labels/ and /metadata/annotations/"))
		}
		switch op.Op {
		case "move", "copy":
			if op.From == nil {
				errs = append(errs, field.Required(ip.Child("from"), "the JSON pointer "+op.Op+" reads"))
			} else if !vmPatchPathAllowed(*op.From) {
				errs = append(errs, field.Invalid(ip.Child("from"), *op.From, "patching is valid only under /spec/, /metadata/labels/ and /metadata/annotations/"))
			}
		case "add", "replace", "test":
			if op.Value == nil {
				errs = append(errs, field.Required(ip.Child("value"), "the value "+op.Op+" writes"))
			}
		}
	}
	return errs
}

func vmPatchPathAllowed(path string) bool {
	for _, prefix := range vmPatchPrefixes {
		if strings.HasPrefix(path, prefix) && len(path) > len(prefix) {
			return true
		}
	}
	return false
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ApplyVMPatches returns a copy of vm with the patches (checked by
// ValidateVMPatches) applied in order to its JSON form. A patch that does
// not apply (a missing path, a failed test) or that leaves a VM virtkit
// cannot read (an unknown field) is an error wrapping ErrVMPatch; vm is
// not changed.
func ApplyVMPatches(vm *VirtualMachine, patches []string) (*VirtualMachine, error) {
	if len(patches) == 0 {
		return vm.DeepCopy(), nil
	}
	if errs := ValidateVMPatches(patches, field.NewPath("patches")); len(errs) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrVMPatch, errs.ToAggregate().Error())
	}
	doc, err := json.Marshal(vm)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrVMPatch, err)
	}
	patch, err := jsonpatch.DecodePatch([]byte("[" + strings.Join(patches, ",") + "]"))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrVMPatch, err)
	}
	out, err := patch.Apply(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: VirtualMachine %s: %v", ErrVMPatch, vm.Name, err)
	}
	patched := &VirtualMachine{}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(patched); err != nil {
		return nil, fmt.Errorf("%w: VirtualMachine %s after the patches: %v", ErrVMPatch, vm.Name, err)
	}
	return patched, nil
}
