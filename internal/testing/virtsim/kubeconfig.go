package virtsim

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig returns a kubeconfig with cfg's credentials and CA for server (e.g. a Proxy's
// "https://127.0.0.1:port"): what a class's credentials Secret holds for the remote cluster.
func Kubeconfig(cfg *rest.Config, server string) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["remote"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken,
	}
	kc.Contexts["remote"] = &clientcmdapi.Context{Cluster: "remote", AuthInfo: "admin"}
	kc.CurrentContext = "remote"
	return clientcmd.Write(*kc)
}
