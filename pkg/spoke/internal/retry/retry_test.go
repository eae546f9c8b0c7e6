package retry

import (
	"testing"
	"time"
)

// almostOne is the largest number rand.Float64 returns.
const almostOne = 1 - 1.0/(1<<53)

func fixed(r float64) func() float64 { return func() float64 { return r } }

func TestJitter(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    time.Duration
		rnd  float64
		want time.Duration
	}{
		{"no jitter drawn", 4 * time.Second, 0, 4 * time.Second},
		{"half the jitter", 4 * time.Second, 0.5, 5 * time.Second},
		{"the most jitter: below one and a half times", 4 * time.Second, almostOne, 6*time.Second - 1},
		{"zero stays zero", 0, almostOne, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Jitter(tc.d, fixed(tc.rnd)); got != tc.want {
				t.Errorf("Jitter(%s, %v) = %s, want %s", tc.d, tc.rnd, got, tc.want)
			}
		})
	}
}

// The delays double per failure of an item from BaseDelay, jitter only lengthens them, and
// none exceeds MaxDelay, however many failures and whatever the random source draws.
func TestRateLimiterDelays(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rnd      float64
		failures int
		// want are the delays of the first failures; after them, every delay is last.
		want []time.Duration
		last time.Duration
	}{
		{
			name: "no jitter drawn: BaseDelay doubled, up to MaxDelay / (1 + JitterFactor)", rnd: 0, failures: 30,
			want: []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
				16 * time.Second, 32 * time.Second, 64 * time.Second},
			last: 80 * time.Second,
		},
		{
			name: "the most jitter: half as long again, never past MaxDelay", rnd: almostOne, failures: 30,
			want: []time.Duration{750*time.Millisecond - 1, 1500*time.Millisecond - 1, 3*time.Second - 1},
			last: MaxDelay - 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limiter := newRateLimiter[string](fixed(tc.rnd))
			for i := range tc.failures {
				got := limiter.When("report")
				if i < len(tc.want) && got != tc.want[i] {
					t.Fatalf("failure %d: delay %s, want %s", i+1, got, tc.want[i])
				}
				if got > tc.last || got > MaxDelay {
					t.Fatalf("failure %d: delay %s past %s or MaxDelay", i+1, got, tc.last)
				}
			}
			if got := limiter.When("report"); got != tc.last {
				t.Errorf("delay after %d failures = %s, want %s", tc.failures, got, tc.last)
			}
			// Items back off on their own, and Forget starts an item over.
			if got := limiter.When("other"); got != tc.want[0] {
				t.Errorf("first delay of another item = %s, want %s", got, tc.want[0])
			}
			limiter.Forget("report")
			if got := limiter.When("report"); got != tc.want[0] {
				t.Errorf("first delay after Forget = %s, want %s", got, tc.want[0])
			}
		})
	}
}

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		name string
		most time.Duration
		rnd  float64
		want time.Duration
	}{
		{"at once", 10 * time.Second, 0, 0},
		{"midway", 10 * time.Second, 0.5, 5 * time.Second},
		{"just below the most", 10 * time.Second, almostOne, 10*time.Second - 1},
		{"no spread", 0, almostOne, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Spread(tc.most, fixed(tc.rnd)); got != tc.want {
				t.Errorf("Spread(%s, %v) = %s, want %s", tc.most, tc.rnd, got, tc.want)
			}
		})
	}
}
