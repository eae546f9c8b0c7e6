package naming

import (
	"strings"
	"testing"
)

func TestBounded(t *testing.T) {
	long := strings.Repeat("a", 300)
	cases := map[string]struct {
		in         string
		max, hash  int
		want       string
		wantLength int
	}{
		"short stays":          {in: "guestbook-1a2b3", max: 253, hash: 10, want: "guestbook-1a2b3"},
		"exactly max stays":    {in: strings.Repeat("b", 63), max: 63, hash: 16, want: strings.Repeat("b", 63)},
		"long is cut to max":   {in: long, max: 253, hash: 10, wantLength: 253},
		"label bound":          {in: long, max: 63, hash: 16, wantLength: 63},
		"separator before cut": {in: strings.Repeat("a", 45) + "." + strings.Repeat("c", 30), max: 63, hash: 16, wantLength: 62},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Bounded(tc.in, tc.max, tc.hash)
			if tc.want != "" && got != tc.want {
				t.Fatalf("Bounded = %q, want %q", got, tc.want)
			}
			if tc.wantLength != 0 && len(got) != tc.wantLength {
				t.Fatalf("len(Bounded) = %d, want %d (%q)", len(got), tc.wantLength, got)
			}
			if strings.ContainsAny(got[len(got)-1:], trimmed) || strings.Contains(got, ".-") {
				t.Fatalf("Bounded = %q ends a part with a separator", got)
			}
		})
	}
}

func TestBoundedKeepsDistinctInputsDistinct(t *testing.T) {
	a := Bounded(strings.Repeat("x", 300)+"-a", 253, 10)
	b := Bounded(strings.Repeat("x", 300)+"-b", 253, 10)
	if a == b {
		t.Fatalf("two long names with the same prefix got the same bounded name %q", a)
	}
	if a != Bounded(strings.Repeat("x", 300)+"-a", 253, 10) {
		t.Fatal("Bounded is not stable")
	}
}

func TestWithHashEmptyPrefixIsHashAlone(t *testing.T) {
	got := WithHash("---", "anything", 63, 16)
	if len(got) != 16 || strings.Contains(got, "-") {
		t.Fatalf("WithHash of an all-separator prefix = %q, want the 16-character hash alone", got)
	}
}
