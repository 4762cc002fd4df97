package upload_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/virtkit/virtkit/cdi/upload"
)

func testKey(b byte) []byte { return []byte(strings.Repeat(string(rune('a'+b)), 32)) }

func TestTokens(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	tokens := &upload.Tokens{Key: testKey(0), Clock: clk}
	tok, err := tokens.Issue("ns", "disk")
	require.NoError(t, err)
	c, err := tokens.Verify(tok)
	require.NoError(t, err)
	assert.Equal(t, upload.Claims{Operation: upload.OperationUpload, Namespace: "ns", Name: "disk",
		Expires: clk.Now().Add(upload.DefaultTokenTTL)}, c)

	payload, sig, _ := strings.Cut(tok, ".")
	other, err := (&upload.Tokens{Key: testKey(1), Clock: clk}).Issue("ns", "disk")
	require.NoError(t, err)
	forged, err := (&upload.Tokens{Key: testKey(0), Clock: clk}).Issue("ns", "other")
	require.NoError(t, err)
	forgedPayload, _, _ := strings.Cut(forged, ".")
	tests := []struct {
		name  string
		token string
		want  error
	}{
		{"other key", other, upload.ErrBadToken},
		{"payload swapped", forgedPayload + "." + sig, upload.ErrBadToken},
		{"no signature", payload, upload.ErrBadToken},
		{"garbage", "!!.!!", upload.ErrBadToken},
		{"empty", "", upload.ErrBadToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tokens.Verify(tt.token)
			require.ErrorIs(t, err, tt.want)
		})
	}

	clk.SetTime(clk.Now().Add(upload.DefaultTokenTTL))
	_, err = tokens.Verify(tok)
	require.ErrorIs(t, err, upload.ErrTokenExpired)

	_, err = (&upload.Tokens{Key: []byte("short")}).Issue("ns", "disk")
	require.Error(t, err, "a short key is refused")
	_, err = tokens.Issue("", "disk")
	require.Error(t, err)
}
