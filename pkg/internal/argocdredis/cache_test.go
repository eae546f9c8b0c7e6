package argocdredis

import (
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestIsAuthError(t *testing.T) {
	tests := map[string]struct {
		err  error
		want bool
	}{
		"wrong password":           {err: redis.ErrClosed, want: false},
		"connection refused":       {err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), want: false},
		"text alone is not enough": {err: errors.New("WRONGPASS invalid username-password pair"), want: false},
		"WRONGPASS from Redis, wrapped": {
			err: fmt.Errorf("reading from Redis at x: %w", redisError("WRONGPASS invalid username-password pair or user is disabled.")), want: true},
		"NOAUTH from Redis":   {err: redisError("NOAUTH Authentication required."), want: true},
		"another Redis error": {err: redisError("ERR unknown command"), want: false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := IsAuthError(tt.err); got != tt.want {
				t.Errorf("IsAuthError(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// redisError is an error as Redis answers it (go-redis' proto.RedisError).
type redisError string

func (e redisError) Error() string { return string(e) }
func (redisError) RedisError()     {}
