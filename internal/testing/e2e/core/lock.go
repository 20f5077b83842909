package core

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockName is the machine-wide lock a Core holds from Start to Stop: upstream's controller
// opens fixed ports (GRPCPort and its OIDC and login services), so two cannot run at once,
// and `go test ./...` runs the packages that start one (this package's own test, the
// controller binary's lab test on the real core) in parallel. The kernel drops the lock when
// the holding process exits, so a test killed hard leaves none behind.
const lockName = "exporterset-jumpstarter-core.lock"

// acquireLock waits (as long as ctx allows) for the machine-wide lock and returns the file
// that holds it.
func acquireLock(ctx context.Context) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), lockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another test's Jumpstarter core to stop (%s): %w", f.Name(), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
