package main

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// reapWhenIdle stops the server once no live process holds a lease for idle.
//
// A client takes a lease by creating a file in dir and holding a shared flock on it for its
// lifetime; the kernel drops the lock when the process dies, however it dies. Files whose
// lock we can take exclusively belong to dead processes and are removed.
func reapWhenIdle(ctx context.Context, stop context.CancelFunc, dir string, idle time.Duration) {
	lastHeld := time.Now()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if liveLeases(dir) > 0 {
			lastHeld = time.Now()
		} else if time.Since(lastHeld) > idle {
			stop()
			return
		}
	}
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
