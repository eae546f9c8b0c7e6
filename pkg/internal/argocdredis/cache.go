// Package argocdredis connects to an Argo CD's Redis the way Argo CD's own components do:
// with the password of the argocd-redis Secret its installation creates, and Argo CD's
// own cache package (util/cache/appstate), so what is read or written there is in Argo
// CD's format. The agent reads resource trees through it, the hub writes them.
package argocdredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	cacheutil "github.com/argoproj/argo-cd/v2/util/cache"
	"github.com/argoproj/argo-cd/v2/util/cache/appstate"
	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Where Argo CD's own installation keeps its Redis credentials: the argocd-redis Secret,
// key auth (its components get it as REDIS_PASSWORD).
const (
	DefaultSecret = "argocd-redis"
	PasswordKey   = "auth"
)

// RequestTimeout bounds one Redis request: a slow Redis must hold up neither a report
// nor a reconcile.
const RequestTimeout = 3 * time.Second

// ServiceAddress is the address of the Redis Service Argo CD's installation creates in
// namespace.
func ServiceAddress(namespace string) string {
	return fmt.Sprintf("argocd-redis.%s.svc:6379", namespace)
}

// ReadPassword reads the Redis password from the Secret key (key auth); the error of a
// missing Secret is a NotFound one (apierrors.IsNotFound).
func ReadPassword(ctx context.Context, secrets client.Reader, key types.NamespacedName) (string, error) {
	secret := &corev1.Secret{}
	if err := secrets.Get(ctx, key, secret); err != nil {
		return "", fmt.Errorf("reading Argo CD's Redis password from Secret %s: %w", key, err)
	}
	return string(secret.Data[PasswordKey]), nil
}

// NewCache is Argo CD's appstate cache on the Redis at address, compressed as Argo CD's
// --redis-compress says; expiration is the lifetime of the keys it writes (Argo CD's
// go-redis cache turns 0 into one hour, and writes nothing to Redis with a negative one).
// onConnect, when not nil, runs on each new connection once authenticated. Close it with
// the returned function.
func NewCache(address, password string, compression cacheutil.RedisCompressionType, expiration time.Duration,
	onConnect func(context.Context, *redis.Conn) error) (*appstate.Cache, func() error) {
	rc := redis.NewClient(&redis.Options{
		Addr:      address,
		Password:  password,
		OnConnect: onConnect,
		// Fail fast and let the caller's next event (or its backoff) try again: no retry
		// loop here.
		MaxRetries:   -1,
		DialTimeout:  RequestTimeout,
		ReadTimeout:  RequestTimeout,
		WriteTimeout: RequestTimeout,
	})
	return appstate.NewCache(cacheutil.NewCache(cacheutil.NewRedisCache(rc, expiration, compression)), expiration), rc.Close
}

// IsConnectionError tells whether Redis could not be reached or did not answer in time,
// as opposed to answering with an error.
func IsConnectionError(err error) bool {
	var netErr net.Error
	var opErr *net.OpError
	return errors.As(err, &netErr) || errors.As(err, &opErr) || errors.Is(err, context.DeadlineExceeded)
}

// IsAuthError tells whether Redis refused the credentials.
func IsAuthError(err error) bool {
	var redisErr redis.Error
	if !errors.As(err, &redisErr) {
		return false
	}
	msg := redisErr.Error()
	for _, prefix := range []string{"NOAUTH", "WRONGPASS", "ERR invalid password", "ERR AUTH"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// ServerRunID is the run_id of the Redis server cn is connected to, which changes when
// the server restarts; "" when it cannot be read.
func ServerRunID(ctx context.Context, cn *redis.Conn) string {
	info, err := cn.Info(ctx, "server").Result()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(info, "\n") {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return id
		}
	}
	return ""
}
