package virtkit

import (
	"fmt"
	"math"
	"math/big"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxVCPUs bounds a VMI's vCPU count, sockets × cores × threads (and
// maxSockets × cores × threads with CPU hot-plug room), and so each of the
// three factors: 4096 is the largest x86 machine type QEMU offers (q35);
// a hypervisor whose machine type allows fewer refuses the domain when it
// is defined. KubeVirt's admitter sets no ceiling of its own.
const MaxVCPUs = 4096

// validateCPUTopology bounds each factor before multiplying, so the
// product cannot overflow.
func validateCPUTopology(cpu *CPU, cp *field.Path) field.ErrorList {
	var errs field.ErrorList
	factor := func(name string, n uint32) uint64 {
		if n > MaxVCPUs {
			errs = append(errs, field.Invalid(cp.Child(name), n, fmt.Sprintf("must be at most %d", MaxVCPUs)))
			return 0
		}
		return max(uint64(n), 1) // 0 = unset, defaulted to 1
	}
	sockets, cores, threads := factor("sockets", cpu.Sockets), factor("cores", cpu.Cores), factor("threads", cpu.Threads)
	maxSockets := factor("maxSockets", cpu.MaxSockets)
	if sockets == 0 || cores == 0 || threads == 0 || maxSockets == 0 {
		return errs
	}
	if n := sockets * cores * threads; n > MaxVCPUs {
		errs = append(errs, field.Invalid(cp, fmt.Sprintf("sockets %d × cores %d × threads %d = %d vCPUs", sockets, cores, threads, n),
			fmt.Sprintf("a VMI may have at most %d vCPUs", MaxVCPUs)))
	} else if n := maxSockets * cores * threads; cpu.MaxSockets != 0 && n > MaxVCPUs {
		errs = append(errs, field.Invalid(cp.Child("maxSockets"), cpu.MaxSockets,
			fmt.Sprintf("maxSockets × cores × threads = %d; a VMI may have at most %d vCPUs", n, MaxVCPUs)))
	}
	return errs
}

// maxBytes and maxMillicores are the largest amounts amount virtkit stores as an int64: bytes of
// memory, millicores of CPU.
var (
	maxBytes      = resource.NewQuantity(math.MaxInt64, resource.BinarySI)
	maxMillicores = resource.NewMilliQuantity(math.MaxInt64, resource.DecimalSI)
)

// validateQuantityRange reports a memory amount that is not a whole number
// of bytes or does not fit 2^63-1 bytes, and a CPU amount beyond 2^63-1
// millicores, each with a message that says which.
func validateQuantityRange(name ResourceName, q resource.Quantity, p *field.Path) field.ErrorList {
	switch name {
	case ResourceMemory:
		if _, ok := QuantityBytes(q); !ok && q.Sign() > 0 {
			// Quantities beyond int64 parse as exactly 2^63-1, not as an
			// int64 (apimachinery caps them).
			if q.Cmp(*maxBytes) >= 0 {
				return field.ErrorList{field.Invalid(p, q.String(), fmt.Sprintf("too large: must be less than %d bytes (8Ei)", int64(math.MaxInt64)))}
			}
			return field.ErrorList{field.Invalid(p, q.String(), "must be a whole number of bytes")}
		}
	case ResourceCPU:
		if q.Cmp(*maxMillicores) >= 0 {
			return field.ErrorList{field.Invalid(p, q.String(), fmt.Sprintf("too large: must be less than %d millicores", int64(math.MaxInt64)))}
		}
	}
	return nil
}

// QuantityBytes returns q as a whole number of bytes, as Kubernetes reads
// a memory or storage quantity: "1.5Gi" is 1610612736 bytes and "1.5Ki"
// 1536, while "0.5" or "100m" are not whole bytes. ok is false for those,
// for a negative q and for q at or beyond 2^63-1 bytes (apimachinery caps
// larger quantities there).
func QuantityBytes(q resource.Quantity) (int64, bool) {
	if v, ok := q.AsInt64(); ok {
		return v, v >= 0 && v < math.MaxInt64
	}
	if q.Sign() < 0 || q.Cmp(*maxBytes) >= 0 {
		return 0, false
	}
	d := q.AsDec()
	n := new(big.Int).Set(d.UnscaledBig())
	scale := int64(d.Scale())
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(max(scale, -scale)), nil)
	if scale <= 0 {
		n.Mul(n, pow)
	} else if _, rem := n.QuoRem(n, pow, new(big.Int)); rem.Sign() != 0 {
		return 0, false
	}
	if !n.IsInt64() {
		return 0, false
	}
	return n.Int64(), true
}
