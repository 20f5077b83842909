// Command kvmplugin is the real-node tier's KVM device plugin: it speaks the kubelet's
// device-plugin API (v1beta1) and advertises devices.kubevirt.io/kvm, the resource a
// KubeVirt node offers and the QEMU Pod asks for, so that the real scheduler places those
// Pods and the kubelet gives their containers a /dev/kvm.
//
//	go -C hack/e2e run ./kvmplugin --socket-dir /var/lib/kubelet/device-plugins --devices 110 --host-path /dev/null
//
// Each allocated container gets --host-path as /dev/kvm, read-write. The default, /dev/null,
// is a stand-in device node: every host has it and any user may open it, so that a
// non-root container's check for /dev/kvm passes without giving it the host's real KVM.
// It re-registers when the kubelet restarts (kubelet.sock recreated, or this plugin's own
// socket removed, as a starting kubelet clears the directory) and stops on SIGTERM or
// SIGINT, removing its socket.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.socketDir, "socket-dir", "/var/lib/kubelet/device-plugins", "the kubelet's device-plugin directory (holds kubelet.sock)")
	flag.IntVar(&cfg.devices, "devices", 110, "how many devices to advertise (Pods that may hold one at once)")
	flag.StringVar(&cfg.hostPath, "host-path", "/dev/null", "device node given to containers as /dev/kvm")
	flag.StringVar(&cfg.socketName, "socket-name", "kvm-e2e.sock", "this plugin's socket, in socket-dir")
	flag.DurationVar(&cfg.poll, "poll", time.Second, "how often to look for a kubelet restart")
	flag.Parse()
	if flag.NArg() != 0 || cfg.devices < 0 {
		flag.Usage()
		os.Exit(2)
	}
	if _, err := os.Stat(cfg.hostPath); err != nil {
		fmt.Fprintf(os.Stderr, "kvmplugin: --host-path: %v\n", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		log.Printf("kvmplugin: %v", err)
		os.Exit(1)
	}
	log.Print("kvmplugin: stopped")
}
