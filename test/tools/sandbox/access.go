package main

// How the user reaches the fleet's API servers: a kubeconfig per API server under
// <dir>/kubeconfig, and, when the parent handed over sockets of the host's namespace,
// connections from there copied to the API servers.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
)

// apiServerAccess is how the user reaches one API server.
type apiServerAccess struct {
	// Name is "hub" or the cluster's name.
	Name string
	// Kubeconfig is the admin kubeconfig the user passes to kubectl.
	Kubeconfig string
}

// exposeAPIServers writes <dir>/kubeconfig/<name> for every control plane and, with
// hostListeners (one per control plane, in the same order), serves each API server on
// its listener until ctx ends; the kubeconfigs then name the listeners' addresses.
// Without them the kubeconfigs name the API servers as the fleet's namespace sees them.
func exposeAPIServers(ctx context.Context, planes []*fleet.ControlPlane, dir string, hostListeners []net.Listener) ([]apiServerAccess, error) {
	if hostListeners != nil && len(hostListeners) != len(planes) {
		return nil, fmt.Errorf("%d host sockets for %d API servers", len(hostListeners), len(planes))
	}
	if err := os.MkdirAll(filepath.Join(dir, "kubeconfig"), 0o700); err != nil {
		return nil, fmt.Errorf("creating the kubeconfig directory: %w", err)
	}
	access := make([]apiServerAccess, len(planes))
	for i, cp := range planes {
		config, server, err := adminKubeconfig(cp)
		if err != nil {
			return nil, err
		}
		if hostListeners != nil {
			target, err := url.Parse(server)
			if err != nil {
				return nil, fmt.Errorf("the %s API server's address %q: %w", cp.Name, server, err)
			}
			go forward(ctx, hostListeners[i], target.Host)
			config.Clusters[cp.Name].Server = "https://" + hostListeners[i].Addr().String()
		}
		access[i] = apiServerAccess{Name: cp.Name, Kubeconfig: filepath.Join(dir, "kubeconfig", cp.Name)}
		if err := clientcmd.WriteToFile(*config, access[i].Kubeconfig); err != nil {
			return nil, fmt.Errorf("writing the %s kubeconfig: %w", cp.Name, err)
		}
	}
	return access, nil
}

// adminKubeconfig is cp's admin kubeconfig with the cluster, user and context named after
// cp (the fleet's own are all "envtest"), so that several merge with KUBECONFIG=a:b; and
// the API server's address.
func adminKubeconfig(cp *fleet.ControlPlane) (*clientcmdapi.Config, string, error) {
	loaded, err := clientcmd.LoadFromFile(cp.KubeconfigFile)
	if err != nil {
		return nil, "", fmt.Errorf("reading the %s admin kubeconfig: %w", cp.Name, err)
	}
	current := loaded.Contexts[loaded.CurrentContext]
	if current == nil || loaded.Clusters[current.Cluster] == nil || loaded.AuthInfos[current.AuthInfo] == nil {
		return nil, "", fmt.Errorf("%s: no complete current context", cp.KubeconfigFile)
	}
	cluster := loaded.Clusters[current.Cluster].DeepCopy()
	user := cp.Name + "-admin"
	config := clientcmdapi.NewConfig()
	config.Clusters[cp.Name] = cluster
	config.AuthInfos[user] = loaded.AuthInfos[current.AuthInfo].DeepCopy()
	config.Contexts[cp.Name] = &clientcmdapi.Context{Cluster: cp.Name, AuthInfo: user}
	config.CurrentContext = cp.Name
	return config, cluster.Server, nil
}

// forward accepts connections on l until ctx ends and copies each, both ways, to target.
// TLS passes through untouched: the client talks to the API server itself.
func forward(ctx context.Context, l net.Listener, target string) {
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	for {
		conn, err := l.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			klog.ErrorS(err, "Accepting a connection for an API server", "target", target)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		go pipe(conn, target)
	}
}

// pipe copies client to a new connection to target and back, until both directions end.
func pipe(client net.Conn, target string) {
	defer client.Close()
	server, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		klog.ErrorS(err, "Connecting to an API server for a host connection", "target", target)
		return
	}
	defer server.Close()
	var wg sync.WaitGroup
	oneWay := func(to, from net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(to, from)
		// Pass the end of this direction on; the other may still be sending.
		if tcp, ok := to.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
	}
	wg.Add(2)
	go oneWay(server, client)
	go oneWay(client, server)
	wg.Wait()
}
