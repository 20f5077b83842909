package host_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exporterset/exporterset/provisioner/plugin/host"
)

const helperEnv = "HOST_TEST_HELPER_PLUGIN"

// TestHelperControllerProcess plays a controller in a child process of
// TestPluginsDieWithAKilledController: it starts the plugin named by helperEnv and waits to be
// killed.
func TestHelperControllerProcess(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("run by TestPluginsDieWithAKilledController")
	}
	p, err := host.Load(context.Background(), path, host.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("ready %d\n", p.PID())
	time.Sleep(time.Minute)
}

// TestPluginsDieWithAKilledController: a controller killed outright (SIGKILL, OOM) has no
// chance to clean up; its plugins must still not outlive it.
func TestPluginsDieWithAKilledController(t *testing.T) {
	dir := pluginDir(t)
	path := install(t, dir, testPlugin, "ok")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperControllerProcess$")
	// TMPDIR: the killed controller cannot remove its plugin's socket directory; the test does.
	cmd.Env = append(os.Environ(), helperEnv+"="+path, "TMPDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	ready := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var pid int
			if _, err := fmt.Sscanf(strings.TrimSpace(sc.Text()), "ready %d", &pid); err == nil {
				ready <- pid
				return
			}
		}
	}()
	var pluginPID int
	select {
	case pluginPID = <-ready:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the controller process did not start its plugin within 10s")
	}
	if !alive(pluginPID) {
		t.Fatalf("plugin %d is not running", pluginPID)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the plugin to die with its controller", func() bool { return !alive(pluginPID) })
}
