package bench

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummarize(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	row := func(profile, policy, outcome string, total float64, down *float64, sent uint64) Row {
		return Row{Profile: profile, Policy: policy, Outcome: outcome, TotalSeconds: total, DowntimeMs: down, BytesSent: sent}
	}
	for _, tc := range []struct {
		name string
		rows []Row
		want []Summary
	}{
		{name: "no rows", want: []Summary{}},
		{
			name: "odd count: the middle value; groups in first-seen order",
			rows: []Row{
				row("idle", "kubevirt", "Succeeded", 1.9, ms(60), 100),
				row("idle", "virtkit", "Succeeded", 1.8, ms(50), 100),
				row("idle", "virtkit", "Succeeded", 2.5, ms(210), 300),
				row("idle", "kubevirt", "Succeeded", 1.7, ms(70), 200),
				row("idle", "virtkit", "Succeeded", 1.7, ms(40), 200),
				row("idle", "kubevirt", "Succeeded", 1.8, ms(65), 300),
			},
			want: []Summary{
				{Profile: "idle", Policy: "kubevirt", Runs: 3, Succeeded: 3, TotalMedian: 1.8, TotalMin: 1.7, TotalMax: 1.9,
					DowntimeMedianMs: ms(65), DowntimeMaxMs: ms(70), SentMedian: 200},
				{Profile: "idle", Policy: "virtkit", Runs: 3, Succeeded: 3, TotalMedian: 1.8, TotalMin: 1.7, TotalMax: 2.5,
					DowntimeMedianMs: ms(50), DowntimeMaxMs: ms(210), SentMedian: 200},
			},
		},
		{
			name: "even count: the mean of the middle two; failed runs count at their end, without a downtime",
			rows: []Row{
				row("hopeless", "kubevirt", "Failed", 100, nil, 500),
				row("hopeless", "kubevirt", "Succeeded", 60, ms(30), 300),
			},
			want: []Summary{
				{Profile: "hopeless", Policy: "kubevirt", Runs: 2, Succeeded: 1, TotalMedian: 80, TotalMin: 60, TotalMax: 100,
					DowntimeMedianMs: ms(30), DowntimeMaxMs: ms(30), SentMedian: 400},
			},
		},
		{
			name: "no run reported a downtime",
			rows: []Row{row("hopeless", "virtkit", "Failed", 14, nil, 40)},
			want: []Summary{{Profile: "hopeless", Policy: "virtkit", Runs: 1, TotalMedian: 14, TotalMin: 14, TotalMax: 14, SentMedian: 40}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Summarize(tc.rows)
			require.Len(t, got, len(tc.want))
			for i := range tc.want {
				assert.InDelta(t, tc.want[i].TotalMedian, got[i].TotalMedian, 1e-9)
				got[i].TotalMedian = tc.want[i].TotalMedian
				assert.Equal(t, tc.want[i], got[i])
			}
		})
	}
}

func TestWriteSummaryTable(t *testing.T) {
	rows := sampleRows()
	for i := range rows {
		rows[i].Run = 1
	}
	second := sampleRows()
	for i := range second {
		second[i].Run = 2
		second[i].TotalSeconds *= 1.1
	}
	var buf bytes.Buffer
	require.NoError(t, WriteSummaryTable(&buf, Summarize(append(rows, second...))))
	golden(t, "summary.txt", buf.Bytes())
}
