package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/exporterset/exporterset/internal/exportercfg"
	"github.com/exporterset/exporterset/internal/testing/e2e/standin/launcher"
)

// execName is the launcher binary the copy-jumpstarter-exec init container puts beside the
// launcher socket (/shared in the QEMU Pod).
const execName = "jumpstarter-exec"

// run is `jmp run`: it returns the process's exit status.
func run(args []string) int {
	fs := flag.NewFlagSet("jmp run", flag.ContinueOnError)
	path := fs.String("exporter-config", "", "path of the ExporterConfig file")
	wait := fs.Duration("launcher-wait", 10*time.Second, "how long to retry the launcher socket (the sidecar may still be starting)")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return fail("jmp run: %v", err)
	}
	if *path == "" {
		return fail("jmp run: --exporter-config is required")
	}
	// Signals first, so that none arriving during the checks kills the process unhandled.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1)

	data, err := os.ReadFile(*path)
	if err != nil {
		return fail("exporter config %s: %v", *path, err)
	}
	cfg, err := exportercfg.Load(data)
	if err != nil {
		return fail("exporter config %s: %v", *path, err)
	}
	if socket := os.Getenv(launcher.EnvSocket); socket != "" {
		if msg := checkLauncher(socket, *wait); msg != "" {
			return fail("%s", msg)
		}
	} else {
		log.Printf("no %s set: running without a target launcher", launcher.EnvSocket)
	}
	s, err := newSession(cfg)
	if err != nil {
		return fail("exporter config %s: %v", *path, err)
	}
	log.Printf("exporter %s/%s: connecting to the controller at %s (drivers: %s; exitOnLeaseEnd: %t)",
		cfg.Metadata.Namespace, cfg.Metadata.Name, cfg.Endpoint, strings.Join(cfg.DriverNames(), ", "), cfg.ExitOnLeaseEnd)
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan leaseEvent, 1)
	served := make(chan struct{})
	var hookExit chan string // nil without hooks: never ready
	if !cfg.Hooks.Empty() && s.ctrl != nil {
		s.hooks = newHookWorker(s, ended)
		hookExit = s.hooks.exit
		go s.hooks.run(ctx)
	}
	go func() { s.serve(ctx, ended); close(served) }()
	// stop ends the session before the clean exit: Offline, then Unregister.
	stop := func(reason string) int {
		cancel()
		<-served
		s.stop(reason)
		return 0
	}

	for {
		select {
		case e := <-ended:
			log.Printf("lease %s ended, exitOnLeaseEnd: exiting", e.ended)
			return stop("lease " + e.ended + " ended (exitOnLeaseEnd)")
		case failure := <-hookExit:
			// A hook failed with onFailure exit: it reported the failure and Offline.
			cancel()
			<-served
			s.unregister(failure)
			return fail("%s", failure)
		case sig := <-sigs:
			switch sig {
			case syscall.SIGUSR1:
				// `jmp lease-ended`: a lease end told by a simulated core, which never dials.
				if cfg.ExitOnLeaseEnd {
					log.Print("lease ended, exitOnLeaseEnd: exiting")
					return stop("lease ended (exitOnLeaseEnd)")
				}
				log.Print("lease ended; staying for the next lease (exitOnLeaseEnd is false)")
			default:
				log.Printf("%v: exiting", sig)
				return stop(sig.String())
			}
		}
	}
}

// checkLauncher checks what the init container and the target runtime sidecar provide, in
// the order they start: an executable jumpstarter-exec beside the launcher socket, and the
// socket answering. It returns
// the reason when one is missing.
func checkLauncher(socket string, wait time.Duration) string {
	exec := filepath.Join(filepath.Dir(socket), execName)
	fi, err := os.Stat(exec)
	switch {
	case err != nil:
		return fmt.Sprintf("launcher binary: %v (copied by the copy-jumpstarter-exec init container)", err)
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return fmt.Sprintf("launcher binary %s is not an executable file (mode %v)", exec, fi.Mode())
	}
	reply, err := launcher.AskRetrying(socket, launcher.Ping, wait)
	if err != nil {
		return fmt.Sprintf("launcher socket %s (%s) does not answer after %s: %v", socket, launcher.EnvSocket, wait, err)
	}
	log.Printf("launcher at %s answered %q", socket, reply)
	return ""
}

// leaseEnded is `jmp lease-ended`: it signals the exporter process that its lease ended.
func leaseEnded(args []string) int {
	fs := flag.NewFlagSet("jmp lease-ended", flag.ContinueOnError)
	pid := fs.Int("pid", 1, "the exporter's process id (1 in its container)")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(os.Stderr, "jmp lease-ended: %v\n", err)
		return 2
	}
	if err := syscall.Kill(*pid, syscall.SIGUSR1); err != nil {
		fmt.Fprintf(os.Stderr, "jmp lease-ended: signal process %d: %v\n", *pid, err)
		return 1
	}
	return 0
}
