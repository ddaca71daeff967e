package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// reaper stops the server once no live process holds a lease for idle.
//
// A client takes a lease by creating a file in dir and holding a shared flock on it for its
// lifetime; the kernel drops the lock when the process dies, however it dies. Files whose
// lock we can take exclusively belong to dead processes and are removed.
//
// Clients join under lockFile: they lock it, take their lease, then read the ready file. The
// reaper decides to stop under the same lock and removes the ready file before stopping, so a
// client either holds a lease the reaper sees, or finds no ready file and starts a new server;
// it never joins one that is shutting down.
type reaper struct {
	dir       string
	idle      time.Duration
	lockFile  string
	readyFile string
}

func reapWhenIdle(ctx context.Context, stop context.CancelFunc, r reaper) {
	lastHeld := time.Now()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if liveLeases(r.dir) > 0 {
			lastHeld = time.Now()
		} else if time.Since(lastHeld) > r.idle && r.retire() {
			stop()
			return
		}
	}
}

// retire withdraws the server from new clients, unless one took a lease meanwhile.
func (r reaper) retire() bool {
	if r.lockFile != "" {
		f, err := os.OpenFile(r.lockFile, os.O_CREATE|os.O_RDWR, 0o644)
		if err == nil {
			defer f.Close()
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err == nil {
				defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			}
		}
	}
	if liveLeases(r.dir) > 0 {
		return false
	}
	removeReadyFileIfOurs(r.readyFile)
	return true
}

// removeReadyFileIfOurs removes the ready file unless it announces another server (one
// started after this one withdrew).
func removeReadyFileIfOurs(path string) {
	if path == "" {
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var line readyLine
	if json.Unmarshal(data, &line) == nil && line.Pid != os.Getpid() {
		return
	}
	_ = os.Remove(path)
}

func liveLeases(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	live := 0
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			live++
		} else {
			_ = os.Remove(path)
		}
		f.Close()
	}
	return live
}
