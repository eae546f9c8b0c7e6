package fleet

import (
	"context"
	"fmt"
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

// startRedis starts redis-server on 127.0.0.1:port with a new random password, in memory
// only (no RDB snapshots, no append-only file), and writes the password into the
// namespace's argocd-redis Secret (key auth), as Argo CD's installation does. Stop stops it
// with the other components.
func (a *ArgoCD) startRedis(c client.Client, port int) error {
	bin, err := framework.RedisServerBinary()
	if err != nil {
		return err
	}
	if a.RedisPassword, err = framework.NewRedisPassword(); err != nil {
		return err
	}
	a.RedisAddr = framework.LoopbackAddress(port)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := SetArgoCDRedisPassword(ctx, c, a.Namespace, a.RedisPassword); err != nil {
		return err
	}
	// The component name only names the log; redis-server ignores ARGOCD_BINARY_NAME.
	p, err := startArgoCDProcess(bin, "argocd-redis", a.Logs("argocd-redis"), nil,
		framework.RedisServerArgs(port, a.RedisPassword, a.mkdir("redis")))
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
