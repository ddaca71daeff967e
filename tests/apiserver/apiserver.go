package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// runAPIServer runs kube-apiserver in this process until ctx ends.
func runAPIServer(ctx context.Context, certDir, etcdURL string, port int, p *pki) error {
	s := options.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--tls-cert-file=" + p.ServingCert,
		"--tls-private-key-file=" + p.ServingKey,
		"--client-ca-file=" + p.CACert,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.SAPublic,
		"--service-account-signing-key-file=" + p.SAPrivate,
		"--service-cluster-ip-range=10.0.0.0/16",
		"--authorization-mode=RBAC",
		"--allow-privileged=true",
		// Without a controller-manager no namespace ever gets its default ServiceAccount,
		// so this plugin would refuse every Pod (envtest disables it for the same reason).
		"--disable-admission-plugins=ServiceAccount",
		"--endpoint-reconciler-type=none",
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	// The in-process apiserver's own loopback client must not log self-issued warnings.
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return err
	}
	completed, err := s.Complete(ctx)
	if err != nil {
		return err
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return utilerrors.NewAggregate(errs)
	}
	return app.Run(ctx, completed)
}

// waitReady polls /readyz with the admin certificate and returns the server's version string.
func waitReady(ctx context.Context, server string, p *pki, apiErr <-chan error) (string, error) {
	client, err := adminHTTPClient(p)
	if err != nil {
		return "", err
	}
	deadline := time.Now().Add(120 * time.Second)
	for {
		if body, err := get(ctx, client, server+"/readyz"); err == nil && body == "ok" {
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("kube-apiserver not ready after 120s")
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case err := <-apiErr:
			return "", fmt.Errorf("kube-apiserver failed to start: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	body, err := get(ctx, client, server+"/version")
	if err != nil {
		return "", err
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return "", err
	}
	return v.GitVersion, nil
}

func adminHTTPClient(p *pki) (*http.Client, error) {
	cert, err := tls.X509KeyPair(p.adminCertPEM, p.adminKeyPEM)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(p.CACert)
	if err != nil {
		return nil, err
	}
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			RootCAs:      pool,
		}},
	}, nil
}

func get(ctx context.Context, c *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, b)
	}
	return string(b), nil
}
