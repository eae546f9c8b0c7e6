package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/reports"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// With --trees, every simulated agent also sends the resource tree of its Application
// with each change, with the agent's own code (reports.PublishTree), and the manager
// writes the trees into the hub Argo CD's Redis: a redis-server this tool starts, its
// password in the argocd-redis Secret as Argo CD's chart keeps it (docs/argocd-ui.md).

// treeRedis is the hub Argo CD's Redis of a run with trees.
type treeRedis struct {
	server *framework.RedisServer
	client *redis.Client
}

// startTreeRedis starts the hub's Redis in dir and stores its password where the manager
// reads it; managerArgs point the manager at it.
func startTreeRedis(ctx context.Context, h *hub, dir string) (*treeRedis, []string, error) {
	server, err := framework.StartRedisServer(dir)
	if err != nil {
		return nil, nil, err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "argocd-redis", Namespace: argoNamespace},
		Data: map[string][]byte{"auth": []byte(server.Password)}}
	if err := createIgnoringExisting(ctx, h.admin, secret); err != nil {
		_ = server.Stop()
		return nil, nil, fmt.Errorf("creating the argocd-redis Secret: %w", err)
	}
	r := &treeRedis{server: server, client: redis.NewClient(&redis.Options{Addr: server.Addr, Password: server.Password})}
	return r, []string{"--argocd-redis-address=" + server.Addr, "--argocd-redis-compression=gzip"}, nil
}

func (r *treeRedis) stop() {
	_ = r.client.Close()
	_ = r.server.Stop()
}

// sets is how many SET commands Redis has run: the manager's tree writes.
func (r *treeRedis) sets(ctx context.Context) (float64, error) {
	info, err := r.client.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_set:calls=")
		if !ok {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		return strconv.ParseFloat(calls, 64)
	}
	return 0, nil
}

// usedMemory is the memory Redis holds (used_memory).
func (r *treeRedis) usedMemory(ctx context.Context) (float64, error) {
	info, err := r.client.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, nil
}

// guestbookTree is the resource tree Argo CD computes for the guestbook at revision in
// health h: the Service with its EndpointSlice, the Deployment with the ReplicaSet of
// the revision and its Pod, each with health and the revision's image.
func guestbookTree(revision string, h health.HealthStatusCode, at time.Time) *argov1alpha1.ApplicationTree {
	hash := revision[len(revision)-10:]
	created := metav1.NewTime(at.Truncate(time.Second))
	node := func(group, kind, name, rv string, parent *argov1alpha1.ResourceRef) argov1alpha1.ResourceNode {
		n := argov1alpha1.ResourceNode{
			ResourceRef: argov1alpha1.ResourceRef{Group: group, Version: "v1", Kind: kind, Namespace: "guestbook", Name: name,
				UID: fmt.Sprintf("%s-%s", strings.ToLower(kind), hash)},
			ResourceVersion: rv, CreatedAt: &created,
			Health: &argov1alpha1.HealthStatus{Status: h},
		}
		if parent != nil {
			n.ParentRefs = []argov1alpha1.ResourceRef{*parent}
		}
		return n
	}
	deploy := node("apps", "Deployment", "guestbook-ui", "1", nil)
	deploy.Info = []argov1alpha1.InfoItem{{Name: "Revision", Value: "Rev:2"}}
	rs := node("apps", "ReplicaSet", "guestbook-ui-"+hash, "2", &deploy.ResourceRef)
	pod := node("", "Pod", "guestbook-ui-"+hash+"-x7k2p", "3", &rs.ResourceRef)
	pod.Images = []string{"gcr.io/heptio-images/ks-guestbook-demo:" + hash}
	pod.Info = []argov1alpha1.InfoItem{{Name: "Status Reason", Value: "Running"}, {Name: "Containers", Value: "1/1"}}
	pod.NetworkingInfo = &argov1alpha1.ResourceNetworkingInfo{Labels: map[string]string{"app": "guestbook-ui"}}
	svc := node("", "Service", "guestbook-ui", "4", nil)
	svc.Health = &argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy}
	svc.NetworkingInfo = &argov1alpha1.ResourceNetworkingInfo{TargetLabels: map[string]string{"app": "guestbook-ui"}}
	slice := node("discovery.k8s.io", "EndpointSlice", "guestbook-ui-"+hash[:5], "5", &svc.ResourceRef)
	slice.Health = nil
	return &argov1alpha1.ApplicationTree{Nodes: []argov1alpha1.ResourceNode{deploy, rs, pod, svc, slice}}
}

// publishTree sends s's resource tree as the cluster's agent.
func (s *simApp) publishTree(ctx context.Context, h *hub, revision string, hs health.HealthStatusCode, at time.Time) error {
	c, err := h.agentClient(s.cluster)
	if err != nil {
		return err
	}
	_, err = reports.PublishTree(ctx, c, s.app, guestbookTree(revision, hs, at), s.cluster, h.addonOwner(s.cluster), at)
	return err
}
