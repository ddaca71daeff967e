package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
)

// writeKubeconfig writes an admin kubeconfig atomically, so a reader never sees half a file.
func writeKubeconfig(path, server string, p *pki) error {
	b64 := base64.StdEncoding.EncodeToString
	content := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: odh-test
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: odh-test
  context:
    cluster: odh-test
    user: admin
    namespace: default
current-context: odh-test
`, server, b64(p.caPEM), b64(p.adminCertPEM), b64(p.adminKeyPEM))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
