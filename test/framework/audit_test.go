package framework

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestRefusedRequestsOutside(t *testing.T) {
	const user = "system:serviceaccount:argocd:manager"
	log := filepath.Join(t.TempDir(), "audit.log")
	// Three 403s of the user, at 10:00:00, 10:00:05 and 10:00:10, and one of someone else.
	events := `{"verb":"get","requestURI":"/api","user":{"username":"` + user + `"},"responseStatus":{"code":403},"requestReceivedTimestamp":"2026-11-26T10:00:00.000001Z"}
{"verb":"watch","requestURI":"/apis/a","user":{"username":"` + user + `"},"responseStatus":{"code":403},"requestReceivedTimestamp":"2026-11-26T10:00:05.5Z"}
{"verb":"list","requestURI":"/apis/b","user":{"username":"` + user + `"},"responseStatus":{"code":403},"requestReceivedTimestamp":"2026-11-26T10:00:10Z"}
{"verb":"list","requestURI":"/apis/c","user":{"username":"someone"},"responseStatus":{"code":403},"requestReceivedTimestamp":"2026-11-26T10:00:10Z"}
`
	if err := os.WriteFile(log, []byte(events), 0o600); err != nil {
		t.Fatal(err)
	}
	at := func(sec float64) time.Time {
		return time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC).Add(time.Duration(sec * float64(time.Second)))
	}
	tests := map[string]struct {
		skip []TimeRange
		want []string
	}{
		"nothing skipped": {want: []string{
			user + ": get /api (1 times)", user + ": list /apis/b (1 times)", user + ": watch /apis/a (1 times)",
		}},
		"a restart around the first two": {skip: []TimeRange{{From: at(-1), To: at(6)}}, want: []string{
			user + ": list /apis/b (1 times)",
		}},
		"two restarts, ends included": {skip: []TimeRange{{From: at(0.000001), To: at(1)}, {From: at(9), To: at(10)}}, want: []string{
			user + ": watch /apis/a (1 times)",
		}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := (&AuditLog{Path: log, Users: []string{user}}).RefusedRequestsOutside(tt.skip)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("RefusedRequestsOutside() = %q, want %q", got, tt.want)
			}
		})
	}
}
