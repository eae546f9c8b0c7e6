package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os/exec"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// ArgoCDRedisSecret is the Secret of Argo CD's installation holding its Redis password
// under the key auth; the agent reads it (agent --redis-secret).
const ArgoCDRedisSecret = "argocd-redis"

// RedisServerBinary is Debian's redis-server from PATH (`make debian-packages` installs it).
func RedisServerBinary() (string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("redis-server not found on PATH (Debian package redis-server; `make debian-packages` installs it): %w", err)
	}
	return bin, nil
}

// startRedis starts redis-server on 127.0.0.1:port with a new random password, in memory
// only (no RDB snapshots, no append-only file), and writes the password into the
// namespace's argocd-redis Secret (key auth), as Argo CD's installation does. Stop stops it
// with the other components.
func (a *ArgoCD) startRedis(c client.Client, port int) error {
	bin, err := RedisServerBinary()
	if err != nil {
		return err
	}
	secret := make([]byte, 24)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	a.RedisPassword = hex.EncodeToString(secret)
	a.RedisAddr = framework.LoopbackAddress(port)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := SetArgoCDRedisPassword(ctx, c, a.Namespace, a.RedisPassword); err != nil {
		return err
	}
	// The component name only names the log; redis-server ignores ARGOCD_BINARY_NAME.
	p, err := startArgoCDProcess(bin, "argocd-redis", a.Logs("argocd-redis"), nil, []string{
		"--save", "", "--appendonly", "no", "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--requirepass", a.RedisPassword, "--dir", a.mkdir("redis"),
	})
	if err != nil {
		return err
	}
	a.procs = append(a.procs, p)
	return waitTCP(p, a.RedisAddr, 30*time.Second)
}

// SetArgoCDRedisPassword creates or updates the argocd-redis Secret of namespace with
// password under key auth. Redis keeps the password it started with: a different one
// here is a wrong password for whoever reads the Secret.
func SetArgoCDRedisPassword(ctx context.Context, c client.Client, namespace, password string) error {
	secret := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ArgoCDRedisSecret}, secret)
	switch {
	case apierrors.IsNotFound(err):
		secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ArgoCDRedisSecret, Namespace: namespace,
			Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"}}}
		secret.Data = map[string][]byte{"auth": []byte(password)}
		err = c.Create(ctx, secret)
	case err == nil:
		secret.Data = map[string][]byte{"auth": []byte(password)}
		err = c.Update(ctx, secret)
	}
	if err != nil {
		return fmt.Errorf("writing Secret %s/%s: %w", namespace, ArgoCDRedisSecret, err)
	}
	return nil
}
