package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// config is the plugin's command line.
type config struct {
	socketDir, socketName, hostPath string
	devices                         int
	poll                            time.Duration
}

// run serves and registers the plugin until ctx ends, starting over whenever the kubelet
// restarts. Only a failure to serve at all is an error.
func run(ctx context.Context, cfg config) error {
	kubelet := filepath.Join(cfg.socketDir, "kubelet.sock")
	own := filepath.Join(cfg.socketDir, cfg.socketName)
	for ctx.Err() == nil {
		kubeletID, err := waitFor(ctx, kubelet, cfg.poll)
		if err != nil {
			return nil // ctx ended
		}
		done := make(chan struct{})
		srv, err := serve(own, newPlugin(cfg.devices, cfg.hostPath, done))
		if err != nil {
			return err
		}
		restarted := false
		if err := register(ctx, kubelet, cfg.socketName); err != nil {
			log.Printf("kvmplugin: %v; trying again", err)
		} else {
			log.Printf("kvmplugin: registered %s (%d devices, %s as %s) with %s", Resource, cfg.devices, cfg.hostPath, containerPath, kubelet)
			restarted = watch(ctx, kubelet, kubeletID, own, cfg.poll)
		}
		close(done)
		srv.Stop()
		_ = os.Remove(own)
		if restarted {
			log.Print("kvmplugin: the kubelet restarted; registering again")
		}
		sleep(ctx, cfg.poll)
	}
	return nil
}

// fileID identifies a socket file, so that a recreated one is told from the old.
type fileID struct{ dev, ino uint64 }

func statID(path string) (fileID, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), st.Ino}, true
}

// waitFor waits until path exists and returns its identity.
func waitFor(ctx context.Context, path string, poll time.Duration) (fileID, error) {
	logged := false
	for {
		if id, ok := statID(path); ok {
			return id, nil
		}
		if !logged {
			log.Printf("kvmplugin: waiting for %s", path)
			logged = true
		}
		if !sleep(ctx, poll) {
			return fileID{}, ctx.Err()
		}
	}
}

// watch returns true when the kubelet restarted (its socket replaced, or this plugin's
// socket removed, as a starting kubelet empties the directory), false when ctx ended.
func watch(ctx context.Context, kubelet string, kubeletID fileID, own string, poll time.Duration) bool {
	for sleep(ctx, poll) {
		if id, ok := statID(kubelet); !ok || id != kubeletID {
			return true
		}
		if _, ok := statID(own); !ok {
			return true
		}
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// serve starts the DevicePlugin service on a fresh socket at path.
func serve(path string, p *plugin) (*grpc.Server, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go func() {
		if err := srv.Serve(ln); err != nil {
			log.Printf("kvmplugin: serving %s: %v", path, err)
		}
	}()
	return srv, nil
}

// register tells the kubelet at the socket kubelet about this plugin, serving at endpoint (a
// file name in the kubelet's device-plugin directory).
func register(ctx context.Context, kubelet, endpoint string) error {
	conn, err := grpc.NewClient("unix://"+kubelet, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     endpoint,
		ResourceName: Resource,
		Options:      &pluginapi.DevicePluginOptions{},
	})
	if err != nil {
		return fmt.Errorf("register with %s: %w", kubelet, err)
	}
	return nil
}
