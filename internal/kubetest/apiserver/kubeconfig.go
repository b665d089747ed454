package apiserver

import (
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes a kubeconfig file for the server that
// authenticates with token (see Token) and whose context has namespace as
// its default. The file is readable by its owner only: it holds the token.
func (s *Server) WriteKubeconfig(path, token, namespace string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["tenure"] = &clientcmdapi.Cluster{Server: s.URL, CertificateAuthority: s.CAFile}
	kc.AuthInfos["tenure"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["tenure"] = &clientcmdapi.Context{Cluster: "tenure", AuthInfo: "tenure", Namespace: namespace}
	kc.CurrentContext = "tenure"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*kc, path)
}
