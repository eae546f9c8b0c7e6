package addon

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"open-cluster-management.io/addon-framework/pkg/agent"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	operatorv1 "open-cluster-management.io/api/operator/v1"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
)

// certificateRequest is the PEM request for the argocd-pull agent identity of cluster.
func certificateRequest(t *testing.T, cluster string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{
		CommonName:   agent.DefaultUser(cluster, apps.AddonName, AgentName),
		Organization: agent.DefaultGroups(cluster, apps.AddonName),
	}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestAgentCSRApprover(t *testing.T) {
	approve := agentCSRApprover()
	prod1 := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod1"}}
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "prod1", Name: apps.AddonName}}
	tests := []struct {
		name        string
		subjectOf   string // the cluster whose agent identity the CSR asks for
		requester   string // csr.spec.username, as the API server sets it
		annotations map[string]string
		want        bool
	}{
		{name: "prod1's registration agent, for prod1's agent", subjectOf: "prod1",
			requester: "system:open-cluster-management:prod1:agent-x7k2", want: true},
		{name: "prod10's registration agent, for prod1's agent", subjectOf: "prod1",
			requester: "system:open-cluster-management:prod10:agent-x7k2", want: false},
		{name: "prod1-east's registration agent, for prod1's agent", subjectOf: "prod1",
			requester: "system:open-cluster-management:prod1-east:agent", want: false},
		{name: "the bare cluster prefix, no agent", subjectOf: "prod1",
			requester: "system:open-cluster-management:prod1:", want: false},
		{name: "prod1's registration agent, for prod10's agent", subjectOf: "prod10",
			requester: "system:open-cluster-management:prod1:agent-x7k2", want: false},
		{name: "an unrelated user", subjectOf: "prod1",
			requester: "system:serviceaccount:default:builder", want: false},
		{name: "the gRPC server for prod1's registration agent", subjectOf: "prod1",
			requester:   grpcServerServiceAccount,
			annotations: map[string]string{operatorv1.CSRUsernameAnnotation: "system:open-cluster-management:prod1:agent-x7k2"}, want: true},
		{name: "the gRPC server for prod10's registration agent", subjectOf: "prod1",
			requester:   grpcServerServiceAccount,
			annotations: map[string]string{operatorv1.CSRUsernameAnnotation: "system:open-cluster-management:prod10:agent-x7k2"}, want: false},
		{name: "the annotation without the gRPC server", subjectOf: "prod1",
			requester:   "system:open-cluster-management:prod10:agent-x7k2",
			annotations: map[string]string{operatorv1.CSRUsernameAnnotation: "system:open-cluster-management:prod1:agent-x7k2"}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "addon-prod1-argocd-pull-abcde", Annotations: tt.annotations},
				Spec: certificatesv1.CertificateSigningRequestSpec{
					Request:    certificateRequest(t, tt.subjectOf),
					SignerName: certificatesv1.KubeAPIServerClientSignerName,
					Username:   tt.requester,
				},
			}
			if got := approve(prod1, mca, csr); got != tt.want {
				t.Errorf("approved = %v, want %v", got, tt.want)
			}
		})
	}
}
