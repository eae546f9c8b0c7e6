package framework

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteImpersonatingKubeconfig writes to path a kubeconfig for the API server of cfg that
// acts as user with groups: cfg's admin credentials, impersonating, so RBAC decides as for
// user. For running a process's own command (manager, hook) as its ServiceAccount.
func WriteImpersonatingKubeconfig(cfg *rest.Config, path, user string, groups ...string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken,
		Impersonate: user, ImpersonateGroups: groups,
	}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "sa"}
	kc.CurrentContext = "sa"
	return clientcmd.WriteToFile(*kc, path)
}

// ServiceAccountUser is the user name and groups of ServiceAccount namespace/name.
func ServiceAccountUser(namespace, name string) (string, []string) {
	return "system:serviceaccount:" + namespace + ":" + name,
		[]string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
}
