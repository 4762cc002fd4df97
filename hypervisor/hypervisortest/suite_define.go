package hypervisortest

import (
	"regexp"
	"strconv"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

func testHost(e *env) {
	info, err := e.h.Host(e.ctx())
	require.NoError(e.t, err)
	assert.NotEmpty(e.t, info.Hostname, "Hostname")
	assert.NotEmpty(e.t, info.Model, "Model")
	assert.Positive(e.t, info.CPUs, "CPUs")
	assert.Positive(e.t, info.MemoryBytes, "MemoryBytes")
}

func testDefine(e *env) {
	name := e.name("")
	id := e.define(name)
	info := e.requireState(name, hypervisor.StateShutoff, hypervisor.ReasonUnknown)
	assert.Equal(e.t, id, info.DomainID, "Info identity equals what Define returned")
	assert.True(e.t, info.Persistent, "a defined domain is persistent")
	assert.Positive(e.t, info.VCPUs, "VCPUs")
	assert.Positive(e.t, info.MaxMemoryBytes, "MaxMemoryBytes")
	assert.False(e.t, info.CPUTime.Valid && info.CPUTime.Value > 0, "a never-started domain used no CPU time")

	// Defining the same XML again is a redefinition, not a second domain.
	id2, err := e.h.Define(e.ctx(), e.tg.DomainXML(name))
	if err == nil {
		assert.Equal(e.t, id, id2, "redefinition without a UUID keeps the identity")
	} else {
		// libvirt generates a UUID for XML without one, which then
		// collides with the existing domain's.
		require.ErrorIs(e.t, err, hypervisor.ErrExists)
	}
	list, err := e.h.List(e.ctx())
	require.NoError(e.t, err)
	assert.Equal(e.t, 1, countNamed(list, name), "List holds the domain once")
}

func countNamed(list []hypervisor.DomainInfo, name string) int {
	n := 0
	for _, d := range list {
		if d.Name == name {
			n++
		}
	}
	return n
}

func testDefineInvalidXML(e *env) {
	for _, tc := range []struct{ name, xml string }{
		{"NotXML", "this is not xml"},
		{"Truncated", "<domain type='qemu'><name>x"},
		{"NoName", "<domain type='qemu'><memory unit='KiB'>131072</memory></domain>"},
	} {
		e.run(tc.name, func(se *env) {
			_, err := se.h.Define(se.ctx(), tc.xml)
			require.ErrorIs(se.t, err, hypervisor.ErrInvalidArgument)
		})
	}
}

var (
	memoryRE  = regexp.MustCompile(`(<memory[^>]*>)(\d+)(</memory>)`)
	currentRE = regexp.MustCompile(`(<currentMemory[^>]*>)(\d+)(</currentMemory>)`)
	uuidRE    = regexp.MustCompile(`<uuid>[^<]*</uuid>`)
)

func testRedefine(e *env) {
	name := e.name("")
	id := e.define(name)
	before := e.info(name)
	xml, err := e.h.XML(e.ctx(), name)
	require.NoError(e.t, err)
	require.Regexp(e.t, memoryRE, xml, "XML carries <memory>")
	require.Contains(e.t, xml, id.UUID, "XML carries the UUID")

	// Same name and UUID, more memory: the definition is replaced.
	grow := func(s string, re *regexp.Regexp) string {
		return re.ReplaceAllStringFunc(s, func(m string) string {
			parts := re.FindStringSubmatch(m)
			n, _ := strconv.ParseUint(parts[2], 10, 64)
			return parts[1] + strconv.FormatUint(n*2, 10) + parts[3]
		})
	}
	bigger := grow(grow(xml, memoryRE), currentRE)
	id2, err := e.h.Define(e.ctx(), bigger)
	require.NoError(e.t, err, "redefine with the same name and UUID")
	require.Equal(e.t, id, id2)
	after := e.info(name)
	assert.Equal(e.t, 2*before.MaxMemoryBytes, after.MaxMemoryBytes, "redefinition took effect")

	// Same name, different UUID: a different domain, refused.
	other := uuidRE.ReplaceAllString(xml, "<uuid>6a1c2f9e-0000-4000-8000-00000000beef</uuid>")
	_, err = e.h.Define(e.ctx(), other)
	require.ErrorIs(e.t, err, hypervisor.ErrExists, "same name with another UUID")
	assert.Equal(e.t, id, e.info(name).DomainID, "the refused definition changed nothing")
}

func testUndefine(e *env) {
	name := e.name("")
	e.define(name)
	require.NoError(e.t, e.h.Undefine(e.ctx(), name))
	_, err := e.h.Info(e.ctx(), name)
	requireDomainError(e.t, err, hypervisor.ErrNotFound, name, "Info after Undefine")
	list, err := e.h.List(e.ctx())
	require.NoError(e.t, err)
	assert.Zero(e.t, countNamed(list, name), "List no longer holds the domain")
	requireDomainError(e.t, e.h.Undefine(e.ctx(), name), hypervisor.ErrNotFound, name, "Undefine twice")
}

func testUndefineRunning(e *env) {
	name := e.name("")
	e.start(name)
	require.NoError(e.t, e.h.Undefine(e.ctx(), name))
	info := e.info(name)
	assert.Equal(e.t, hypervisor.StateRunning, info.State, "an undefined running domain keeps running")
	assert.False(e.t, info.Persistent, "and becomes transient")
	require.NoError(e.t, e.h.Destroy(e.ctx(), name))
	_, err := e.h.Info(e.ctx(), name)
	requireDomainError(e.t, err, hypervisor.ErrNotFound, name, "Info of a destroyed transient domain")
}
