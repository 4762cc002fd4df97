package bench

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteVersus: the comparison's figures for rows whose outcomes cover
// every cell: a baseline faster but over the limit, virtkit behind the
// best within it, no baseline within the limit, a virtkit failure on a
// profile nothing moves; golden file testdata/versus.txt (-update).
func TestWriteVersus(t *testing.T) {
	fast := Profile{Name: "fast", Memory: q("1Gi"), Bandwidth: q("1G"), DirtyRate: q("1M")}
	none := Profile{Name: "none-within", Memory: q("1Gi"), Bandwidth: q("1G"), DirtyRate: q("1M")}
	hopeless := BuiltinProfiles()[6] // P7-hog: nothing allowed converges
	rows := []Row{
		scored("fast", "virtkit", "Succeeded", 11, pause(80)),
		scored("fast", "kubevirt", "Succeeded", 10, pause(328)),
		scored("fast", "nova", "Succeeded", 10.4, pause(79)),
		scored("none-within", "virtkit", "Succeeded", 12, pause(290)),
		scored("none-within", "kubevirt", "Succeeded", 12.5, pause(329)),
		scored("none-within", "nova", "Failed", 300, nil),
		withRule(scored(hopeless.Name, "virtkit", "Failed", 37.4, nil), "Hopeless"),
		scored(hopeless.Name, "kubevirt", "Failed", 1350, nil),
		scored(hopeless.Name, "nova", "Failed", 6400, nil),
	}
	var buf bytes.Buffer
	require.NoError(t, WriteVersus(&buf, []Profile{fast, none, hopeless}, rows))
	out := buf.String()
	t.Log("\n" + out)
	assert.Contains(t, out, "median virtkit total/(M/B) over the movable: 1.15", "1.1 and 1.2 over two movable profiles")
	assert.Contains(t, out, "more than 1.05× behind the best baseline: fast (1.06×)")
	assert.Contains(t, out, "more than 1.05× behind the fastest baseline: fast (1.10×)")
	golden(t, "versus.txt", buf.Bytes())
}

func withRule(r Row, rule string) Row {
	r.Rule = rule
	return r
}
