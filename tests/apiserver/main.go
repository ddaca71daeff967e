// Command odh-test-apiserver runs etcd and kube-apiserver in one process on loopback,
// for the project's integration tests and `make cluster`/`make run`.
//
// It generates its own CA, serving certificate, an admin client certificate (group
// system:masters) and service-account keys, writes a kubeconfig, prints one JSON ready
// line on stdout and runs until SIGINT/SIGTERM, until stdin closes
// (--exit-on-stdin-close), or until no test process holds a lease (--lease-dir).
//
// There is no kube-controller-manager: no garbage collection, no service-account token
// controller, and deleted namespaces stay Terminating forever.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

type readyLine struct {
	Ready      bool   `json:"ready"`
	Kubeconfig string `json:"kubeconfig"`
	Server     string `json:"server"`
	Version    string `json:"version"`
	Pid        int    `json:"pid"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "odh-test-apiserver: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("dir", "", "working directory for certificates, etcd data and the kubeconfig (required)")
	kubeconfig := flag.String("kubeconfig", "", "where to write the admin kubeconfig (default <dir>/kubeconfig)")
	readyFile := flag.String("ready-file", "", "also write the ready line to this file (for detached starts)")
	exitOnStdin := flag.Bool("exit-on-stdin-close", false, "stop when standard input reaches EOF")
	leaseDir := flag.String("lease-dir", "", "stop when no process holds a lock on a file in this directory for --idle-timeout")
	idleTimeout := flag.Duration("idle-timeout", 15*time.Second, "with --lease-dir: how long to wait without leases before stopping")
	lockFile := flag.String("lock-file", "", "with --lease-dir: the file clients flock while joining; held while deciding to stop, so no client joins a stopping server")
	port := flag.Int("port", 0, "apiserver secure port (0 = a free port)")
	keepData := flag.Bool("keep-data", false, "keep the etcd data and certificates of an earlier start in --dir (a restart, with --port the same): clients keep their kubeconfig and see the objects they wrote")
	flag.Parse()
	if *dir == "" {
		return errors.New("--dir is required")
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	if *kubeconfig == "" {
		*kubeconfig = filepath.Join(*dir, "kubeconfig")
	}

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	if *exitOnStdin {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			cancel()
		}()
	}
	if *leaseDir != "" {
		if err := os.MkdirAll(*leaseDir, 0o755); err != nil {
			return err
		}
		go reapWhenIdle(ctx, cancel, reaper{dir: *leaseDir, idle: *idleTimeout, lockFile: *lockFile, readyFile: *readyFile})
	}

	pkiDir := filepath.Join(*dir, "pki")
	var pki *pki
	var err error
	if *keepData && hasPKI(pkiDir) {
		pki, err = loadPKI(pkiDir)
	} else {
		pki, err = generatePKI(pkiDir)
	}
	if err != nil {
		return fmt.Errorf("preparing certificates: %w", err)
	}

	etcdDir := filepath.Join(*dir, "etcd")
	// Each start gets a fresh store unless it is a restart: tests must never see a previous
	// run's objects.
	if !*keepData {
		if err := os.RemoveAll(etcdDir); err != nil {
			return err
		}
	}
	etcd, etcdURL, err := startEtcd(etcdDir)
	if err != nil {
		return fmt.Errorf("starting etcd: %w", err)
	}
	defer etcd.Close()

	securePort := *port
	if securePort == 0 {
		if securePort, err = freePort(); err != nil {
			return err
		}
	}
	server := "https://127.0.0.1:" + strconv.Itoa(securePort)
	if err := writeKubeconfig(*kubeconfig, server, pki); err != nil {
		return err
	}

	apiErr := make(chan error, 1)
	go func() { apiErr <- runAPIServer(ctx, filepath.Join(*dir, "apiserver"), etcdURL, securePort, pki) }()

	version, err := waitReady(ctx, server, pki, apiErr)
	if err != nil {
		return err
	}
	line, _ := json.Marshal(readyLine{Ready: true, Kubeconfig: *kubeconfig, Server: server, Version: version, Pid: os.Getpid()})
	if *readyFile != "" {
		tmp := *readyFile + ".tmp"
		if err := os.WriteFile(tmp, append(line, '\n'), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, *readyFile); err != nil {
			return err
		}
	}
	fmt.Println(string(line))

	select {
	case <-ctx.Done():
	case err := <-apiErr:
		return fmt.Errorf("kube-apiserver stopped: %w", err)
	}
	// The apiserver drains for a moment after its context ends; give it a bounded wait.
	select {
	case <-apiErr:
	case <-time.After(10 * time.Second):
	}
	removeReadyFileIfOurs(*readyFile)
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
